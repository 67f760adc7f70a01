// `touchgate`: the command people run. A small front, linked statically without the full
// Foundation or libfprint, so that what people run most starts in a few milliseconds:
// `status`, `secret list`, `verify` and `secret get` are served through touchgated by this
// process itself when the daemon's socket is there. `status` and `secret list` by the same
// client and the same code that print them in touchgate-client (`DaemonClient`,
// `Printed`); the per-touch `verify` and `secret get` by a conversation of its own
// (`FastConversation`), for speed. Everything else is exec'd with the same arguments:
// `touchgate-client` through the daemon, `touchgate-cli` in the personal mode. See
// docs/PROTOCOL.md, "Clients", and docs/ARCHITECTURE.md.
#if canImport(Glibc)
import Glibc
#endif
import TouchgateAPI
import TouchgateClient
import TouchgateTerminal

let arguments = CommandLine.arguments
if arguments.count == 2, arguments[1] == "--version" {
    // Answered here in either mode: nothing to ask the daemon, nothing worth an exec.
    FileOutput.write(Release.version + "\n", to: 1)
    exit(0)
}
let socketPath = Invocation.daemonSocket()
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
    // The per-touch requests with a JSON reader and writer of its own: measured, the
    // Codable client's first use of its types (the runtime's conformance and metadata
    // lookups over a static binary) added 2.4 ms to every touch, 1.23× the C client's
    // verify (BENCHMARKS section 7). The hand-written codec is fuzzed against Foundation
    // (`make fuzz`, front-json) and its output compared with touchgate-client's.
    // When it declines (no daemon to reach, another protocol version), touchgate-client
    // below takes over and says why.
    if request.operation.perTouch {
        if let status = FastConversation.run(request, socketPath: socketPath) { exit(status) }
    } else {
        // Not an async main: that ends the main thread with pthread_exit, and unwinding it in
        // a static executable first sorts every frame description of the program (measured:
        // 30 of the 33 ms a `status` took). The request runs on Swift's pool; this thread waits.
        Task.detached {
            exit(await serve(request, through: DaemonClient(socketPath: socketPath)))
        }
        while true { pause() }
    }
}
// Through touchgated, the client that links neither the service nor the vault; the
// personal mode needs them in this process.
(socketPath == nil ? SiblingProgram.fullCLI : SiblingProgram.client).exec(arguments)

/// Runs `status` or `secret list` through touchgated and returns its exit status, printing
/// what touchgate-client prints for it.
func serve(_ request: FastRequest, through service: DaemonClient) async -> Int32 {
    await TerminalRun.run(json: request.json) { console in
        switch request.operation {
        case .status:
            try await Printed.status(service, console: console)
        case .items:
            try await Printed.items(service, console: console)
        case .verify, .release:
            preconditionFailure("\(request.operation) is FastConversation's")
        }
    }
}
