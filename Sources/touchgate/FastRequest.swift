#if canImport(Glibc)
import Glibc
#endif
import TouchgateAPI

/// A command line this front serves itself when touchgated is there: `status`, `secret
/// list`, `verify` and `secret get`, with only the options it knows how to pass on exactly
/// as touchgate-client would. Anything else (help, other options, a named finger,
/// `--passphrase-fd`, a helper's name) is left to touchgate-client, which parses and
/// validates every command.
struct FastRequest: Equatable {
    enum Operation: String, Equatable {
        case status, secretList = "secret.list", verify, secretGet = "secret.get"
    }

    var operation: Operation
    /// `--json`.
    var json = false
    /// `--device`.
    var device: String?
    /// verify's `--user`.
    var user: String?
    /// secret get's NAME.
    var item: String?

    /// The request in `arguments` (argv, program name first), or nil to leave it to touchgate-cli.
    init?(arguments: [String]) {
        guard let program = arguments.first, Invocation.helperPrefix(programName: Invocation.programName(program)) == nil
        else { return nil }
        var words = arguments.dropFirst()
        switch (words.popFirst(), words.first) {
        case ("status"?, _):
            operation = .status
        case ("verify"?, _):
            operation = .verify
        case ("secret"?, "get"?):
            words = words.dropFirst()
            operation = .secretGet
        case ("secret"?, "list"?):
            words = words.dropFirst()
            operation = .secretList
        default:
            return nil
        }
        var seen: Set<String> = []
        while let word = words.popFirst() {
            if word == "--json" {
                guard seen.insert(word).inserted else { return nil }
                json = true
                continue
            }
            if word.hasPrefix("--"), word.count > 2 {
                // --name VALUE or --name=VALUE; a value that looks like an option is left to the parser.
                let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard seen.insert(name).inserted else { return nil }
                let value: String
                if parts.count == 2 {
                    value = String(parts[1])
                } else {
                    guard let next = words.popFirst(), !next.hasPrefix("-") else { return nil }
                    value = next
                }
                switch (name, operation) {
                case ("--device", .verify), ("--device", .secretGet): device = value
                case ("--user", .verify): user = value
                case ("--finger", .verify) where value == "any": break
                default: return nil
                }
                continue
            }
            // A positional: secret get's NAME, once. Short options and `--` go to the parser.
            guard operation == .secretGet, item == nil, !word.hasPrefix("-"), !word.isEmpty else { return nil }
            item = word
        }
        if operation == .secretGet && item == nil { return nil }
    }

    /// The protocol's request message (docs/PROTOCOL.md), as
    /// touchgate-client sends it (FastClientTests compares what each prints and sends).
    var message: [UInt8] {
        var fields: [(String, [UInt8])] = []
        if let device { fields.append(("device", JSONText.quoted(device))) }
        switch operation {
        case .verify:
            if let user { fields.append(("user", JSONText.quoted(user))) }
        case .secretGet:
            if let item { fields.append(("item", JSONText.quoted(item))) }
            // A terminal can be asked again after a wrong passphrase (--passphrase-fd is left to touchgate-client).
            fields.append(("can-ask-again", Array("true".utf8)))
        case .status, .secretList:
            break
        }
        return JSONText.object([
            ("version", Array(String(DaemonProtocol.version).utf8)), ("kind", JSONText.quoted("request")), ("id", Array("1".utf8)),
            ("operation", JSONText.quoted(operation.rawValue)), ("arguments", JSONText.object(fields)),
        ]) + [0x0A]
    }
}
