import ArgumentParser
import TouchgateVault

/// `touchgate unlock`: the passphrase puts the vault key in the kernel keyring.
struct Unlock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
            let context = try VaultContext.open()
            let verifier = context.verifier(input, unlocking: true)
            do {
                _ = try await context.evaluator.unlock(passphrase: verifier)
            } catch {
                throw input.explain(error)
            }
            console.result([("result", "unlocked")], text: "Unlocked.")
            return Exit.success
        }
    }
}

/// `touchgate lock`: wipes the vault key from the keyring and ends the reuse session.
struct Lock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lock the vault: forget the key and end the session.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let context = try VaultContext.open()
            let wasUnlocked = try context.session.lock()
            try context.evaluator.lock(reason: wasUnlocked ? "locked by user" : "locked by user (key already gone)")
            console.result([("result", "locked"), ("was-unlocked", .bool(wasUnlocked))], text: "Locked.")
            return Exit.success
        }
    }
}
