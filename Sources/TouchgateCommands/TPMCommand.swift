import FoundationEssentials
import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate tpm`: binding the vault key to the machine's TPM.
struct TPM: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tpm",
        abstract: "Bind the vault key to the TPM, see its state, recover on a new TPM.",
        discussion: """
            Bound to a TPM, the vault key needs both the passphrase and a secret the TPM releases only \
            for a value derived from it: a copy of the store is of no use elsewhere, and every guess at \
            the passphrase goes through the TPM, which counts wrong ones and locks out. A counter in the \
            TPM makes an older copy of the store refused (exit 6). Which TPM: TOUCHGATE_TPM_TCTI (a \
            tss2 TCTI such as device:/dev/tpmrm0 or swtpm:path=SOCKET), by default the system's.
            """,
        subcommands: [Status.self, Enroll.self, Recover.self])

    /// `touchgate tpm status`.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Whether the TPM guards the vault key; its rollback counter and lockout state.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let report = try await service.tpmStatus()
                console.result(report.bound ? "bound" : "not-bound", report, text: report.lines.joined(separator: "\n"))
                return ExitStatus.success
            }
        }
    }

    /// `touchgate tpm enroll`.
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enroll",
            abstract: "Bind the vault key to the TPM (needs the passphrase); shows the recovery key once.",
            discussion: """
                Write the recovery key down and keep it away from this machine: it is the only way back \
                in if the TPM is cleared or replaced, or the store moves to another machine \
                (`touchgate tpm recover`). Exit status 8 for a wrong passphrase, 9 when already bound, \
                69 when no TPM can be reached (nothing changes).
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var passphrase: PassphraseOptions

        func run() async throws {
            let input = passphrase.input()
            try await CommandRunner.run(json: common.json) { console in
                let report = try await service.tpmEnroll(interaction: TerminalInteraction(console: console, input: input))
                console.result("bound", report, text: """
                    The vault key is bound to the TPM (rollback counter \(report.counterIndex)).
                    Recovery key, shown only now; write it down and keep it away from this machine:

                        \(report.recoveryKey)

                    If the TPM is cleared or replaced: touchgate tpm recover
                    """)
                return ExitStatus.success
            }
        }
    }

    /// `touchgate tpm recover`.
    struct Recover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recover",
            abstract: "Bind the vault to this TPM again with the recovery key, under a new passphrase.",
            discussion: """
                For a TPM that was cleared or replaced, or a store moved to another machine. First shows \
                the store's newest change and what vouches for a newer one (the TPM's counter if it still \
                answers, the fleet collector's confirmations, the seal of an `audit export` given with \
                --checkpoint), and asks whether to accept the store in that state (--yes: accept without \
                asking). Then asks for the recovery key, then the new passphrase twice (with \
                --passphrase-fd N: one line each from N). Exit status 8 for a wrong recovery key, 11 when \
                the state is not accepted (nothing changes either way).
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var passphrase: PassphraseOptions
        @Option(help: ArgumentHelp("A file `touchgate audit export` wrote earlier: its seal is compared with the store.",
                                   valueName: "file"))
        var checkpoint: String?
        @Flag(help: "Accept the store's state without asking (after reading what it shows).")
        var yes = false

        func run() async throws {
            let input = passphrase.input()
            let seal = try checkpoint.map(Self.seal(in:))
            try await CommandRunner.run(json: common.json) { console in
                let report = try await service.tpmRecover(checkpoint: seal,
                                                          interaction: TerminalInteraction(console: console, input: input,
                                                                                           assumeYes: yes))
                console.result("recovered", report,
                               text: "The vault is bound to this TPM again; unlock it with the new passphrase.")
                return ExitStatus.success
            }
        }

        /// The seal line of an `audit export` file (its last line of that form).
        static func seal(in path: String) throws -> AuditSealReport {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("cannot read \(path): give the file `touchgate audit export` wrote")
            }
            let decoder = WireCoding.decoder()
            for line in text.split(separator: "\n").reversed() where line.hasPrefix("{\"seal\"") {
                if let sealed = try? decoder.decode(AuditSealLine.self, from: Data(line.utf8)) { return sealed.seal }
            }
            throw ValidationError("\(path) has no seal line: give the JSON file `touchgate audit export` wrote (its last line is {\"seal\": …})")
        }
    }
}
