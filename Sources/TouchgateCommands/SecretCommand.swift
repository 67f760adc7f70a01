import TouchgateAPI
import TouchgateTerminal
import ArgumentParser

/// `touchgate secret`: fingerprint-gated items.
struct Secret: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret",
        abstract: "Store and release secrets guarded by a fingerprint or the passphrase.",
        discussion: """
            Values are read from standard input and written to standard output (or into a \
            child's environment with `exec`); never on the command line. Every access is audited.
            """,
        subcommands: [Add.self, Get.self, Exec.self, List.self, Remove.self, Allow.self])
}

/// Options of commands that release an item.
struct ReleaseOptions: ParsableArguments {
    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions
    @OptionGroup var passphrase: PassphraseOptions

    @Argument(help: "The item's name.", completion: Completions.secretNames)
    var name: String
}
