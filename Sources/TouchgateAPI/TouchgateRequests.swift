public import FoundationEssentials

/// Every request a client can make, as a client makes it: served in this process by
/// ``TouchgateService`` (the personal mode), or by `touchgated` through the daemon's
/// socket (`DaemonClient`, the system mode). The CLI holds an `any TouchgateRequests`
/// and never knows which; both give the same reports and the same ``ServiceError``s.
public protocol TouchgateRequests: Sendable {
    /// Which mode serves the requests, and what it protects against.
    var mode: ServiceMode { get }

    /// Locked or not, the reuse session, lockout, enrolled fingers and readers. Reads only:
    /// never asks for a finger or the passphrase and does not count as use. State that
    /// cannot be trusted is reported in ``StatusReport/problem``, with its repair, not thrown.
    func status() async throws(ServiceError) -> StatusReport
    /// Creates the vault under a new passphrase (asked through `interaction`; a weak one is
    /// refused) and seals every template enrolled before it; the vault is left unlocked.
    /// With `tpm`, the vault key is bound to the TPM at once (``tpmEnroll(interaction:)``)
    /// and the report carries the recovery key.
    /// - Throws: `already-exists` when there is a vault, `refused` for a weak passphrase,
    ///   `tpm-unavailable` with `tpm` when no TPM can be reached (no vault is made).
    func initialize(stretching: KeyStretching, tpm: Bool, interaction: any Interaction) async throws(ServiceError) -> InitReport
    /// Unlocks with the passphrase. With `onlyIfDue`, only when the passphrase is due (a
    /// vault that is locked, or whose policy wants the passphrase before a finger is
    /// enough again); otherwise nothing is asked or recorded and the report says so. A PAM
    /// stack's `unlock-with-password` uses that form, so a login password that is not the
    /// passphrase is never tried when nothing needs it.
    func unlock(onlyIfDue: Bool, interaction: any Interaction) async throws(ServiceError) -> UnlockReport
    /// Forgets the vault key and ends the reuse session. Damage met after the key is gone
    /// is reported in the result, not thrown: the lock itself succeeded.
    func lock() async throws(ServiceError) -> LockReport
    /// Changes the passphrase: `current` is asked and checked first, then `new` is asked.
    /// Items, prints and a held key are untouched. `stretching` re-tunes Argon2id.
    func passphraseChange(stretching: KeyStretching?, current: any Interaction,
                          new: any Interaction) async throws(ServiceError)

    /// Enrolls `finger` of `user` (nil: the caller; another user needs root) on `device`
    /// (nil: the first reader). Once a vault exists this needs the passphrase and destroys
    /// every `biometry-current-set` item, which `interaction` must confirm first.
    func enroll(finger: String, user: String?, replace: Bool, device: String?,
                interaction: any Interaction) async throws(ServiceError) -> EnrollReport
    /// The enrolled prints (of `user`, or everyone's for root), never their templates, and what
    /// each reader with its own storage (or only `device`) holds beside them.
    func printsList(user: String?, device: String?, interaction: any Interaction) async throws(ServiceError) -> PrintListReport
    /// Deletes from a reader's own storage every print the store does not know, after
    /// `interaction` confirms the list (and, once a vault exists, gives the passphrase).
    func printsDeleteOrphans(device: String?, interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport
    /// Deletes `finger` of `user` (from the reader too when it stores prints). Once a vault
    /// exists this needs the passphrase and destroys every `biometry-current-set` item.
    func printsDelete(finger: String, user: String?, device: String?,
                     interaction: any Interaction) async throws(ServiceError) -> DeleteReport
    /// Wipes a reader's own storage and forgets every print made on it; as ``printsDelete(finger:user:device:interaction:)``
    /// for the passphrase and `biometry-current-set` items.
    func printsClear(device: String?, interaction: any Interaction) async throws(ServiceError) -> ClearReport
    /// Copies the prints fprintd enrolled for `user` from its store at `directory` (every file
    /// checked before anything is written); with `dryRun`, only says what it would copy.
    func importFprintd(user: String?, from directory: String, dryRun: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> ImportReport
    /// Checks a finger against the enrolled prints of `user` (nil: the caller), or only
    /// `finger`. A no-match is an answer (`match: false`, attempts left), counted toward the
    /// lockout; a lockout refuses before the reader opens. Releases nothing; audited.
    func verify(user: String?, finger: String?, device: String?,
                interaction: any Interaction) async throws(ServiceError) -> MatchReport
    /// Finds which enrolled user and finger is on the reader; counted and audited like ``verify(user:finger:device:interaction:)``.
    func identify(device: String?, interaction: any Interaction) async throws(ServiceError) -> MatchReport
    /// The readers found now, and when there is none, why.
    func devices() async throws(ServiceError) -> ReaderInventory
    /// Captures one image into a new private file at `path` (never through the daemon:
    /// the image is biometric data for the caller's own eyes).
    func capture(to path: String, format: ImageFormat, device: String?,
                 interaction: any Interaction) async throws(ServiceError) -> CaptureReport

    /// The lockout and session limits in force.
    func policyShow() async throws(ServiceError) -> SettingsReport
    /// Changes the limits: checked first, then the passphrase; the change and its audit
    /// record are one transaction.
    func policySet(_ change: SettingsChange, interaction: any Interaction) async throws(ServiceError) -> SettingsReport
    /// Repairs state edited outside Touchgate or a wiped audit trail, after the passphrase;
    /// asks nothing when nothing is wrong.
    func repair(interaction: any Interaction) async throws(ServiceError) -> RepairReport
    /// Whether the TPM guards the vault key, its rollback counter against the store's, and
    /// its dictionary-attack state. Reads only.
    func tpmStatus() async throws(ServiceError) -> TPMStatusReport
    /// Binds the vault key to the TPM, after the passphrase; returns the recovery key, once.
    func tpmEnroll(interaction: any Interaction) async throws(ServiceError) -> TPMEnrollReport
    /// Binds the vault to this TPM again with the recovery key (a cleared or replaced TPM,
    /// another machine), under a new passphrase.
    func tpmRecover(checkpoint: AuditSealReport?, interaction: any Interaction) async throws(ServiceError) -> EmptyReport

    /// The value of item `name`, once its policy is satisfied (a touch on `device`, the
    /// passphrase, or the reuse window). The grant is audited before the value is decrypted.
    /// With `touchNow`, only a touch made for this release decides it (no reuse window; an
    /// item releasable without a finger is refused): what a PAM login releases.
    /// - Throws: `not-found`, `locked-out`, `no-match`, `vault-locked` and the like; never a partial value.
    func secretGet(_ name: String, touchNow: Bool, device: String?,
                   interaction: any Interaction) async throws(ServiceError) -> SecretBytes
    /// Stores the bytes `value` yields as item `name` under `policy` (`fresh`: every release
    /// needs a new touch). `value` is called only once the request can succeed; replacing a
    /// live item (`replace`) needs what its current policy asks for.
    func secretAdd(_ name: String, value: @escaping @Sendable () async throws -> SecretBytes, policy: String, fresh: Bool,
               replace: Bool, device: String?, interaction: any Interaction) async throws(ServiceError) -> StoredReport
    /// Every item's name and policy, never a value. Works while locked.
    func secretList() async throws(ServiceError) -> [ItemReport]
    /// Deletes item `name` once `interaction` confirms; needs the vault unlocked, not a touch.
    func secretRm(_ name: String, interaction: any Interaction) async throws(ServiceError)
    /// Lets `executable` read item `name` through the Secret Service without a touch of its
    /// own (or, with `revoke`, no longer), after what the item's policy asks for as a fresh
    /// touch. Audited.
    func secretAllow(_ name: String, executable: String, revoke: Bool,
                     interaction: any Interaction) async throws(ServiceError) -> AllowReport
    /// Asks the person for a fresh touch approving `request` (a command with its secrets,
    /// or an action), shown with who asks; every decision, approval or refusal, is recorded
    /// and signed (``ApprovalReport``). When approved, the secrets' values packed in the
    /// request's order (``PackedValues``); nil for an action or a refusal.
    func approve(_ request: ApprovalRequest, device: String?,
                 interaction: any Interaction) async throws(ServiceError) -> (ApprovalReport, SecretBytes?)
    /// The Secret Service items whose attributes include every one of `attributes` (in
    /// `collection`, or in all), as `application` may see them. Works while locked.
    func secretServiceSearch(_ attributes: [SecretAttribute], collection: String?,
                             application: ApplicationIdentity?) async throws(ServiceError) -> SecretServiceSearchReport
    /// Stores the bytes `value` yields as a Secret Service item described by `details`, for
    /// `application`. With `replace`, an item of the same collection and attributes is
    /// replaced (with what its policy asks for); otherwise a new item is made.
    func secretServiceStore(_ details: ItemDetails, value: @escaping @Sendable () async throws -> SecretBytes,
                            replace: Bool, application: ApplicationIdentity,
                            interaction: any Interaction) async throws(ServiceError) -> StoredReport
    /// Copies items read from another Secret Service provider into the vault: `details[i]`
    /// with the `i`-th value `values` yields (``PackedValues``), after one fresh touch, in
    /// one transaction; items of the same collection and attributes as one the vault holds
    /// are skipped. Audited.
    func importSecretService(_ details: [ItemDetails], values: @escaping @Sendable () async throws -> SecretBytes,
                             interaction: any Interaction) async throws(ServiceError) -> SecretServiceImportReport
    /// Deletes Secret Service item `name` for `application`, which must be approved for it
    /// as for a read (a touch naming it, if not). Audited.
    func secretServiceDelete(_ name: String, application: ApplicationIdentity,
                             interaction: any Interaction) async throws(ServiceError)
    /// The value of item `name` for `application`: the first read by an application in the
    /// reuse window needs a touch that names it (unless allowed for good), then the item's
    /// policy applies. With `approveOnly`, only the approval is made and nothing is released
    /// (nil). Every release and refusal is audited with the application's chain.
    func secretServiceRead(_ name: String, application: ApplicationIdentity, approveOnly: Bool,
                           interaction: any Interaction) async throws(ServiceError) -> SecretBytes?

    /// The audit records `filter` selects, as stored (``auditVerify()`` says whether to trust them).
    /// - Throws: `usage` for a filter that cannot match as meant.
    func auditShow(_ filter: AuditFilter) async throws(ServiceError) -> [AuditRecordReport]
    /// How many records `filter` selects, ignoring its limit.
    func auditCount(_ filter: AuditFilter) async throws(ServiceError) -> Int
    /// Checks the audit chain and its seal; returns how many records it holds.
    /// - Throws: `audit-broken` naming the first record that cannot be trusted.
    func auditVerify() async throws(ServiceError) -> Int
    /// Writes the records `filter` selects to `write`, one line each, in `format` (with the
    /// chain fields and the seal for `json`); returns how many.
    func auditExport(_ filter: AuditFilter, format: AuditExportFormat,
                     to write: @escaping @Sendable (String) throws -> Void) async throws(ServiceError) -> Int
    /// The public key that signs this trail's seals, lowercase hex (what a verifier registers).
    func auditPublicKey() async throws(ServiceError) -> String
    /// Deletes records older than `cutoff` after the passphrase; records inside the retention
    /// are kept (refused, and audited), and `force` also removes records the fleet has not
    /// confirmed. Returns how many were removed; the chain stays verifiable.
    func auditPrune(before cutoff: Date, force: Bool, interaction: any Interaction) async throws(ServiceError) -> Int

    /// Records that a match answered earlier was not used to authenticate anyone (the PAM
    /// module's mode=either, whose prompt ended `secondsAfter` the match).
    func verifyUnused(secondsAfter: Int) async throws(ServiceError)

    /// Offers or withdraws the vault's SSH keys for the agents (`ssh-add -d`, `-D`, `-t`,
    /// `touchgate ssh offer`): recorded; the keys' reports as they stand after.
    func sshOffer(_ change: SSHOfferChange) async throws(ServiceError) -> [SSHKeyReport]

    /// A touch of any enrolled finger approving one use of a key an agent asks confirmation
    /// for (`ssh-add -c`), recorded as that approval with the agent's `question`.
    func sshConfirm(_ question: String, interaction: any Interaction) async throws(ServiceError) -> MatchReport

    /// Makes an SSH key (Ed25519) inside the vault as item `name` under `policy` (`fresh`:
    /// every signature needs a new touch); its private part never leaves the service.
    /// - Throws: `already-exists` for a taken name, `vault-locked`, `usage` for a bad policy.
    func sshKeygen(_ name: String, type: String, policy: String, fresh: Bool) async throws(ServiceError) -> SSHKeyReport
    /// Seals an SSH key (Ed25519) brought from elsewhere (`ssh-add FILE` through the agent)
    /// into the vault as item `name` under `policy`, as ``sshKeygen(_:type:policy:fresh:)`` makes
    /// one. `publicKey` is its public blob (Ed25519 or ECDSA P-256); `seed` gives its 32-byte
    /// private seed or scalar, which must be that key's; it is called once the request can
    /// succeed, and the key never leaves the service again.
    func sshAdd(_ name: String, publicKey: Data, seed: @escaping @Sendable () async throws -> SecretBytes, policy: String,
                fresh: Bool) async throws(ServiceError) -> SSHKeyReport
    /// The vault's SSH keys, public parts only. Needs the vault unlocked (the public half is
    /// derived from the sealed key): `vault-locked` otherwise.
    func sshList() async throws(ServiceError) -> [SSHKeyReport]
    /// Signs `request.data` with the vault key whose public key it names, once the key's
    /// policy allows it for what the data is (said in the prompt and the audit record).
    /// - Throws: `not-found` for a key the vault does not hold, `denied` for a request
    ///   forwarded from another host, and what a release throws (`no-match`, `locked-out`…).
    func sshSign(_ request: SSHSignRequest, interaction: any Interaction) async throws(ServiceError) -> SSHSignatureReport
    /// Makes an `sk-ssh-ed25519` key in the vault for OpenSSH's security-key provider: item
    /// `request.item` (or a name derived from the key), bound to `request.application`,
    /// every signature a fresh touch unless `request.flags` leaves out user presence.
    /// - Throws: `usage` for an algorithm other than Ed25519, `already-exists`,
    ///   `vault-locked`.
    func sshSkEnroll(_ request: SSHSecurityKeyEnrollRequest) async throws(ServiceError) -> SSHSecurityKeyEnrollment
    /// Signs as a FIDO authenticator would with the security key `request.keyHandle` names:
    /// the flags say a touch was made for this signature (user presence) and that an
    /// enrolled finger matched (user verification), the counter only grows.
    /// - Throws: `not-found` for a handle the vault does not know or another application,
    ///   and what a release throws.
    func sshSkSign(_ request: SSHSecurityKeySignRequest,
                            interaction: any Interaction) async throws(ServiceError) -> SSHSecurityKeySignature
    /// Asks for a touch of an enrolled finger for one passkey ceremony at one site
    /// (lockout applies; a no-match is an answer, not an error), recorded; a match gives a
    /// single-use ticket for that ceremony.
    /// - Throws: `locked-out`, `vault-locked`, `no-vault`, and the reader's failures.
    func passkeyVerify(_ request: PasskeyVerifyRequest, interaction: any Interaction) async throws(ServiceError) -> PasskeyVerification
    /// Makes a passkey in the vault with a registration ticket, and signs nothing.
    /// - Throws: `already-exists` when a credential of `excludeList` is here, `usage` for no
    ///   algorithm offered, `forbidden` for a ticket that is not valid for this.
    func passkeyMake(_ request: PasskeyMakeRequest) async throws(ServiceError) -> PasskeyMade
    /// Signs assertions with a sign-in ticket: the allowed credential held here, or every
    /// discoverable one of the site.
    /// - Throws: `not-found` when none is held, `item-invalidated`, `forbidden` for a bad ticket.
    func passkeyAssert(_ request: PasskeyAssertRequest) async throws(ServiceError) -> PasskeyAssertions
    /// The passkeys held, without a touch.
    func passkeyList(_ request: PasskeyListRequest) async throws(ServiceError) -> PasskeyListing
    /// Removes one passkey: with a manage ticket, or confirmed by the person.
    func passkeyDelete(_ request: PasskeyDeleteRequest, interaction: any Interaction) async throws(ServiceError) -> PasskeyReport
    /// Renames a passkey's account, with a manage ticket.
    /// - Throws: `not-found`, `usage` when the user id is not the passkey's, `forbidden` for a bad ticket.
    func passkeyUpdate(_ request: PasskeyUpdateRequest) async throws(ServiceError) -> PasskeyReport
    /// Tells `interaction` what the caller's passkey devices wait for (touchgated's devices
    /// have no terminal of their user's), until cancelled.
    func passkeyPrompts(interaction: any Interaction) async throws(ServiceError)
}

extension TouchgateRequests {
    /// The value of item `name` as its policy decides (``secretGet(_:touchNow:device:interaction:)``).
    public func secretGet(_ name: String, device: String?, interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        try await secretGet(name, touchNow: false, device: device, interaction: interaction)
    }

    /// Creates the vault without a TPM (``initialize(stretching:tpm:interaction:)``).
    public func initialize(stretching: KeyStretching, interaction: any Interaction) async throws(ServiceError) -> InitReport {
        try await initialize(stretching: stretching, tpm: false, interaction: interaction)
    }

    /// Makes an Ed25519 SSH key (``sshKeygen(_:type:policy:fresh:)``).
    public func sshKeygen(_ name: String, policy: String, fresh: Bool) async throws(ServiceError) -> SSHKeyReport {
        try await sshKeygen(name, type: "ssh-ed25519", policy: policy, fresh: fresh)
    }

    /// Unlocks with the passphrase, due or not (`touchgate unlock`).
    public func unlock(interaction: any Interaction) async throws(ServiceError) {
        _ = try await unlock(onlyIfDue: false, interaction: interaction)
    }
}

/// Which process enforces the guarantees.
public enum ServiceMode: String, Codable, Sendable {
    /// This process, as the user it constrains (files in the user's home, key in the
    /// user's kernel keyring).
    case personal
    /// `touchgated`, under its own uid (its own store and memory).
    case system

    /// What the mode protects against, as `status` says it.
    public var trustBoundary: String {
        switch self {
        case .personal:
            "in-process: guards against someone at your unlocked session without your finger and against "
                + "offline theft, not against your own programs (they can read the unlocked key from your keyring "
                + "and roll back your files)"
        case .system:
            "touchgated under its own user: your programs can ask, but cannot read keys, edit or roll back state, "
                + "or forge the audit trail"
        }
    }

    /// What the personal mode protects against when touchgate agent hosts it.
    public static let agentTrustBoundary = "touchgate agent: the unlocked key is in the agent's memory, which your "
        + "other programs cannot read (it is not dumpable); they can still ask the agent, and roll back your files"
}

/// The readers, and when there are none, why.
public struct ReaderInventory: Codable, Sendable, Equatable {
    /// The readers found.
    public var readers: [ReaderReport]
    /// Why none is usable, when none was found.
    public var explanation: String?

    /// A list.
    public init(readers: [ReaderReport], explanation: String?) {
        self.readers = readers
        self.explanation = explanation
    }
}

/// Where `touchgate migrate` moves a personal store: touchgated, reached as a client.
public protocol MigrationTarget: TouchgateRequests {
    /// Hands the personal store's files to the daemon (read-only descriptors: a consistent
    /// copy of the database, then the audit key), which adopts them for the caller's uid
    /// after the passphrase (asked through `interaction`) opens the vault and the audit
    /// chain verifies. `from` is the personal data directory, for the audit record.
    func adopt(database: Int32, auditKey: Int32, from: String,
               interaction: any Interaction) async throws(ServiceError) -> MigrationReport
}
