// Fuzz target: TouchgateFIDO, what the passkey authenticator reads from any program that
// opens its device. The first input byte picks the part, the rest is its input:
// - CBOR: a value is read only within its limits; read back from its canonical encoding it
//   is the same value, and that encoding is a fixed point (canonical twice is canonical);
// - CTAP 2.1 requests: makeCredential, getAssertion, clientPIN and credential management
//   read from any CBOR either fail with a status or hold fields of their documented sizes;
// - CTAPHID: any sequence of 64-byte reports gives whole messages no longer than the
//   largest, on channels INIT gave out (or broadcast INIT), and a message cut into reports
//   and fed back is that message.
@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzCTAP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let part = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    switch part % 3 {
    case 0: checkCBOR(input)
    case 1: checkRequests(input)
    default: checkFraming(input)
    }
    return 0
}

private func checkCBOR(_ input: [UInt8]) {
    guard let value = try? CBOR.decode(input) else { return }
    let canonical = value.encoded
    guard let again = try? CBOR.decode(canonical) else { fatalError("its own encoding does not read back") }
    guard again == value || hasMapsOutOfOrder(value) else { fatalError("read back as another value") }
    guard again.encoded == canonical else { fatalError("canonical encoding is not a fixed point") }
}

/// Maps compare in the order read; a canonical re-encoding sorts them.
private func hasMapsOutOfOrder(_ value: CBOR) -> Bool {
    switch value {
    case .map: true
    case .array(let values): values.contains(where: hasMapsOutOfOrder)
    default: false
    }
}

private func checkRequests(_ input: [UInt8]) {
    guard let value = try? CBOR.decode(input) else { return }
    if let request = try? MakeCredentialRequest(value) {
        guard request.clientDataHash.count == 32, request.rpId.utf8.count <= CTAP2.maximumRelyingPartyIdLength,
              request.user.id.count <= CTAP2.maximumUserIdLength,
              (request.rpName?.utf8.count ?? 0) <= CTAP2.maximumNameLength,
              (request.user.name?.utf8.count ?? 0) <= CTAP2.maximumNameLength,
              request.excludeList.count <= CTAP2.maximumCredentialsInList,
              request.excludeList.allSatisfy({ $0.id.count <= CTAP2.maximumCredentialIdLength }) else {
            fatalError("makeCredential accepted out-of-bounds fields")
        }
    }
    if let request = try? GetAssertionRequest(value) {
        guard request.clientDataHash.count == 32, request.allowList.count <= CTAP2.maximumCredentialsInList else {
            fatalError("getAssertion accepted out-of-bounds fields")
        }
    }
    if let request = try? ClientPINRequest(value), let key = request.platformKey {
        guard key.x.count == 32, key.y.count == 32 else { fatalError("a key agreement key of another size") }
    }
    if let request = try? CredentialManagementRequest(value) {
        if let hash = request.rpIdHash, hash.count != 32 { fatalError("an rpIdHash of another size") }
    }
}

private func checkFraming(_ input: [UInt8]) {
    var framer = CTAPHIDFramer(channelLimit: 4) { 0x0102_0304 }
    var allocated: Set<UInt32> = []
    var offset = 0, now: UInt64 = 0
    while offset + 64 <= input.count {
        let report = Array(input[offset..<offset + 64])
        offset += 64
        now += 10
        switch framer.receive(report, at: now) {
        case .message(let message):
            guard message.payload.count <= CTAPHID.maximumPayload else { fatalError("a message past the largest") }
            if message.channel == CTAPHID.broadcast {
                guard message.command == CTAPHID.Command.initialize.rawValue else { fatalError("broadcast non-INIT") }
                if allocated.isEmpty || !framer.isAllocated(0x0102_0304) { allocated.insert(framer.allocate(at: now)) }
            } else {
                guard framer.isAllocated(message.channel) else { fatalError("a message on a channel never given out") }
            }
        case .failure, .pending:
            break
        }
    }
    // A message cut into reports reads back whole.
    let payload = Array(input.prefix(CTAPHID.maximumPayload))
    var fresh = CTAPHIDFramer { 0x0A0B_0C0D }
    let channel = fresh.allocate(at: 0)
    var result: CTAPHIDMessage?
    for report in CTAPHIDFramer.packets(channel: channel, command: CTAPHID.Command.cbor.rawValue, payload: payload) {
        if case .message(let message) = fresh.receive(report, at: 1) { result = message }
    }
    guard result == CTAPHIDMessage(channel: channel, command: CTAPHID.Command.cbor.rawValue, payload: payload) else {
        fatalError("a message cut into reports did not read back")
    }
}
