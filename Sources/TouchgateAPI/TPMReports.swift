public import FoundationEssentials

/// `touchgate tpm status`: whether the TPM guards the vault key, its counter against the
/// store's, and its dictionary-attack state.
public struct TPMStatusReport: Codable, Sendable, Equatable {
    /// The vault key needs the TPM.
    public var bound: Bool
    /// The NV index of the counter, in hex (`0x1387400`), when bound.
    public var counterIndex: String?
    /// The value the store expects, and the TPM's (nil when the TPM was not reached).
    public var storeCounter: UInt64?
    public var tpmCounter: UInt64?
    /// The TPM's manufacturer code, when reached.
    public var manufacturer: String?
    /// Wrong passphrases counted now, how many lock out, and how often one is forgotten.
    public var failures: Int?
    public var maximumFailures: Int?
    public var forgetsOneEverySeconds: Int?
    /// The TPM refuses every passphrase now, and for about how long.
    public var lockedOut: Bool?
    public var lockoutRemainingSeconds: Int?
    /// Why the TPM could not be reached, when it could not.
    public var problem: String?
    /// The vault's passphrase guard (hex), its wrong passphrases in a row and its limit
    /// (nil for a binding made before guards: its wrong passphrases count on the TPM's
    /// machine-wide lockout above).
    public var guardIndex: String?
    public var guardFailures: Int?
    public var guardLimit: Int?
    /// When the store last adopted the TPM's counter after an unclean TPM boot, and how
    /// many changes the TPM had lost.
    public var counterAdoptedAt: Date?
    public var counterAdoptedChanges: UInt64?

    public init(bound: Bool, counterIndex: String?, storeCounter: UInt64?, tpmCounter: UInt64?, manufacturer: String?,
                failures: Int?, maximumFailures: Int?, forgetsOneEverySeconds: Int?, lockedOut: Bool?,
                lockoutRemainingSeconds: Int?, problem: String?, guardIndex: String? = nil, guardFailures: Int? = nil,
                guardLimit: Int? = nil, counterAdoptedAt: Date? = nil, counterAdoptedChanges: UInt64? = nil) {
        self.guardIndex = guardIndex
        self.guardFailures = guardFailures
        self.guardLimit = guardLimit
        self.counterAdoptedAt = counterAdoptedAt
        self.counterAdoptedChanges = counterAdoptedChanges
        self.bound = bound
        self.counterIndex = counterIndex
        self.storeCounter = storeCounter
        self.tpmCounter = tpmCounter
        self.manufacturer = manufacturer
        self.failures = failures
        self.maximumFailures = maximumFailures
        self.forgetsOneEverySeconds = forgetsOneEverySeconds
        self.lockedOut = lockedOut
        self.lockoutRemainingSeconds = lockoutRemainingSeconds
        self.problem = problem
    }

    /// One line for `touchgate status`.
    public var summary: String {
        guard bound else { return "not used" }
        if let problem { return "guards the vault key, but cannot be reached: \(problem)" }
        var parts = ["guards the vault key"]
        if let tpmCounter, let storeCounter {
            parts.append(tpmCounter == storeCounter ? "rollback counter \(tpmCounter), in step"
                                                    : "rollback counter: TPM \(tpmCounter), store \(storeCounter)")
        }
        if let guardFailures, let guardLimit {
            parts.append(guardFailures >= guardLimit ? "passphrase refused after \(guardLimit) wrong ones: recovery key needed"
                                                     : "\(guardFailures) of \(guardLimit) wrong passphrases in a row")
        } else if let failures, let maximumFailures {
            parts.append(lockedOut == true ? "LOCKED OUT for about \(lockoutRemainingSeconds ?? 0) s more"
                                           : "\(failures) of \(maximumFailures) wrong passphrases counted")
        }
        if let counterAdoptedAt, let counterAdoptedChanges {
            parts.append("counter adopted after an unclean TPM boot (\(counterAdoptedChanges) ahead) at \(WireCoding.iso8601(counterAdoptedAt))")
        }
        return parts.joined(separator: "; ")
    }

    /// The lines `touchgate tpm status` prints.
    public var lines: [String] {
        var lines = [bound ? "TPM: guards the vault key (every passphrase goes through it)"
                           : "TPM: not used (the passphrase alone, through Argon2id, guards the vault key; `touchgate tpm enroll` binds it)"]
        if let problem { lines.append("  not reachable: \(problem)") }
        if let manufacturer { lines.append("  manufacturer: \(manufacturer)") }
        if let counterIndex {
            let tpm = tpmCounter.map(String.init) ?? "?"
            let store = storeCounter.map(String.init) ?? "?"
            lines.append("  rollback counter \(counterIndex): TPM \(tpm), store \(store)"
                         + (tpmCounter != nil && tpmCounter == storeCounter ? " (in step)" : ""))
        }
        if let guardIndex {
            let count = guardFailures.map(String.init) ?? "?", limit = guardLimit.map(String.init) ?? "?"
            lines.append("  passphrase guard \(guardIndex): \(count) of \(limit) wrong passphrases in a row (this vault's own; at \(limit) only the recovery key opens it)")
            if let guardFailures, let guardLimit, guardFailures >= guardLimit {
                lines.append("  REFUSING the passphrase: run `touchgate tpm recover` with the recovery key")
            }
        } else if bound {
            lines.append("  no passphrase guard (bound by an earlier release): wrong passphrases count on the TPM's machine-wide lockout; `touchgate passphrase change` moves the vault to a guard of its own")
        }
        if let failures, let maximumFailures {
            var line = "  TPM's machine-wide dictionary-attack counter: \(failures) of \(maximumFailures)"
            if let forgetsOneEverySeconds { line += ", one forgotten every \(forgetsOneEverySeconds) s" }
            lines.append(line)
        }
        if lockedOut == true {
            lines.append("  the TPM's machine-wide lockout is on for about \(lockoutRemainingSeconds ?? 0) s more" + (guardIndex == nil ? ": it refuses this vault's passphrase meanwhile" : " (this vault's guard does not depend on it)"))
        }
        if let counterAdoptedAt, let counterAdoptedChanges {
            lines.append("  counter adopted after an unclean TPM boot at \(WireCoding.iso8601(counterAdoptedAt)): the TPM was \(counterAdoptedChanges) ahead of the store (see `touchgate audit show --event tpm.counter`)")
        }
        return lines
    }
}

/// `touchgate tpm enroll`: the vault key now needs the TPM; the recovery key, shown once.
public struct TPMEnrollReport: Codable, Sendable, Equatable {
    /// The recovery key (64 hex digits in groups of 8): the only way back in if this TPM is
    /// cleared or replaced, or the store moves to another machine. Shown once; Touchgate keeps
    /// only the vault key wrapped under it.
    public var recoveryKey: String
    /// The NV index of the rollback counter, in hex.
    public var counterIndex: String

    public init(recoveryKey: String, counterIndex: String) {
        self.recoveryKey = recoveryKey
        self.counterIndex = counterIndex
    }
}
