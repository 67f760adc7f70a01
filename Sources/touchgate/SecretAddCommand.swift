import ArgumentParser
import TouchgatePolicy
import TouchgateVault

extension Secret {
    /// `touchgate secret add NAME --policy P [--fresh]`: stores standard input under NAME.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a secret read from standard input.",
            discussion: """
                Policies: biometry-any (any enrolled finger, now or later), biometry-current-set \
                (a finger enrolled now; the item is destroyed when a finger is enrolled or deleted), \
                user-presence (a finger or the passphrase), passphrase; or a combination with & (and) \
                and | (or), e.g. 'biometry-current-set|passphrase'. --fresh demands a new touch every \
                time (no 5-minute reuse). One final newline of the input is dropped. Needs the vault \
                unlocked; replacing an item also needs what its current policy asks for (standard input \
                carries the value, so give a passphrase on another descriptor).
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var readerOptions: ReaderOptions
        @OptionGroup var passphrase: PassphraseOptions

        @Argument(help: "The item's name.")
        var name: String

        @Option(help: "Who may read it: biometry-any, biometry-current-set, user-presence, passphrase, or an &/| combination.")
        var policy: String

        @Flag(help: "Ask for a fresh touch or passphrase on every read (no session reuse).")
        var fresh = false

        func validate() throws {
            guard !name.isEmpty else { throw ValidationError("the name must not be empty") }
            do {
                _ = try AccessPolicy(parsing: policy)
            } catch {
                throw ValidationError("invalid --policy: \(error)")
            }
        }

        func run() async throws {
            let name = self.name
            let policy = try AccessPolicy(parsing: self.policy)
            let fresh = self.fresh
            let device = readerOptions.device
            let input = passphrase.input()
            try await CommandRunner.run(json: common.json) { console in
                let context = try VaultContext.open()
                let key = try context.requireKey()
                var digest: [UInt8]?
                if policy.referencesCurrentSet {
                    let enrollment = try EnrollmentTracker.status(database: context.database)
                    guard enrollment.printCount > 0 else {
                        throw Failure.nothingEnrolled("biometry-current-set binds the item to the enrolled fingers, and none is enrolled; run: touchgate enroll")
                    }
                    digest = enrollment.state.digest
                }
                let old = try context.vault.items().first { $0.name == name }
                let value = try SecretValue.readStandardInput()
                if let old, !old.isInvalidated {
                    // Replacing a live item needs what reading it needs; the evaluator audits the write.
                    try await SecretAccess.authorize(try SecretAccess.descriptor(of: old), .write, context: context,
                                                     key: key, device: device, passphrase: input, console: console)
                } else {
                    try context.record(.itemWrite, .success, item: name,
                                       reason: old == nil ? "stored" : "replaced an invalidated item")
                }
                try context.vault.setItem(named: name, value: value, policy: policy.description, freshTouch: fresh,
                                          enrollmentDigest: digest, key: key)
                let oldPolicy = old.flatMap { AccessPolicy($0.policy) }
                if oldPolicy != policy || old?.freshTouch != fresh {
                    try context.evaluator.recordPolicyChange(item: name, from: oldPolicy, to: policy)
                }
                console.result([("result", "stored"), ("name", .string(name)), ("policy", .string(policy.description)),
                                ("fresh", .bool(fresh))],
                               text: "Stored '\(name)' (\(policy)\(fresh ? ", fresh touch" : "")).")
                return Exit.success
            }
        }
    }
}
