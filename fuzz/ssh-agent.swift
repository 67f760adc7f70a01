// Fuzz target: the SSH agent protocol (TouchgateSSH), built by `make fuzz` with the module's
// sources and TouchgateBasics. Any bytes are read four ways, none of which may crash:
// - as a stream of frames: the scanner's answer must agree with the length prefix (a body
//   only when it has all arrived, a refusal only over the limit), and each body found is
//   decoded as a request;
// - as one message body: a request, and an answer; whatever decodes must decode again,
//   unchanged, from what its encoder writes, and (but for the two cases the encoder writes
//   differently on purpose) be written back byte for byte. Decoding from an array and
//   from raw memory, as a door holding secret memory does, must agree;
// - as data to sign: a login or ssh-keygen request is recognised only when its encoder
//   gives back exactly these bytes; anything else is "other" with the right count;
// - as session-bind contents and as a public key blob: each must round-trip.
// Every error must describe itself on one line of bounded length.
import FoundationEssentials
import TouchgateBasics

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzSSHAgent(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    let bytes = Array(raw)
    scanFrames(bytes)
    decodeRequest(bytes, raw: raw)
    decodeResponse(bytes)
    classify(bytes)
    decodeOthers(bytes)
    readFields(bytes)
    return 0
}

private func check(_ error: SSHWireError) {
    let text = error.description
    guard !text.isEmpty, text.count < 300, !text.contains("\n") else { fatalError("error described as \(text.debugDescription)") }
}

private func declaredLength(_ bytes: ArraySlice<UInt8>) -> Int {
    bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
}

private func scanFrames(_ bytes: [UInt8]) {
    var start = 0
    while true {
        let rest = bytes[start...]
        let scan: AgentFrame.Scan
        do {
            scan = try AgentFrame.scan(rest)
        } catch {
            check(error)
            guard rest.count >= 4, case .frameTooLarge(let declared) = error, Int(declared) == declaredLength(rest),
                  Int(declared) > AgentFrame.maximumLength else { fatalError("scan refused \(rest.prefix(4)): \(error)") }
            return
        }
        switch scan {
        case .incomplete(let needed):
            let expected = rest.count < 4 ? 4 - rest.count : 4 + declaredLength(rest) - rest.count
            guard needed == expected, needed > 0 else { fatalError("\(needed) more bytes needed, expected \(expected)") }
            return
        case .complete(let body):
            guard body.lowerBound == start + 4, body.count == declaredLength(rest), body.upperBound <= bytes.endIndex,
                  body.count <= AgentFrame.maximumLength else { fatalError("frame body \(body) at \(start)") }
            guard AgentFrame.frame(bytes[body]) == Array(bytes[start..<body.upperBound]) else { fatalError("framing differs") }
            if let request = try? AgentRequest(body: bytes[body]) { _ = request.description }
            start = body.upperBound
        }
    }
}

private func decodeRequest(_ bytes: [UInt8], raw: UnsafeRawBufferPointer) {
    let request: AgentRequest
    do {
        request = try AgentRequest(body: bytes)
    } catch {
        check(error)
        do {
            _ = try AgentRequest(body: raw)
            fatalError("raw memory decoded what an array did not (\(error))")
        } catch let rawError {
            guard rawError == error else { fatalError("array: \(error), raw memory: \(rawError)") }
        }
        return
    }
    guard (try? AgentRequest(body: raw)) == request else { fatalError("raw memory decoded differently") }
    _ = request.description
    let body = request.body
    guard (try? AgentRequest(body: body)) == request else { fatalError("\(request) does not survive its encoder") }
    switch request {
    case .unknown(let type):
        // The body of an unknown message is never read, so only its type is written back.
        guard body == [type], bytes.first == type else { fatalError("unknown type \(type) written as \(body)") }
    case .add(let addition) where addition.constraints.isEmpty && bytes.first == 25:
        // A constrained add without constraints is written as the plain add it means.
        guard body == [17] + bytes.dropFirst() else { fatalError("constrained add without constraints written as \(body)") }
    default:
        guard body == bytes else { fatalError("\(request) written back as other bytes") }
    }
    if case .extension(SessionBind.extensionName, let contents) = request, let bind = try? SessionBind(contents: contents) {
        guard bind.contents == contents else { fatalError("session-bind does not round-trip") }
    }
    if case .extension(let name, let contents) = request, let securityKey = try? SecurityKeyRequest(extension: name, contents: contents) {
        guard securityKey.encoded.name == name, securityKey.encoded.contents == contents else {
            fatalError("\(securityKey) does not round-trip")
        }
    }
}

private func decodeResponse(_ bytes: [UInt8]) {
    do {
        let response = try AgentResponse(body: bytes)
        guard response.body == bytes, (try? AgentResponse(body: response.body)) == response else {
            fatalError("\(response) does not round-trip")
        }
    } catch {
        check(error)
    }
}

private func classify(_ bytes: [UInt8]) {
    switch SignedData.classify(bytes) {
    case .userAuthentication(let request):
        guard request.encoded == bytes, !request.sessionIdentifier.isEmpty,
              (request.hostKey != nil) == (request.method.name != "publickey") else { fatalError("login \(request) differs") }
    case .sshsig(let request):
        guard request.encoded == bytes, request.hash.count == request.hashAlgorithm.digestLength else {
            fatalError("sshsig \(request) differs")
        }
    case .other(let byteCount):
        guard byteCount == bytes.count else { fatalError("other of \(byteCount) bytes for \(bytes.count)") }
    }
}

private func decodeOthers(_ bytes: [UInt8]) {
    do {
        let bind = try SessionBind(contents: bytes)
        guard bind.contents == bytes else { fatalError("session-bind does not round-trip") }
    } catch {
        check(error)
    }
    do {
        let key = try SSHPublicKey(blob: bytes)
        guard key.blob == bytes else { fatalError("key blob does not round-trip") }
        let line = key.authorizedKeysLine(comment: String(decoding: bytes, as: UTF8.self))
        guard !line.contains("\n"), !line.contains("\r"),
              line.hasPrefix(key.typeName + " " + Data(bytes).base64EncodedString()) else {
            fatalError("authorized_keys line \(line.debugDescription)")
        }
        guard key.fingerprint(sha256: { _ in [] }) == "SHA256:" else { fatalError("fingerprint of nothing") }
        // A signature blob carries exactly the raw signature (for P-256, r and s as mpints).
        let raw = bytes.count >= 64 ? Array(bytes.prefix(64)) : [UInt8](repeating: 0, count: 64)
        let signature = key.signatureBlob(raw)
        switch key {
        case .ed25519:
            guard (try? SSHPublicKey.ed25519Signature(fromBlob: signature)) == raw else { fatalError("Ed25519 signature blob") }
        case .ecdsaP256:
            guard (try? SSHPublicKey.p256Signature(fromBlob: signature)) == raw else { fatalError("P-256 signature blob") }
        }
    } catch {
        check(error)
    }
}

/// Reads the input as fields chosen by its own bytes: each read returns what the bytes
/// say or throws, and never reads past the end.
private func readFields(_ bytes: [UInt8]) {
    var reader = SSHWireReader(bytes)
    var steps = 0
    while !reader.isAtEnd && steps < 64 {
        steps += 1
        let before = reader.remaining
        do {
            switch try reader.byte() % 5 {
            case 0: _ = try reader.uint32()
            case 1: _ = try reader.bool()
            case 2:
                let string = try reader.string()
                guard string.count <= before - 5 else { fatalError("a string longer than what was left") }
            case 3: _ = try reader.text()
            default:
                let rest = reader.rest()
                guard rest.count == before - 1, reader.isAtEnd else { fatalError("rest left bytes") }
            }
        } catch {
            check(error)
            return
        }
    }
}
