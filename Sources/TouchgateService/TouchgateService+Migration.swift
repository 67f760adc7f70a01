import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI
import Glibc

extension TouchgateService {
    /// `touchgate migrate`, the client's side: moves this (personal) store into `target`.
    ///
    /// Holds off every other writer of the personal store while it runs (a record written
    /// meanwhile would not be in the moved copy), hands the daemon a consistent copy,
    /// checks through the daemon that the audit trail verifies and the same secrets are
    /// listed, and only then forgets the key in the kernel keyring and removes the personal
    /// files. Until that point a failure, a cancel or a kill leaves the personal store as
    /// it was.
    /// - Throws: ``ServiceError`` `no-vault` when there is no personal vault, and whatever
    ///   the daemon refuses with (nothing is changed then).
    public func migrate(into target: any MigrationTarget,
                        interaction: any Interaction) async throws(ServiceError) -> MigrationReport {
        let directory = location.directory.path
        // Opening the store would create it: look first.
        guard FileManager.default.fileExists(atPath: location.databasePath) else {
            throw ServiceError(.noVault, "no personal vault at \(directory): nothing to migrate (touchgate migrate moves "
                               + "the store `touchgate init` made before touchgated was installed; with touchgated running, "
                               + "run touchgate init to make a vault there)")
        }
        let (local, custody) = try await withStore { store in
            guard try store.vaultExists() else {
                throw ServiceError(.noVault, "no personal vault at \(directory): it holds prints but no vault, so there is "
                                   + "nothing to migrate; enroll again through touchgated and run touchgate init")
            }
            let context = try store.vault()
            return (try context.vault.items().map(\.name).sorted(), context.custody)
        }
        let snapshot = try await serviceErrors { try StoreSnapshot.take(of: location) }
        defer { snapshot.release() }
        var report: MigrationReport
        do throws(ServiceError) {
            report = try await target.adopt(database: snapshot.database, auditKey: snapshot.auditKey, from: directory,
                                            interaction: interaction)
        } catch {
            var error = error
            if error.code != .cancelled {
                error.message += "; your personal store at \(directory) is unchanged"
            }
            throw error
        }
        // The daemon's copy is in place: check it through the daemon before removing anything.
        let kept = "the moved vault is in touchgated, and your personal store at \(directory) is kept: compare the two, "
            + "then remove the personal one yourself (rm -r '\(directory)')"
        do throws(ServiceError) {
            report.auditRecords = try await target.auditVerify()
            let moved = try await target.secretList().map(\.name).sorted()
            guard moved == local else {
                throw ServiceError(.dataError, "touchgated lists \(moved.count) secrets where the personal store has "
                                   + "\(local.count)")
            }
        } catch {
            throw ServiceError(error.code == .cancelled ? .cancelled : .dataError,
                               "checking the moved vault through touchgated failed (\(error.message)); \(kept)")
        }
        do {
            try custody.release()
            try snapshot.removeStore()
        } catch {
            throw ServiceError(.dataError, "the vault moved into touchgated and verified there, but removing the personal "
                               + "copy failed (\(ServiceError.from(error).message)); remove it yourself: rm -r '\(directory)'")
        }
        report.removed = true
        return report
    }

    /// `migrate`, the daemon's side: adopts the store a client passed (see
    /// ``MigrationTarget/adopt(database:auditKey:from:interaction:)``) as this principal's
    /// store, with `peer` (pid, executable) named in the audit record.
    ///
    /// The files are copied into a staging directory of the daemon's own; there the
    /// passphrase must open the vault and the audit chain (with the authenticated state)
    /// must verify; a `vault.migrate` record continues the chain; then the directory is
    /// moved into place and the vault unlocked, as after `touchgate unlock`.
    /// - Throws: `already-initialized` when this principal has a vault or prints here;
    ///   `audit-broken` for a trail that does not verify; `wrong-passphrase`;
    ///   `daemon-unavailable` when another move for the same user runs.
    public func adoptMigration(database: Int32, auditKey: Int32, from path: String, peer: String,
                               interaction: any Interaction) async throws(ServiceError) -> MigrationReport {
        let adoption = StoreAdoption(destination: location)
        let name = principal.loginName
        let from = StoredText.escaped(path)
        return try await serviceErrors {
            guard let exclusive = try adoption.exclusive() else {
                throw ServiceError(.daemonUnavailable, "another touchgate migrate for \(name) is running; let it end, "
                                   + "then check with touchgate status")
            }
            defer { close(exclusive) }
            adoption.removeAbandoned()
            if FileManager.default.fileExists(atPath: location.databasePath) {
                let existing = try TouchgateDatabase(location: location)
                if try Vault.exists(in: existing) || !(try PrintStore(database: existing, sealing: TemplatesWithheld()).prints().isEmpty) {
                    throw ServiceError(.alreadyInitialized, "touchgated already holds a vault or prints for \(name), so "
                                       + "the personal store cannot move in beside them; nothing was changed. If an "
                                       + "earlier migrate finished (touchgate audit show --event vault.migrate), remove "
                                       + "the personal copy yourself; otherwise move its secrets one by one "
                                       + "(TOUCHGATE_SOCKET= touchgate secret get, then touchgate secret add)")
                }
            }
            let staged = try adoption.stage(database: database, auditKey: auditKey)
            var report: MigrationReport
            let key: VaultKey
            do {
                (report, key) = try await checkAndRecord(staged, from: from, peer: peer, interaction: interaction)
                try adoption.commit(staged)
            } catch {
                adoption.discard(staged)
                throw error
            }
            // In place: unlocked, as after `touchgate unlock` (the passphrase was just entered).
            report.auditRecords = try await withStore { store in
                let context = try store.vault()
                _ = try await context.evaluator.unlock(passphrase: AlreadyVerified())
                try context.custody.hold(key)
                guard case .intact(let count) = try context.audit.verify() else {
                    throw ServiceError(.auditBroken, "the moved audit trail stopped verifying after it was moved in")
                }
                return count
            }
            return report
        }
    }

    /// In the staging directory: the passphrase opens the vault, the chain and state
    /// verify, and the migration is recorded.
    private func checkAndRecord(_ staged: StoreLocation, from: String, peer: String,
                                interaction: any Interaction) async throws -> (MigrationReport, VaultKey) {
        let database = try TouchgateDatabase(location: staged)
        defer { try? database.closeConnections() }
        // The daemon's own signing key, made before the log opens: the moved seal, signed by
        // the personal key its user holds, is re-signed with it by the migration record.
        try AuditLog.prepareSigningKey(in: staged)
        let audit = try AuditLog(database: database)
        switch try audit.verify(sealedByItsOwnKey: true) {
        case .intact:
            break
        case .broken(let sequence, let reason):
            throw ServiceError(.auditBroken, "the personal store's audit trail does not verify (record \(sequence): "
                               + "\(reason)), so it was not moved; check it without the daemon: TOUCHGATE_SOCKET= "
                               + "touchgate audit verify")
        }
        let vault = try Vault.open(database: database, owner: principal.loginName)
        let (_, key) = try await PassphraseEntry.open(vault, interaction: interaction,
                                                      prompt: "Passphrase of the personal vault to move into touchgated")
        let items = try vault.items().count
        let prints = try PrintStore(database: database, sealing: TemplatesWithheld()).prints().count
        let record = try audit.adoptSeal(AuditEntry(
            event: .vaultMigrate, outcome: .success, vaultUser: vault.owner,
            reason: "moved into touchgated from \(from) (as the client said), by \(peer); \(items) secret\(items == 1 ? "" : "s"), \(prints) print\(prints == 1 ? "" : "s")"))
        guard case .intact(let count) = try audit.verify() else {
            throw ServiceError(.auditBroken, "the audit trail stopped verifying after record \(record.sequence)")
        }
        let report = MigrationReport(from: from, directory: location.directory.path, items: items, prints: prints,
                                     auditRecords: count, removed: false)
        // Every connection closed here, before the directory moves: none may outlive it under the old name.
        try database.closeConnections()
        return (report, key)
    }
}
