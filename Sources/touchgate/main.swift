// `touchgate`: the command people run. A small front, without Foundation or libfprint and
// linked statically, so that the requests made on every touch start in about a
// millisecond: `verify` and `secret get` are sent to touchgated by this process itself when
// the daemon's socket is there (the same request, output and exit status as touchgate-cli
// gives); everything else is exec'd with the same arguments: `touchgate-client` through the
// daemon, `touchgate-cli` in the personal mode. See docs/PROTOCOL.md, "Clients".
#if canImport(Glibc)
import Glibc
#endif
import TouchgateBasics

let arguments = CommandLine.arguments
if arguments.count == 2, arguments[1] == "--version" {
    // Answered here in either mode: nothing to ask the daemon, nothing worth an exec.
    FileOutput.write(Release.version + "\n", to: 1)
    exit(0)
}
let socketPath = Invocation.daemonSocket()
if let request = FastRequest(arguments: arguments), let socketPath {
    // As touchgate-cli does before anything else: no core dump or ptrace of this process,
    // and a crash wipes the secret memory and prints one line.
    do {
        try ProcessProtection.apply()
    } catch {
        FileOutput.write(TerminalText.failure(error.message) + "\n", to: 2)
        exit(ExitStatus.readerError)
    }
    if let status = FastConversation.run(request, socketPath: socketPath) {
        exit(status)
    }
}
// Through touchgated, the client that links neither the service nor the vault; the
// personal mode needs them in this process.
(socketPath == nil ? SiblingProgram.fullCLI : SiblingProgram.client).exec(arguments)
