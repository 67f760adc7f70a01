/// What the protocol promises about each operation, declared once: the arguments it reads,
/// what it answers, who may ask for it through touchgated, whether it can write audit
/// records (and so counts against a user's request rate) and whether it carries open
/// files. The daemon's admission rules (``CallerRules``, the request rate, the descriptor
/// check) read it, and docs/PROTOCOL.md's operation table is rendered from it
/// (``markdownTable``; a test keeps the document equal to it).
public struct OperationContract: Sendable, Equatable {
    /// Who may have the operation done through touchgated.
    public enum Callers: Sendable, Equatable {
        /// Any user, for themselves (root also for a user it names).
        case anyone
        /// Only root; the text says what needs root, for the refusal.
        case rootOnly(String)
        /// Only the caller, for their own store: no user may be named, root included.
        case ownStoreOnly
        /// Never through the daemon (the text says why, and what to do instead).
        case notThroughDaemon(String)
        /// Only touchgate agent's own program, as the host verified it at this request (the
        /// installed agent executable, by device and inode, not dumpable), or root: what the
        /// request says of another program (the Secret Service's `application`) is the agent's
        /// word, which no other process of the user may give.
        case agentOnly
    }

    /// The request's own arguments (wire names), beside those every request may carry.
    public let arguments: [String]
    /// What a successful result holds.
    public let result: String
    /// Who may ask.
    public let callers: Callers
    /// Whether it can write audit records: such requests count against the caller's rate.
    public let writesRecords: Bool
    /// Whether the request carries open files (`SCM_RIGHTS`).
    public let takesDescriptors: Bool

    init(_ arguments: [String], _ result: String, callers: Callers = .anyone, writesRecords: Bool = true,
         takesDescriptors: Bool = false) {
        self.arguments = arguments
        self.result = result
        self.callers = callers
        self.writesRecords = writesRecords
        self.takesDescriptors = takesDescriptors
    }

    /// An operation with no arguments of its own.
    init(_ result: String, writesRecords: Bool = true) {
        self.init([], result, writesRecords: writesRecords)
    }

    /// Arguments any request may carry (docs/PROTOCOL.md, after the table).
    public static let commonArguments = ["can-ask-again", "assume-yes", "requester", "local-only", "wait-seconds"]
}

extension DaemonOperation {
    /// This operation's contract.
    public var contract: OperationContract {
        switch self {
        case .status:
            OperationContract("status report (with `mode` and `trust-boundary`)", writesRecords: false)
        case .initialize:
            OperationContract(["stretching", "tpm"], "init report (asks `new-passphrase`, then `repeat-passphrase`; "
                              + "with `tpm`, the key bound to the TPM and `recovery-key` shown once)")
        case .unlock:
            OperationContract(["only-if-due"], "`{\"unlocked\": …, \"lockout-lifted\": true}` (the latter only when it lifted one; asks `passphrase`; with `only-if-due`, only when the "
                              + "vault is locked or its policy wants the passphrase, else `unlocked: false`)")
        case .lock:
            OperationContract("lock report")
        case .passphraseChange:
            OperationContract(["stretching", "new-can-ask-again"], "`{}` (asks `passphrase`, then `new-passphrase` and `repeat-passphrase`)")
        case .enroll:
            OperationContract(["finger", "user", "replace", "device"], "enroll report")
        case .printsList:
            OperationContract(["user", "device"], "print list with reader states and orphans")
        case .printsDelete:
            OperationContract(["finger", "user", "device"], "delete report")
        case .printsDeleteOrphans:
            OperationContract(["device"], "orphan delete report",
                              callers: .rootOnly("deleting prints the store does not know from a reader"))
        case .printsClear:
            OperationContract(["device"], "clear report", callers: .rootOnly("clearing a reader's own storage"))
        case .importFprintd:
            // fprintd's store is root's: only root may have the daemon read it.
            OperationContract(["path", "dry-run", "user"], "import report",
                              callers: .rootOnly("importing from fprintd's store"))
        case .verify, .identify:
            OperationContract(self == .verify ? ["user", "finger", "device"] : ["device"], "match report")
        case .devices:
            OperationContract("readers (`open`: whether the daemon holds it open), and why none when none",
                              writesRecords: false)
        case .capture:
            OperationContract(["path", "format", "device"], "capture report",
                              callers: .notThroughDaemon("capture writes an image file as the daemon's user; run it "
                                                         + "without the daemon (stop touchgated) to capture"))
        case .policyShow:
            OperationContract("settings", writesRecords: false)
        case .policySet:
            OperationContract(["lockout-threshold", "lockout-duration-seconds", "session-timeout-seconds",
                               "idle-timeout-seconds", "run-lease-seconds", "passkey-policy"],
                              "settings (only the values given change)")
        case .repair:
            OperationContract("repair report")
        case .tpmStatus:
            OperationContract("TPM status: bound, counters, dictionary-attack state", writesRecords: false)
        case .tpmEnroll:
            OperationContract("`{\"recovery-key\": …, \"counter-index\": …}` (asks `passphrase`; the recovery key is shown once)")
        case .tpmRecover:
            OperationContract(["checkpoint"], "`{}` (asks `confirm` with the store's state and what vouches for it, then "
                              + "`passphrase` for the recovery key, then `new-passphrase` and `repeat-passphrase`)")
        case .secretGet:
            OperationContract(["item", "device", "fresh"], "`{}` and the value as secret bytes (`fresh`: a touch made "
                              + "for this release, no reuse session; refused for an item releasable without a finger)")
        case .secretAdd:
            OperationContract(["item", "policy", "fresh", "replace", "device"], "stored report (asks `secret-value`)")
        case .secretList:
            OperationContract("items", writesRecords: false)
        case .secretRm:
            OperationContract(["item"], "`{}`")
        case .secretAllow:
            OperationContract(["item", "executable", "revoke"], "`{\"name\": …, \"allowed\": […]}` (needs what the item's "
                              + "policy asks for, as a fresh touch)")
        case .approve:
            OperationContract(["request", "device"], "`{\"receipt\": …, \"refusal\": …}`: the receipt signed by the host's "
                              + "audit key, approved or refused; when approved, the secrets' values as secret bytes (each "
                              + "a 4-byte big-endian length and its bytes, in the request's order). Always a fresh touch "
                              + "of an enrolled finger, and what each item's policy asks for besides. Only the installed "
                              + "program: what it shows the person and runs is what it was asked, and no other process "
                              + "of the user may take values it says are for a command",
                              callers: .agentOnly)
        case .secretServiceSearch:
            OperationContract(["attributes", "collection", "application"], "`{\"locked\": …, \"items\": […]}`: Secret Service item reports (never a value; "
                              + "`unlocked`: readable by `application` without a touch)", callers: .agentOnly,
                              writesRecords: false)
        case .secretServiceStore:
            OperationContract(["details", "replace", "application"], "stored report (asks `secret-value`; `replace`: the "
                              + "item of the same collection and attributes, with what its policy asks for)",
                              callers: .agentOnly)
        case .secretServiceDelete:
            OperationContract(["item", "application"], "`{}` (a touch naming `application` first when it is not approved for "
                              + "the item, as for a read)", callers: .agentOnly)
        case .importSecretService:
            OperationContract(["details"], "`{\"imported\": […], \"skipped\": […]}` (asks `secret-value`: every item's "
                              + "value, each a 4-byte big-endian length and its bytes, in the order of `details`; one "
                              + "fresh touch; all or nothing)")
        case .secretServiceRead:
            OperationContract(["item", "application", "approve-only"], "`{}` and the value as secret bytes (a touch naming "
                              + "`application` the first time it reads the item in the reuse window, unless allowed; "
                              + "`approve-only`: only that touch, no value)", callers: .agentOnly)
        case .auditShow:
            OperationContract(["filter"], "one `output` line per record, then `{\"count\":N}`", writesRecords: false)
        case .auditCount:
            OperationContract(["filter"], "`{\"count\":N}`", writesRecords: false)
        case .auditVerify:
            OperationContract("`{\"count\":N}`: the records checked")
        case .auditExport:
            OperationContract(["filter", "format"], "one `output` line per record (`json`, `ocsf` or `ecs`), then "
                              + "`{\"count\":N}`", writesRecords: false)
        case .auditPrune:
            OperationContract(["before", "force"], "`{\"count\":N}`: the records removed")
        case .sshKeygen:
            OperationContract(["item", "policy", "fresh", "type"], "SSH key report")
        case .sshAdd:
            OperationContract(["item", "policy", "fresh", "public-key"], "SSH key report (asks `secret-value`: the key's "
                              + "32-byte Ed25519 seed or P-256 scalar, which must be `public-key`'s)")
        case .sshList:
            OperationContract("SSH key reports", writesRecords: false)
        case .sshSign:
            OperationContract(["public-key", "data", "flags", "bindings"], "`{\"signature\": …, \"purpose\": …}`")
        case .sshSkEnroll:
            OperationContract(["item", "application", "flags"], "security key enrollment (`public-key`, `key-handle`, "
                              + "`flags`, and the SSH key report)")
        case .sshOffer:
            OperationContract(["keys", "all", "offered", "lifetime", "destinations"], "SSH key reports, with whether each "
                              + "is `offered` now (and `offered-until`)")
        case .sshConfirm:
            OperationContract(["question"], "match report (a touch of any enrolled finger, recorded as an approval of "
                              + "the use `question` asks about)")
        case .verifyUnused:
            OperationContract(["seconds-after"], "`{}` (an `auth.attempt` record: the match was not used, the prompt "
                              + "ended `seconds-after` it)")
        case .sshSkSign:
            OperationContract(["application", "key-handle", "flags", "data", "bindings"], "`{\"signature\": …, \"flags\": N, "
                              + "\"counter\": N, \"purpose\": …}`")
        case .passkeyVerify:
            OperationContract(["rp-id", "ceremony"], "`{\"match\": …, \"ticket\": …, \"attempts-left\": N, "
                              + "\"ticket-seconds\": N}`: a touch of an enrolled finger for one ceremony at one site, "
                              + "and the single-use ticket it gives")
        case .passkeyMake:
            OperationContract(["rp-id", "rp-name", "user-id", "user-name", "display-name", "algorithms", "exclude-list",
                               "discoverable", "client-data-hash", "ticket", "policy"],
                              "`{\"credential-id\": …, \"authenticator-data\": …, \"passkey\": …}`")
        case .passkeyAssert:
            OperationContract(["rp-id", "client-data-hash", "allow-list", "ticket", "presence"],
                              "`{\"assertions\": […]}`: every matching credential's signed assertion")
        case .passkeyList:
            OperationContract(["rp-id", "credential-ids"], "`{\"passkeys\": […]}`: passkey reports, no private key",
                              writesRecords: false)
        case .passkeyDelete:
            OperationContract(["name", "credential-id", "ticket"], "the removed passkey's report (asks `confirm` "
                              + "without a ticket)")
        case .passkeyUpdate:
            OperationContract(["credential-id", "user-id", "user-name", "display-name", "ticket"],
                              "the renamed passkey's report (a manage ticket required; the user id must be the passkey's)")
        case .passkeyPrompts:
            OperationContract("never answers: until the client cancels or goes, a `touch-needed` event for each "
                              + "ceremony on one of the caller's passkey devices that waits for a finger (naming the "
                              + "site), and `touch-ended` when that wait is over", writesRecords: false)
        case .auditPublicKey:
            OperationContract("`{\"public-key\":\"…\"}`: the machine key that signs every trail the daemon holds",
                              writesRecords: false)
        case .auditShip:
            OperationContract(["force", "user"], "`{\"shipments\":[…]}`: one ship report per trail sent to the "
                              + "collector of the daemon's own fleet configuration: the caller's trail, or for root "
                              + "naming no user every user's (`force`, root only: forget the fleet checkpoints kept "
                              + "and accept the collector's log as it is)")
        case .migrate:
            OperationContract(["path"], "migration report (two descriptors: the database copy, then the audit key; "
                              + "asks `passphrase`)", callers: .ownStoreOnly, takesDescriptors: true)
        }
    }

    /// docs/PROTOCOL.md's operation table: one row per operation, in declaration order.
    public static var markdownTable: String {
        var lines = ["| operation | arguments | who | result |", "|---|---|---|---|"]
        for operation in allCases {
            let contract = operation.contract
            let who: String
            switch contract.callers {
            case .anyone: who = "anyone"
            case .rootOnly: who = "root"
            case .ownStoreOnly: who = "the caller, for itself"
            case .notThroughDaemon: who = "refused (`usage`)"
            case .agentOnly: who = "touchgate agent's program (verified), or root"
            }
            let arguments = contract.arguments.map { "`\($0)`" }.joined(separator: ", ")
            lines.append("| `\(operation.rawValue)` | \(arguments) | \(who) | \(contract.result) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
