public import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `--passphrase-fd N`: the passphrase comes one line at a time from descriptor N instead
/// of the terminal. There is deliberately no option or variable that takes it as text.
struct PassphraseOptions: ParsableArguments {
    @Option(name: .customLong("passphrase-fd"), help: ArgumentHelp(
        "Read the passphrase from this file descriptor (one line) instead of the terminal.",
        valueName: "fd"))
    var fileDescriptor: Int32?

    func validate() throws {
        if let fileDescriptor, fileDescriptor < 0 {
            throw ValidationError("--passphrase-fd needs a file descriptor number (0 or more)")
        }
    }

    /// Where the passphrase is read from.
    func input() -> PassphraseInput { PassphraseInput(fileDescriptor: fileDescriptor) }
}

/// `--kdf`: Argon2id cost, for init and passphrase change. `minimum` exists only so that
/// tests run fast; it is hidden from help and gives no real protection.
extension KeyStretching: ExpressibleByArgument {}
