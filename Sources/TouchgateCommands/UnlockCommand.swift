import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate unlock`: the passphrase puts the vault key in the kernel keyring.
struct Unlock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock",
        abstract: "Unlock the vault with the passphrase.",
        discussion: """
            The vault key then stays in the kernel keyring until `touchgate lock`, 8 idle hours, \
            72 hours after the passphrase, or a reboot. The passphrase also lifts any lockout and \
            lets a fingerprint alone release secrets for the next 72 hours of this boot. \
            Exit status 8 for a wrong passphrase (nothing changes).
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        let input = passphrase.input()
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.unlock(onlyIfDue: false, interaction: TerminalInteraction(console: console, input: input))
            console.result("unlocked", report, text: report.lockoutLifted == true
                ? "Unlocked, and the lockout is lifted: fingers work again." : "Unlocked.")
            return ExitStatus.success
        }
    }
}

/// `touchgate lock`: wipes the vault key from the keyring and ends the reuse session.
struct Lock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract: "Lock the vault: forget the key and end the session.",
        discussion: """
            The key is removed first, whatever else is damaged; damage found afterwards is shown as \
            a warning with the command that repairs it.
            """)

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.lock()
            if let problem = report.problem { console.warning(problem) }
            console.result("locked", report, text: "Locked.")
            return ExitStatus.success
        }
    }
}
