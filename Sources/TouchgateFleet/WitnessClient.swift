import FoundationEssentials
import Glibc
import TouchgateAPI
import TouchgateBasics
import TouchgateShipping

/// The client side of C2SP's tlog-witness protocol (c2sp.org/tlog-witness): the log asks a
/// witness, any program that speaks it, to cosign a checkpoint with `POST
/// <prefix>/add-checkpoint`, sending the size the witness cosigned last and a consistency
/// proof from it.
///
/// The HTTP is hand-written, plain HTTP/1.1 over a TCP socket: it is one POST of public,
/// signed data whose answer is checked by its signature, and an HTTP client library
/// (SwiftNIO's) would add minutes to every clean build and megabytes to the collector's
/// package for it. A witness reached over TLS is reached through a local TLS proxy.
struct WitnessClient {
    /// `http://host[:port][/prefix]`: the witness's submission prefix.
    let url: String
    let verifier: NoteVerifier
    /// How long the whole exchange may take: connecting, sending and reading the answer (a
    /// witness that answers a byte at a time does not hold the collector past it).
    var timeout: Int = 30

    enum Answer {
        /// Its cosignature line of the checkpoint.
        case cosigned(String)
        /// 409: the size it cosigned last is another.
        case conflict(Int64)
    }

    /// Sends `note` (a checkpoint of `checkpoint`) with the consistency proof from `old`.
    /// - Throws: ``ServiceError`` `collector-unavailable` when the witness cannot be reached
    ///   or answers nonsense; `audit-broken` when it refuses the checkpoint (403, 404, 422:
    ///   it was given a log it does not trust, or one that does not extend what it saw).
    func addCheckpoint(_ note: String, checkpoint: Checkpoint, old: Int64, proof: [[UInt8]]) throws(ServiceError) -> Answer {
        let body = "old \(old)\n" + proof.map { Data($0).base64EncodedString() + "\n" }.joined() + "\n" + note
        let (status, headers, text) = try post(path: "/add-checkpoint", body: Array(body.utf8))
        switch status {
        case 200:
            // Its line among those answered: the one its key made over this checkpoint.
            guard let signatures = SignedNote.parse(checkpoint.body + "\n" + text)?.signatures,
                  let line = signatures.first(where: { verifier.cosignatureTime($0, body: checkpoint.body) != nil })
            else {
                throw ServiceError(.collectorUnavailable, "witness \(verifier.name) at \(url) answered 200 without a "
                                   + "valid cosignature by its key: check the key you gave for it")
            }
            return .cosigned(SignedNote.line(name: line.name, keyID: line.keyID, payload: line.payload))
        case 409:
            guard headers["content-type"] == "text/x.tlog.size", let size = Int64(text.trimmingWhitespace()),
                  MerkleTree.isValid(size: size) else {
                throw ServiceError(.collectorUnavailable, "witness \(verifier.name) at \(url) answered 409 without a size")
            }
            return .conflict(size)
        case 403, 404, 422, 400:
            let why = [403: "it trusts no key that signed this checkpoint (give it the log's key)",
                       404: "it does not know this log's origin \(checkpoint.origin) (add the log to it)",
                       422: "the log does not extend the one it cosigned before: entries were changed or removed, or the "
                           + "log forked",
                       400: "it found the request malformed"][status]!
            throw ServiceError(.auditBroken, "witness \(verifier.name) at \(url) refused to cosign \(checkpoint.size) "
                               + "entries (HTTP \(status)): \(why)")
        default:
            throw ServiceError(.collectorUnavailable, "witness \(verifier.name) at \(url) answered HTTP \(status): "
                               + StoredText.escaped(String(text.prefix(200))))
        }
    }

    /// One POST; the status, the headers (names in lowercase) and the body as text.
    private func post(path: String, body: [UInt8]) throws(ServiceError) -> (Int, [String: String], String) {
        func unreachable(_ why: String) -> ServiceError {
            ServiceError(.collectorUnavailable, "cannot reach witness \(verifier.name) at \(url): \(why)")
        }
        guard url.hasPrefix("http://") else { throw unreachable("only http:// URLs are spoken (use a local TLS proxy for https)") }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        var prefix = String(rest.dropFirst(authority.count))
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let colon = authority.lastIndex(of: ":").flatMap { authority[$0...].contains("]") ? nil : $0 }
        var host = String(colon.map { authority[..<$0] } ?? authority[...])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = colon.map { String(authority[authority.index(after: $0)...]) } ?? "80"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let looked = getaddrinfo(host, port, &hints, &found)
        guard looked == 0, let address = found else { throw unreachable(String(cString: gai_strerror(looked))) }
        defer { freeaddrinfo(found) }
        let socket = Glibc.socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
        guard socket >= 0 else { throw unreachable(String(cString: strerror(errno))) }
        defer { Glibc.close(socket) }
        // Each blocking call may take what is left of the exchange's time, and no more.
        let deadline = ContinuousClock.now + .seconds(timeout)
        func limitToDeadline() throws(ServiceError) {
            let left = ContinuousClock.now.duration(to: deadline).components
            guard left.seconds > 0 || (left.seconds == 0 && left.attoseconds > 0) else {
                throw unreachable("no whole answer within \(timeout) s")
            }
            var limit = timeval(tv_sec: Int(left.seconds), tv_usec: Int(left.attoseconds / 1_000_000_000_000) + 1)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        // A socket timeout is the deadline itself, reached inside the call (SO_RCVTIMEO ends
        // `recv` with EAGAIN at the limit it was given, a moment before the clock says so).
        func failed(_ error: Int32, _ what: String = "") -> ServiceError {
            error == EAGAIN || error == EWOULDBLOCK || error == EINPROGRESS
                ? unreachable("no whole answer within \(timeout) s")
                : unreachable(what + String(cString: strerror(error)))
        }
        try limitToDeadline()
        guard connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
            throw failed(errno)
        }
        let request = Array(("POST \(prefix)\(path) HTTP/1.1\r\nHost: \(authority)\r\nContent-Type: text/plain\r\n"
                             + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n").utf8) + body
        var sent = 0
        while sent < request.count {
            try limitToDeadline()
            let wrote = request[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard wrote > 0 else { throw failed(errno) }
            sent += wrote
        }
        // The answer, read to the end (the request asked the witness to close): at most 1 MiB.
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while answer.count < 1 << 20 {
            try limitToDeadline()
            let read = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if read == 0 { break }
            guard read > 0 else { throw failed(errno, "no answer: ") }
            answer += buffer[..<read]
        }
        guard let split = answer.firstRange(of: Array("\r\n\r\n".utf8)) else { throw unreachable("the answer is not HTTP") }
        let head = String(decoding: answer[..<split.lowerBound], as: UTF8.self).split(separator: "\r\n")
        let statusLine = head.first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw unreachable("the answer is not HTTP")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingSpaces()
        }
        var content = Array(answer[split.upperBound...])
        if let length = headers["content-length"].flatMap(Int.init), length <= content.count {
            content = Array(content.prefix(length))
        }
        return (status, headers, String(decoding: content, as: UTF8.self))
    }
}
