// Fuzz target: the security-key provider's reader of agent answers (sk/sk_wire.c), C code
// that runs inside ssh-sk-helper. The input is a reply body as the agent (or an impostor
// on its socket) could send it, and a length prefix:
// - an enrollment is taken only as success, a 32-byte key, a handle of 1 to 1024 bytes
//   and a flags byte, with nothing after, its pointers inside the body;
// - a signature only as success, flags, a counter and a 64-byte signature, nothing after;
// - a refusal only as a bare failure byte (5 or 28); everything else is malformed;
// - a frame length is taken only between 1 and the limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzSKReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkPrefix(bytes)
    bytes.withUnsafeBufferPointer { body in
        checkEnrolled(bytes, body)
        checkSigned(bytes, body)
    }
    return 0
}

private func u32(_ bytes: ArraySlice<UInt8>) -> Int {
    bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
}

private func checkPrefix(_ bytes: [UInt8]) {
    guard bytes.count >= 4 else { return }
    let announced = bytes.withUnsafeBufferPointer { tg_sk_frame_length($0.baseAddress!) }
    let expected = u32(bytes[...])
    if expected == 0 || expected > Int(TG_SK_MESSAGE_LIMIT) {
        guard announced == -1 else { fatalError("length \(expected) taken") }
    } else {
        guard announced == expected else { fatalError("length \(expected) read as \(announced)") }
    }
}

private func refusal(_ bytes: [UInt8]) -> Bool {
    bytes == [5] || bytes == [28]
}

private func inside(_ pointer: UnsafePointer<UInt8>?, _ count: Int, _ body: UnsafeBufferPointer<UInt8>) -> Int? {
    guard let pointer, let base = body.baseAddress else { return nil }
    let offset = pointer - base
    return offset >= 0 && offset + count <= body.count ? offset : nil
}

private func checkEnrolled(_ bytes: [UInt8], _ body: UnsafeBufferPointer<UInt8>) {
    var enrolled = tg_sk_enrolled()
    let reply = tg_sk_read_enrolled(body.baseAddress, body.count, &enrolled)
    switch reply {
    case TG_SK_REPLY_OK:
        // success, string key (4 + 32), string handle (4 + n), flags
        guard bytes.first == 6, u32(bytes[1...]) == 32, let key = inside(enrolled.public_key, 32, body), key == 5,
              let handle = inside(enrolled.key_handle, enrolled.key_handle_len, body), handle == 41,
              u32(bytes[37...]) == enrolled.key_handle_len, (1...1024).contains(enrolled.key_handle_len),
              bytes.count == 42 + enrolled.key_handle_len, enrolled.flags == bytes.last
        else { fatalError("an enrollment taken from \(bytes.count) bytes it does not describe") }
    case TG_SK_REPLY_REFUSED:
        guard refusal(bytes) else { fatalError("a refusal read from \(bytes.prefix(8))") }
    default:
        guard !refusal(bytes) else { fatalError("a refusal read as malformed") }
    }
}

private func checkSigned(_ bytes: [UInt8], _ body: UnsafeBufferPointer<UInt8>) {
    var signed = tg_sk_signed()
    let reply = tg_sk_read_signed(body.baseAddress, body.count, &signed)
    switch reply {
    case TG_SK_REPLY_OK:
        // success, flags, counter, string signature (4 + 64)
        guard bytes.count == 74, bytes[0] == 6, signed.flags == bytes[1], Int(signed.counter) == u32(bytes[2...]),
              u32(bytes[6...]) == 64, inside(signed.signature, 64, body) == 10
        else { fatalError("a signature taken from \(bytes.count) bytes it does not describe") }
    case TG_SK_REPLY_REFUSED:
        guard refusal(bytes) else { fatalError("a refusal read from \(bytes.prefix(8))") }
    default:
        guard !refusal(bytes) else { fatalError("a refusal read as malformed") }
    }
}
