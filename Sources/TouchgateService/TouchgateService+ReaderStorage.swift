import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

/// Readers with their own storage (match-on-chip), kept in step with the store: what
/// they hold beside what the store holds, prints the store does not know, and what an
/// interrupted enrollment left behind. See ``ReaderLedger`` for what Touchgate writes.
extension TouchgateService {
    /// The enrolled prints (of `user`, or everyone's), never their templates, and for each
    /// connected reader with its own storage (or only `device`), what it holds beside them.
    ///
    /// Needs neither the passphrase nor the unlocked vault: prints are matched by the
    /// label Touchgate wrote to the reader (``ReaderLedger``), and by libfprint's print
    /// equality when the templates can be read (no vault yet, or the vault unlocked). A
    /// reader that is busy or cannot list is named in a note; the store is listed all the same.
    public func printsList(user: String? = nil, device: String? = nil,
                          interaction: any Interaction) async throws(ServiceError) -> PrintListReport {
        try await withStore { store in
            let all = try store.printIndex().prints()
            var states: [Int: ReaderState] = [:]
            var orphans: [ReaderPrintReport] = []
            var readers: [ReaderStorageReport] = []
            let (context, connected) = await connectedReaders()
            for reader in connected where reader.info.features.contains(.storage) {
                let info = reader.info
                if let device, device != info.deviceID && device != info.driver { continue }
                do {
                    let held = try await withOpened(reader, context: context, interaction: interaction) { session in
                        _ = try await Self.reconcile(session, store: store)
                        guard info.features.contains(.storageList) else { return [Print]?.none }
                        return try await session.reader.listPrints()
                    }
                    guard let held else {
                        readers.append(ReaderStorageReport(deviceID: info.deviceID, driver: info.driver, compared: false,
                                                           note: "it cannot list the prints it holds"))
                        continue
                    }
                    let here = all.indices.filter { all[$0].driver == info.driver && all[$0].deviceID == info.deviceID
                        && all[$0].onDevice }
                    let comparison = try await Self.compare(held: held, rows: here.map { all[$0] }, info: info,
                                                            store: store, templates: try? store.printStore())
                    for (offset, index) in here.enumerated() { states[index] = comparison.states[offset] }
                    orphans += comparison.orphans.map { ReaderPrintReport($0, reader: info) }
                    readers.append(ReaderStorageReport(
                        deviceID: info.deviceID, driver: info.driver, compared: true, held: held.count,
                        note: comparison.states.contains(nil)
                            ? "some prints could not be compared while the vault is locked; run: touchgate unlock" : nil))
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    readers.append(ReaderStorageReport(deviceID: info.deviceID, driver: info.driver, compared: false,
                                                       note: "not checked: \(Self.briefly(error))"))
                }
            }
            let prints = all.indices.filter { user == nil || all[$0].user == user }.map { index in
                var report = Self.report(all[index])
                report.readerState = states[index] ?? nil
                return report
            }
            return PrintListReport(prints: prints, orphans: orphans, readers: readers)
        }
    }

    /// Deletes from a reader's own storage every print the store does not know (an
    /// orphan), one by one, so readers without "clear" are served too.
    ///
    /// The orphans are listed and must be confirmed first; once a vault exists the
    /// passphrase is needed too (it opens the stored prints for an exact comparison when
    /// the vault is locked). Each deletion is audited as `finger.delete`.
    ///
    /// `biometry-current-set` secrets are untouched: the enrolled set they are bound to is
    /// the store's prints (``EnrollmentTracker``), and an orphan never was one of them, so
    /// removing it changes neither the set's digest nor its generation.
    public func printsDeleteOrphans(device: String? = nil, interaction: any Interaction) async throws(ServiceError) -> OrphanDeleteReport {
        try await withStore { store in
            let vault = try store.vaultIfPresent()
            try vault?.requireIntactState()
            return try await ReaderSession.with(device: device, interaction: interaction, pool: readerPool) { session in
                let info = session.info
                guard info.features.contains(.storage) else {
                    throw ServiceError.usage("\(info.name) (\(info.deviceID)) keeps no prints of its own; nothing to delete")
                }
                guard info.features.isSuperset(of: [.storageList, .storageDelete]) else {
                    throw ServiceError.readerError("\(info.name) cannot list or delete single prints, so orphans cannot be "
                                                   + "told apart; touchgate prints clear --yes wipes its storage")
                }
                _ = try await Self.reconcile(session, store: store)
                let held = try await session.reader.listPrints()
                var authorized = false
                var templates: PrintStore
                if let vault {
                    if let key = try vault.custody.currentKey() {
                        templates = try vault.printStore(key: key)
                    } else {
                        templates = try vault.printStore(key: try await vault.checkPassphrase(
                            interaction, purpose: "delete prints from the reader"))
                        authorized = true
                    }
                } else {
                    templates = PrintStore(database: store.database)
                }
                let rows = try store.printIndex().prints(driver: info.driver, deviceID: info.deviceID).filter(\.onDevice)
                let orphans = try await Self.compare(held: held, rows: rows, info: info, store: store,
                                                     templates: templates).orphans
                guard !orphans.isEmpty else {
                    return OrphanDeleteReport(deviceID: info.deviceID, driver: info.driver, deleted: [], remaining: held.count)
                }
                let reports = orphans.map { ReaderPrintReport($0, reader: info) }
                let what = "\(orphans.count) print\(orphans.count == 1 ? "" : "s") that the store does not know"
                guard try await interaction.confirm("Delete \(what) from \(info.name)?", details: reports.map(\.summary)) else {
                    throw ServiceError(.declined, "not confirmed, so nothing was deleted (\(Self.withoutTerminal))")
                }
                if let vault, !authorized {
                    _ = try await vault.checkPassphrase(interaction, purpose: "delete prints from the reader")
                }
                let log = try vault?.audit ?? store.audit()
                for (print, report) in zip(orphans, reports) {
                    try await session.reader.deletePrint(print)
                    try log.append(.fingerDelete, .success, vaultUser: vault?.vault.owner,
                                   reason: "orphan removed from \(info.driver):\(info.deviceID) (\(report.summary)); "
                                       + "it was not in the store")
                }
                let remaining = try? await session.reader.listPrints().count
                return OrphanDeleteReport(deviceID: info.deviceID, driver: info.driver, deleted: reports,
                                          remaining: remaining)
            }
        }
    }

    // MARK: Helpers shared with enroll, delete and verify

    /// Opens `reader` (found in `context`, or in the pool when `context` is nil), runs
    /// `body`, and closes it (or gives it back to the pool).
    func withOpened<T: Sendable>(_ reader: Reader, context: FingerprintContext?, interaction: any Interaction,
                                 _ body: (ReaderSession) async throws -> T) async throws -> T {
        if let readerPool, context == nil {
            return try await ReaderSession.with(device: reader.info.deviceID, interaction: interaction, pool: readerPool,
                                                body)
        }
        try await reader.open()
        return try await closing(ReaderSession(context: context, reader: reader, interaction: interaction),
                                 { await $0.close() }, body)
    }

    /// The readers connected now: the pool's when there is one (context nil), else those
    /// of a new context, returned with them so it lives as long as they are used.
    func connectedReaders() async -> (context: FingerprintContext?, readers: [Reader]) {
        if let readerPool { return (nil, await readerPool.readers().map(\.reader)) }
        let context = await FingerprintContext()
        return (context, await context.readers())
    }

    /// Matches what a reader holds with the store's prints made on it (`rows`).
    ///
    /// Template equality (libfprint's `fp_print_equal`) decides wherever the row's template
    /// can be read: the label Touchgate writes (`touchgate-<nonce>-<user>`) is visible to
    /// anyone who lists the reader, so a foreign print may copy it, and a label alone must
    /// neither hide a real print of ours behind a copy nor make the copy count as ours. A
    /// row is matched by its label only when its template cannot be read (the vault is
    /// locked, or the template does not load). A held print equal to any stored template of
    /// this reader is never an orphan, even when no row claims it (a second copy of ours).
    /// - Returns: per row `in-step`, `missing-on-reader`, or nil when it could not be told
    ///   (no label and no template); and the held prints no row claims.
    static func compare(held: [Print], rows: [StoredPrint], info: ReaderInfo, store: StoreAccess,
                        templates: PrintStore?) async throws -> (states: [ReaderState?], orphans: [Print]) {
        let ledger = try ReaderLedger.read(StateStore(log: try store.audit()), info)
        var loaded: [Print] = []
        var rowTemplates: [Print?] = Array(repeating: nil, count: rows.count)
        if let templates {
            for stored in try templates.prints(driver: info.driver, deviceID: info.deviceID) {
                guard let print = try? await Print(serialized: stored.template) else { continue }
                loaded.append(print)
                if let index = rows.firstIndex(where: { $0.user == stored.user && $0.finger == stored.finger }) {
                    rowTemplates[index] = print
                }
            }
        }
        var unclaimed = Array(held.indices)
        var states: [ReaderState?] = Array(repeating: nil, count: rows.count)
        // Equality first, for every row whose template loaded, so that no label can take its place.
        for (index, template) in rowTemplates.enumerated() {
            guard let template else { continue }
            if let claimed = unclaimed.firstIndex(where: { template == held[$0] }) {
                unclaimed.remove(at: claimed)
                states[index] = .inStep
            } else {
                states[index] = .missingOnReader
            }
        }
        // Labels only for the rows that could not be compared.
        for (index, row) in rows.enumerated() where rowTemplates[index] == nil {
            guard let nonce = ledger.nonce(user: row.user, finger: row.finger) else { continue }
            if let claimed = unclaimed.firstIndex(where: { ChipLabel.nonce(in: held[$0].username) == nonce }) {
                unclaimed.remove(at: claimed)
                states[index] = .inStep
            } else {
                states[index] = .missingOnReader
            }
        }
        let orphans = unclaimed.map { held[$0] }.filter { print in !loaded.contains { $0 == print } }
        return (states, orphans)
    }

    /// Deletes from the reader every print that a pending enrollment of Touchgate's left
    /// there (one that never reached the store), records each, and drops the pending marks.
    /// Prints that merely look foreign are never touched here.
    /// - Returns: what was removed.
    @discardableResult
    static func reconcile(_ session: ReaderSession, store: StoreAccess) async throws -> [ReaderPrintReport] {
        let info = session.info
        let log = try store.audit()
        let ledger = try ReaderLedger.read(StateStore(log: log), info)
        guard !ledger.pending.isEmpty else { return [] }
        let vaultUser = try store.vaultExists() ? store.principal.loginName : nil
        let nonces = Set(ledger.pending.map(\.nonce))
        guard info.features.isSuperset(of: [.storageList, .storageDelete]) else {
            try log.atomically { transaction in
                try transaction.append(.fingerDelete, .error, vaultUser: vaultUser,
                                       reason: "\(info.driver):\(info.deviceID) cannot list its prints: an interrupted "
                                           + "enrollment may have left one there (touchgate prints clear removes it)")
                try ReaderLedger.update(ReaderLedger.key(info), in: transaction) { $0.pending = [] }
            }
            return []
        }
        var removed: [ReaderPrintReport] = []
        for print in try await session.reader.listPrints() {
            guard let nonce = ChipLabel.nonce(in: print.username), nonces.contains(nonce) else { continue }
            try await session.reader.deletePrint(print)
            let report = ReaderPrintReport(print, reader: info)
            removed.append(report)
            try log.append(.fingerDelete, .success, vaultUser: vaultUser,
                           reason: "removed \(print.username ?? "") from \(info.driver):\(info.deviceID): left by an "
                               + "enrollment that was interrupted before the store saved it")
        }
        try log.atomically { transaction in
            try ReaderLedger.update(ReaderLedger.key(info), in: transaction) { ledger in
                ledger.pending.removeAll { nonces.contains($0.nonce) }
            }
        }
        return removed
    }

    /// After the reader stored a print that the store will not keep (saving failed, or the
    /// request was cancelled): deletes it from the reader at once, even in a cancelled
    /// task, records that, and drops its pending mark. When that fails too, the mark stays
    /// and the next operation on the reader finishes the job (``reconcile(_:store:)``).
    static func discard(_ print: Print, nonce: String, session: ReaderSession, store: StoreAccess) async {
        // A new task: the request's own may be cancelled, and the reader must still be cleaned.
        await Task {
            do {
                try await session.reader.deletePrint(print)
            } catch {
                return
            }
            let info = session.info
            let vaultUser = (try? store.vaultExists()) == true ? store.principal.loginName : nil
            try? store.audit().atomically { transaction in
                try transaction.append(.fingerDelete, .success, vaultUser: vaultUser,
                                       reason: "removed \(print.username ?? "") from \(info.driver):\(info.deviceID): the "
                                           + "enrollment did not finish, so the store did not keep it")
                try ReaderLedger.update(ReaderLedger.key(info), in: transaction) { ledger in
                    ledger.pending.removeAll { $0.nonce == nonce }
                }
            }
        }.value
    }

    /// Which of `prints` (stored prints about to be matched) the reader provably no longer
    /// holds: those carrying a Touchgate label that no print on the reader carries, or equal
    /// to none of them. Empty on readers that cannot list, and for prints it cannot tell.
    static func lostFromReader(_ prints: [Print], session: ReaderSession) async throws -> Set<Int> {
        guard session.info.features.contains(.storageList) else { return [] }
        let held = try await session.reader.listPrints()
        var lost: Set<Int> = []
        for (index, print) in prints.enumerated() where print.isDeviceStored {
            guard let nonce = ChipLabel.nonce(in: print.username) else { continue }
            if !held.contains(where: { ChipLabel.nonce(in: $0.username) == nonce || $0 == print }) { lost.insert(index) }
        }
        return lost
    }

    /// An error in a few words, for a note.
    static func briefly(_ error: any Error) -> String {
        let service = ServiceError.from(error)
        return service.message
    }
}
