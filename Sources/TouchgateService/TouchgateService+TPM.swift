import FoundationEssentials
import TouchgateVault
import TouchgatePolicy
public import TouchgateAPI

extension TouchgateService {
    /// Whether the TPM guards the vault key, and its counter and lockout state.
    public func tpmStatus() async throws(ServiceError) -> TPMStatusReport {
        try await withExistingStore(orElse: noVault) { store in
            guard try store.vaultExists() else { throw noVault }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            return TPMStatusReport(try vault.tpmStatus(device: .configured, log: try store.audit()))
        }
    }

    /// Binds the vault key to the TPM after the passphrase (every try counted, the wrong
    /// ones audited); the recovery key is returned once and kept nowhere in clear.
    public func tpmEnroll(interaction: any Interaction) async throws(ServiceError) -> TPMEnrollReport {
        try await withExistingStore(orElse: noVault) { store in
            guard try store.vaultExists() else { throw noVault }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            let log = try store.audit()
            let wrong = { (_: Int) in
                _ = try? log.append(.authAttempt, .failure, vaultUser: vault.owner, reason: "passphrase: wrong passphrase (tpm enroll)")
            }
            let passphrase: SecretBytes
            do {
                (passphrase, _) = try await PassphraseEntry.open(vault, interaction: interaction,
                                                                 prompt: "Passphrase to bind the vault to the TPM", wrong: wrong)
            } catch VaultError.wrongPassphrase {
                wrong(0)
                throw VaultError.wrongPassphrase
            }
            interaction.notice("binding the vault key to the TPM (\(TPMDevice.configured.name))…")
            let recovery = try await PassphraseEntry.offThread {
                try vault.bindToTPM(passphrase: passphrase, device: .configured, log: log)
            }
            let text = recovery.text().withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            let index = try vault.tpmStatus(device: .configured, log: log).counterIndex ?? 0
            return TPMEnrollReport(recoveryKey: text, counterIndex: "0x" + String(index, radix: 16))
        }
    }

    /// Binds the vault to this TPM again with the recovery key, under a new passphrase,
    /// once the owner has confirmed the store's state as it is shown: its newest change,
    /// and what vouches for a newer one (the TPM's counter when it still answers, the
    /// fleet collector's confirmations, a seal exported earlier, `checkpoint`). A counter
    /// lost with an older copy put back is a rollback that only this check can name.
    public func tpmRecover(checkpoint: AuditSealReport?, interaction: any Interaction) async throws(ServiceError) -> EmptyReport {
        try await withExistingStore(orElse: noVault) { store in
            guard try store.vaultExists() else { throw noVault }
            let vault = try Vault.open(database: store.database, owner: principal.loginName)
            // The counter of the old TPM may be gone: the log is opened without its check.
            let log = try AuditLog(database: store.database, checkingTPMCounter: false)
            let state = try log.recoveryState(checkingAgainst: try checkpoint.map(Self.seal(from:)))
            let shown = TPMRecoveryText(state)
            // Shown whether or not anyone can answer (a script with --yes reads it too).
            for line in shown.lines { interaction.notice(line) }
            guard try await interaction.confirm(shown.question, details: []) else {
                throw ServiceError(.declined, "nothing was changed: the store's state was not accepted (\(shown.summary)). Put back the newest copy of the data directory, or run `touchgate tpm recover` again and accept this state (--yes without a terminal)")
            }
            let typed = try await interaction.passphrase(prompt: "Recovery key (64 hex digits): ", again: false)
            guard let recovery = RecoveryKey(parsing: typed) else {
                throw ServiceError.usage("that is not a recovery key: it is 64 hex digits, in groups of 8 separated by hyphens, as `touchgate tpm enroll` showed it; nothing was changed")
            }
            let passphrase = try await PassphraseEntry.new(interaction, prompt: "New vault passphrase: ",
                                                           user: principal.loginName)
            do {
                try await PassphraseEntry.offThread {
                    try vault.recoverTPM(recoveryKey: recovery, passphrase: passphrase, device: .configured, log: log,
                                         accepting: shown.summary)
                }
            } catch VaultError.wrongPassphrase {
                _ = try? log.append(.authAttempt, .failure, vaultUser: vault.owner, reason: "recovery key: wrong (tpm recover)")
                throw ServiceError(.wrongPassphrase, "the recovery key does not open this vault; nothing was changed")
            }
            return EmptyReport()
        }
    }
}

extension TouchgateService {
    /// A seal from an export, checked only for its form here (``AuditLog/recoveryState(checkingAgainst:)``
    /// checks its signature and trail).
    static func seal(from report: AuditSealReport) throws(ServiceError) -> AuditSeal {
        guard let trail = Hex.decode(report.trail), let chain = Hex.decode(report.chain),
              let key = Hex.decode(report.publicKey), let signature = Hex.decode(report.signature) else {
            throw ServiceError.usage("the checkpoint's seal is not hex where it should be: give the file `touchgate audit export` wrote, unchanged; nothing was changed")
        }
        return AuditSeal(trail: trail, sequence: report.seq, chain: chain, publicKey: key, signature: signature)
    }
}

/// What `tpm recover` shows before the owner accepts the store: its newest change, and
/// each thing that vouches for (or against) it.
struct TPMRecoveryText {
    var lines: [String] = []
    var question: String
    /// One line for the audit record of the recovery.
    var summary: String

    init(_ state: TPMRecoveryState) {
        let newest = state.newest.map { "record #\($0.sequence) (\($0.event)) at \(WireCoding.iso8601($0.time))" }
            ?? "no record at all"
        lines.append("The store's newest change: \(newest).")
        var notes = ["newest \(newest)"]
        if let tpm = state.tpmCounter, let store = state.storeCounter {
            lines.append(tpm > store
                ? "The TPM's counter is at \(tpm) but the store expects \(store): the store is \(tpm - store) changes OLDER than the TPM last saw."
                : "The TPM's counter (\(tpm)) and the store (\(store)) agree.")
            notes.append("TPM counter \(tpm), store \(store)")
        } else {
            lines.append("The TPM's counter cannot vouch for it: \(state.counterProblem ?? "the vault names no counter"). If the counter was deleted, an older copy of the store would look exactly like this one.")
            notes.append("counter gone")
        }
        if state.shippedThrough > 0 {
            let behind = state.shippedThrough > (state.newest?.sequence ?? 0)
            lines.append("The fleet collector confirmed records up to #\(state.shippedThrough)"
                         + (behind ? ", past this store's newest: the store is OLDER than what it shipped." : "; this store holds them."))
            notes.append("fleet confirmed #\(state.shippedThrough)")
        }
        switch state.checkpoint {
        case .older(let sequence)?:
            lines.append("Your exported checkpoint vouches for record #\(sequence), which this store does not reach: records after #\(state.newest?.sequence ?? 0) up to #\(sequence) are missing. This is an OLDER copy: a rollback.")
            notes.append("OLDER than the checkpoint at #\(sequence)")
        case .differs(let sequence)?:
            lines.append("Your exported checkpoint vouches for another record #\(sequence) than this store holds: the trail was rewritten from there.")
            notes.append("differs from the checkpoint at #\(sequence)")
        case .holds(let sequence)?:
            lines.append("Your exported checkpoint (record #\(sequence)) is in this store: it is at least as new as that export.")
            notes.append("holds the checkpoint at #\(sequence)")
        case .foreign?:
            lines.append("The checkpoint given is not of this trail, or not signed by its key: it vouches for nothing here.")
            notes.append("checkpoint not of this trail")
        case nil:
            if state.shippedThrough == 0 {
                lines.append("Nothing outside this store vouches for its state: compare the newest change above with what you last did, or run again with --checkpoint FILE (an `audit export` you kept).")
            }
        }
        question = state.isRollback
            ? "This store is OLDER than what vouches for it (a rollback). Accept it anyway and bind the vault to this TPM again?"
            : "Accept the store in this state and bind the vault to this TPM again?"
        // The verdict first: an audit reason is cut at its length limit.
        summary = (state.isRollback ? "rollback accepted: " : "") + notes.joined(separator: ", ")
    }
}

extension TPMStatusReport {
    /// The report of what the vault found.
    init(_ status: TPMStatus) {
        let da = status.dictionaryAttack
        self.init(bound: status.bound, counterIndex: status.counterIndex.map { "0x" + String($0, radix: 16) },
                  storeCounter: status.storeCounter, tpmCounter: status.tpmCounter, manufacturer: da?.manufacturer,
                  failures: da?.failures, maximumFailures: da?.maximumFailures,
                  forgetsOneEverySeconds: da?.forgetsOneEverySeconds, lockedOut: da?.isLockedOut,
                  lockoutRemainingSeconds: da.map(\.secondsUntilAccepting), problem: status.problem,
                  guardIndex: status.guardIndex.map { "0x" + String($0, radix: 16) }, guardFailures: status.guardFailures,
                  guardLimit: status.guardLimit, counterAdoptedAt: status.adoptedAt,
                  counterAdoptedChanges: status.adoptedChanges)
    }
}
