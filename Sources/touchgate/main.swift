// `touchgate`: the command people run. A small front, linked statically without the full
// Foundation or libfprint, so that what people run most starts in a few milliseconds:
// `status`, `secret list`, `verify` and `secret get` are served through touchgated by this
// process itself when the daemon's socket is there, by a conversation of its own
// (`FastConversation`) that prints what touchgate-client prints. Everything else is
// exec'd with the same arguments: `touchgate-client` through the daemon, `touchgate-cli`
// in the personal mode. See docs/PROTOCOL.md, "Clients", and docs/ARCHITECTURE.md.
#if canImport(Glibc)
import Glibc
#endif
import TouchgateAPI
import TouchgateTerminal

let arguments = CommandLine.arguments
if arguments.count == 2, arguments[1] == "--version" {
    // Answered here in either mode: nothing to ask the daemon, nothing worth an exec.
    FileOutput.write(Release.version + "\n", to: 1)
    exit(0)
}
let socketPath = Invocation.serviceSocket()
if let request = FastRequest(arguments: arguments), let socketPath {
    // As touchgate-client does before anything else: no core dump or ptrace of this process,
    // and a crash wipes the secret memory and prints one line.
    do {
        try ProcessProtection.apply()
    } catch {
        FileOutput.write(TerminalText.failure(error.message) + "\n", to: 2)
        exit(ExitStatus.readerError)
    }
    // Everything this process creates is private to its owner.
    umask(0o077)
    // Its own conversation, the wire read by a JSON scanner of its own: measured, the Codable
    // client's first use of the message types and Swift's task pool (the runtime's
    // conformance and metadata lookups over a static binary, the pool's threads) added
    // 2.4 ms to every touch, 1.23x the C client's verify, and took `status` to 6.9 ms
    // (BENCHMARKS section 7). The reports `status` and `secret list` print are still decoded
    // by their Codable types; the scanner is fuzzed against Foundation (`make fuzz`,
    // front-json) and what this prints is compared with touchgate-client's (FastClientTests).
    // When it declines (no daemon to reach, another protocol version), touchgate-client
    // below takes over and says why.
    if let status = FastConversation.run(request, socketPath: socketPath) { exit(status) }
}
// Through touchgated, the client that links neither the service nor the vault; the
// personal mode needs them in this process.
(socketPath == nil ? SiblingProgram.fullCLI : SiblingProgram.client).exec(arguments)
