// `touchgate`: the command people run. A small front, without Foundation or libfprint and
// linked statically, so that the requests made on every touch start in about a
// millisecond: `verify` and `secret get` are sent to touchgated by this process itself when
// the daemon's socket is there (the same request, output and exit status as touchgate-cli
// gives); everything else, and the personal mode, is `touchgate-cli`, exec'd with the same
// arguments. See docs/PROTOCOL.md, "Clients".
#if canImport(Glibc)
import Glibc
#endif
import CTouchgateSys
import TouchgateBasics

let arguments = CommandLine.arguments
if let request = FastRequest(arguments: arguments), let socketPath = DaemonSocket.chosen() {
    // As touchgate-cli does before anything else: no core dump or ptrace of this process,
    // and a crash wipes the secret memory and prints one line.
    guard CTouchgateSys_harden_process() == 0, CTouchgateSys_install_fatal_signal_handlers("touchgate") == 0 else {
        FileOutput.write(TerminalText.failure("cannot protect this process's memory (\(String(cString: strerror(errno))));"
                                              + " refusing to handle secrets") + "\n", to: 2)
        exit(ExitStatus.readerError)
    }
    if let status = FastConversation.run(request, socketPath: socketPath) {
        exit(status)
    }
}
FullCLI.exec(arguments)
