#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal

/// One request of a ``FastRequest`` to touchgated, its conversation and what it prints:
/// what touchgate-client's DaemonClient and Console do for `status`, `secret list`,
/// `verify` and `secret get`, line for line and with the same exit statuses
/// (FastClientTests compares the two).
final class FastConversation {
    private let request: FastRequest
    private let connection: Connection
    /// A passphrase, once asked, is reused for a second question (an `and` policy) as
    /// touchgate-cli's PassphraseInput does; a new one is asked only after a wrong one.
    private var passphrase: SecretBuffer?

    private init(_ request: FastRequest, _ connection: Connection) {
        self.request = request
        self.connection = connection
    }

    /// Sends `request` and returns the exit status once the result is printed; nil, with
    /// nothing sent or printed, when touchgate-cli should serve it instead (no daemon to
    /// reach there, or one that does not greet this protocol version: touchgate-cli says why).
    static func run(_ request: FastRequest, socketPath: String) -> Int32? {
        guard let connection = Connection(path: socketPath), let hello = try? connection.line(),
              let greeting = JSONObject(line: hello), greeting.string("kind") == "hello",
              greeting.integers("versions")?.contains(DaemonProtocol.version) == true,
              // touchgate agent for another store (a record left by a killed one misled the
              // choice): touchgate-cli meets it and says so.
              greeting.string(Invocation.storeField).map({ $0 == Invocation.thisStoreIdentity() }) ?? true
        else { return nil }
        let conversation = FastConversation(request, connection)
        guard connection.watchInterrupts() else { return nil }
        let status = conversation.converse()
        conversation.passphrase?.wipe()
        return status
    }

    private func converse() -> Int32 {
        guard connection.send(request.message) else { return failure(.daemonClosedEarly) }
        while true {
            let line: [UInt8]
            do {
                line = try connection.line()
            } catch {
                return failure(error)
            }
            guard let message = JSONObject(line: line), let kind = message.string("kind") else {
                return broken(.malformed("not JSON"))
            }
            switch kind {
            case "event":
                if let event = message.object("event"), let raw = message.raw("event") { show(event, raw: raw) }
            case "ask":
                guard let question = message.object("question") else { return broken(.malformed("an ask without a question")) }
                guard answer(question) else { return failure(connection.interrupted ? .cancelled : .daemonClosedEarly) }
            case "result":
                return result(message)
            case "failure":
                guard let error = message.object("error") else { return failure(.daemonFailedUnsaid) }
                return failure(error)
            case "output":
                continue
            default:
                return broken(.malformed(kind == "hello" ? "a second hello" : "bad value at kind"))
            }
        }
    }

    // MARK: What is printed

    /// An event: its line on standard error, or with `--json` the daemon's event object as it came.
    private func show(_ event: JSONObject, raw: ArraySlice<UInt8>) {
        if request.json {
            FileOutput.write(Array(raw) + [0x0A], to: 2)
        } else if let message = event.string("message") {
            let kind = event.string("event").flatMap(InteractionEvent.Kind.init(rawValue:)) ?? .notice
            if let line = TerminalText.line(for: kind, message: message) { FileOutput.write(line + "\n", to: 2) }
        }
    }

    /// The result: a match or not (verify), the released value (secret get).
    private func result(_ message: JSONObject) -> Int32 {
        switch request.operation {
        case .verify:
            guard let report = message.object("result"), let match = report.boolean("match") else {
                return broken(.malformed("missing result.match"))
            }
            if request.json {
                let members = report.members.map { ($0.key, Array(report.text[$0.value])) }
                    + [("result", JSONText.quoted(match ? "match" : "no-match"))]
                FileOutput.write(JSONText.object(members) + [0x0A], to: 1)
            } else if match {
                FileOutput.write(TerminalText.verified(user: report.string("user"), finger: report.string("finger")) + "\n", to: 1)
            } else {
                FileOutput.write(TerminalText.noMatch(attemptsLeft: report.integer("attempts-left")) + "\n", to: 1)
            }
            return match ? ExitStatus.success : ExitStatus.noMatch
        case .secretGet:
            guard let length = message.integer("secret-length") else { return failure(.daemonReleasedNoValue) }
            guard (0...DaemonProtocol.maximumSecretBytes).contains(length) else { return broken(.secretTooLong) }
            let value = SecretBuffer(capacity: max(length, 1))
            defer { value.wipe() }
            do {
                try connection.secret(count: length, into: value)
            } catch {
                return failure(error)
            }
            return release(value)
        case .status, .secretList:
            guard let raw = message.raw("result") else { return broken(.malformed("missing result")) }
            return report(raw)
        }
    }

    /// `status` and `secret list`: the report decoded by the API's own Codable types (a
    /// daemon's malformed report is refused, as touchgate-client refuses it) and printed by
    /// the code that prints it there.
    private func report(_ raw: ArraySlice<UInt8>) -> Int32 {
        let console = Console(json: request.json)
        do {
            return request.operation == .status
                ? Printed.status(try WireCoding.decoder().decode(StatusReport.self, from: Data(raw)), console: console)
                : Printed.secretList(try WireCoding.decoder().decode([ItemReport].self, from: Data(raw)), console: console)
        } catch {
            return broken(.malformed("bad value at result"))
        }
    }

    /// Writes a released value: as is (a newline after it only on a terminal), or with
    /// `--json` as `{"encoding", "name", "result": "released", "value"}`, the value as
    /// UTF-8 text or else base64, built in locked memory.
    private func release(_ value: SecretBuffer) -> Int32 {
        guard request.json else {
            guard FileOutput.write(value.bytes, to: 1) else { return failure(ServiceError(.dataError, "cannot write to standard output")) }
            if isatty(1) == 1 { FileOutput.write("\n", to: 1) }
            return ExitStatus.success
        }
        let text = String(validating: value.bytes, as: UTF8.self) != nil
        let out = SecretBuffer(capacity: 6 * value.count + 4 * (request.item ?? "").utf8.count + 96)
        defer { out.wipe() }
        out.append(contentsOf: "{\"encoding\":\"\(text ? "utf-8" : "base64")\",\"name\":".utf8)
        out.append(contentsOf: JSONText.quoted(request.item ?? ""))
        out.append(contentsOf: ",\"result\":\"released\",\"value\":\"".utf8)
        if text {
            JSONText.escape(value.bytes) { out.append($0) }
        } else {
            Base64.encode(value.bytes) { out.append($0) }
        }
        out.append(contentsOf: "\"}\n".utf8)
        FileOutput.write(out.bytes, to: 1)
        return ExitStatus.success
    }

    /// The daemon's failure: its message (or with `--json` the error line on both
    /// outputs, made of the daemon's own values) and the code's exit status.
    private func failure(_ error: JSONObject) -> Int32 {
        guard let code = error.string("code").flatMap(ErrorCode.init(rawValue:)), let message = error.string("message") else {
            return broken(.malformed("bad value at error"))
        }
        let shown = ServiceError.fromDaemon(code: code, message: message)
        var members = [("error", JSONText.quoted(code.rawValue))]
        for key in ["message", "attempts-left", "retry-after-seconds"] {
            if key == "message", shown != message {
                members.append((key, JSONText.quoted(shown)))
            } else if let raw = error.raw(key) {
                members.append((key, Array(raw)))
            }
        }
        return report(code, shown, members)
    }

    /// A failure found here, reported as touchgate-cli reports it.
    private func failure(_ error: ServiceError) -> Int32 {
        report(error.code, error.message, [("error", JSONText.quoted(error.code.rawValue)), ("message", JSONText.quoted(error.message))])
    }

    /// Why reading from the daemon stopped, reported as touchgate-cli reports it.
    private func failure(_ ended: Connection.Ended) -> Int32 {
        switch ended {
        case .interrupted: failure(.cancelled)
        case .closed: failure(.daemonClosedEarly)
        case .framing(let error): broken(error)
        }
    }

    private func report(_ code: ErrorCode, _ message: String, _ members: [(String, [UInt8])]) -> Int32 {
        if request.json {
            FileOutput.write(JSONText.object(members + [("event", JSONText.quoted("error"))]) + [0x0A], to: 2)
            FileOutput.write(JSONText.object(members + [("result", JSONText.quoted("error"))]) + [0x0A], to: 1)
        } else {
            FileOutput.write(TerminalText.failure(message) + "\n", to: 2)
        }
        return code.exitStatus
    }

    private func broken(_ error: FrameError) -> Int32 {
        failure(.daemonConversationFailed(error.description))
    }

    // MARK: Questions

    /// Answers the daemon's question: a passphrase from the terminal; any other question
    /// cannot arise for these requests and is refused as touchgate-cli refuses an unknown
    /// one. False when the daemon could not be told.
    private func answer(_ question: JSONObject) -> Bool {
        let kind = question.string("kind") ?? ""
        var fields: [(String, [UInt8])] = [("version", Array(String(DaemonProtocol.version).utf8)),
                                           ("kind", JSONText.quoted("answer")), ("id", Array("1".utf8))]
        guard kind == "passphrase" else {
            fields.append(("error", errorObject(.unknownQuestion(kind))))
            return connection.send(JSONText.object(fields) + [0x0A])
        }
        do {
            let secret = try passphrase(prompt: question.string("prompt") ?? "Passphrase: ", again: question.boolean("again") ?? false)
            fields.append(("secret-length", Array(String(secret.count).utf8)))
            return connection.send(JSONText.object(fields) + [0x0A]) && connection.send(secret.bytes)
        } catch let error as PassphraseInputError {
            fields.append(("error", errorObject(error.serviceError)))
        } catch {
            fields.append(("declined", Array("true".utf8)))
        }
        return connection.send(JSONText.object(fields) + [0x0A])
    }

    private func errorObject(_ error: ServiceError) -> [UInt8] {
        JSONText.object([("code", JSONText.quoted(error.code.rawValue)), ("message", JSONText.quoted(error.message))])
    }

    /// The passphrase: the one given before unless `again`; else asked on the terminal.
    private func passphrase(prompt: String, again: Bool) throws -> SecretBuffer {
        if let passphrase, !again { return passphrase }
        passphrase?.wipe()
        let fresh = SecretBuffer(capacity: PassphraseReading.maximumLength)
        fresh.count = try PassphraseReading.withQuietTerminal(prompt: prompt) { fd in
            try PassphraseReading.readLine(from: fd, into: fresh.storage,
                                           interactive: true) {
                if connection.interrupted { throw Connection.Ended.interrupted }
            }
        }
        guard fresh.count > 0 else { throw PassphraseInputError.empty }
        passphrase = fresh
        return fresh
    }
}

/// Base64 with padding (RFC 4648), as Foundation's `base64EncodedString()` writes it.
enum Base64 {
    static func encode(_ bytes: UnsafeRawBufferPointer, _ emit: (UInt8) -> Void) {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let a = UInt32(bytes[index]), b = count > 1 ? UInt32(bytes[index + 1]) : 0, c = count > 2 ? UInt32(bytes[index + 2]) : 0
            let group = a << 16 | b << 8 | c
            emit(alphabet[Int(group >> 18 & 63)])
            emit(alphabet[Int(group >> 12 & 63)])
            emit(count > 1 ? alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
            emit(count > 2 ? alphabet[Int(group & 63)] : UInt8(ascii: "="))
            index += 3
        }
    }
}
