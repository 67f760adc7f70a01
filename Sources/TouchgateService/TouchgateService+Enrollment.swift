import FingerprintKit
import FoundationEssentials
import Synchronization
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

extension TouchgateService {
    /// Enrolls `finger` of `user` (default: the principal) on `device`.
    ///
    /// Once a vault exists this needs the key held and the passphrase, and destroys every
    /// `biometry-current-set` secret: those are listed and must be confirmed first. The
    /// reader and the finger are checked before anything is asked. The print, the new
    /// enrollment generation, the destroyed keys and the audit record are one change.
    public func enroll(finger fingerName: String, user: String? = nil, replace: Bool = false, device: String? = nil,
                       interaction: any Interaction) async throws(ServiceError) -> EnrollReport {
        try await withStore { store in
            guard let finger = Vocabulary.finger(fingerName).flatMap(Finger.init(name:)) else {
                throw ServiceError.usage("unknown finger '\(StoredText.escaped(fingerName))'; use one of: "
                                         + Vocabulary.fingers.joined(separator: ", "))
            }
            let user = user ?? principal.loginName
            try Self.checkName(user, what: "user")
            try await refuseWhileFprintdOwnsTheReader(device: device, "enrolled")
            let prints = try store.printStore()
            let vault = try store.vaultIfPresent()
            try vault?.requireIntactState()
            let reader = try await readers.open(device: device, interaction: interaction)
            let (stored, invalidated) = try await closing(reader, { await $0.close() }) { reader in
                let (print, pending) = try await Self.enroll(reader: reader, interaction: interaction, store: store,
                                                             prints: prints, finger: finger, user: user,
                                                             replace: replace) {
                    try await vault?.confirmAndAuthorize(.enroll, "Enrolling \(finger.name)", interaction)
                }
                let info = reader.info
                let stored = StoredPrint(user: user, finger: finger.name, driver: info.driver, deviceID: info.deviceID,
                                         enrolledAt: Date(), onDevice: print.onDevice, template: print.serialized)
                do {
                    // Cancelled after the reader stored the print and before the store took it (also while
                    // waiting for the database): it goes from the reader, rather than the store keeping it.
                    let invalidated = try await Self.unlessCancelled { cancelled in
                        try (vault?.audit ?? store.audit()).atomically { transaction in
                            if cancelled.isSet { throw CancellationError() }
                            try transaction.save(stored, replace: replace, in: prints)
                            if let pending {
                                // The mark goes with the save: a mark still there means the store never got the print.
                                try ReaderLedger.update(ReaderLedger.key(info), in: transaction) { ledger in
                                    ledger.pending.removeAll { $0.nonce == pending.nonce }
                                    ledger.enrolled.removeAll { $0.user == user && $0.finger == finger.name }
                                    ledger.enrolled.append(.init(user: user, finger: finger.name, nonce: pending.nonce))
                                }
                            }
                            return try EnrollmentTracker.recordChange(.enroll, print: EnrollmentTracker.printID(stored),
                                                                      in: transaction, store: store, context: vault)
                        }
                    }
                    return (stored, invalidated)
                } catch {
                    if let pending, let session = reader.session, let chip = print.print {
                        await Self.discard(chip, nonce: pending.nonce, session: session, store: store)
                    }
                    throw error
                }
            }
            return EnrollReport(user: stored.user, finger: stored.finger, driver: stored.driver,
                                deviceID: stored.deviceID, onDevice: stored.onDevice, invalidated: invalidated)
        }
    }

    /// Runs `body` unless the request is cancelled first; `body` gets a flag that turns on
    /// when the request is cancelled while it runs (a transaction checks it once it holds
    /// the database, so that a cancel during the wait for the lock still keeps nothing).
    private static func unlessCancelled<T>(_ body: (CancellationFlag) throws -> T) async throws -> T {
        let flag = CancellationFlag()
        return try await withTaskCancellationHandler {
            try Task.checkCancellation()
            return try body(flag)
        } onCancel: {
            flag.set()
        }
    }

    /// Checks the finger is not enrolled yet, then runs `authorize` (confirmation and
    /// passphrase), then enrolls: nothing is asked before what can fail without asking.
    ///
    /// On a reader with its own storage, first removes what an interrupted enrollment left
    /// there, then records this enrollment as pending (committed) and enrolls under the
    /// username ``ChipLabel/username(nonce:user:)`` (see ``ReaderLedger``). When the reader
    /// fails or the request is cancelled before the print is returned, whatever the reader
    /// may have kept under that nonce is removed at once where it can be.
    /// - Returns: the print and, on a reader with storage, its pending mark.
    private static func enroll(reader: any ReaderHandle, interaction: any Interaction, store: StoreAccess,
                               prints: PrintStore, finger: Finger, user: String, replace: Bool,
                               authorize: () async throws -> Void) async throws -> (EnrolledTemplate, ReaderLedger.Pending?) {
        let info = reader.info
        // Only libfprint's readers keep prints on a chip.
        let session = reader.session
        let existing = try prints.prints(user: user, finger: finger.name, driver: info.driver, deviceID: info.deviceID)
        if !existing.isEmpty && !replace {
            throw StoreError.alreadyEnrolled(user: user, finger: finger.name)
        }
        try await authorize()
        var pending: ReaderLedger.Pending?
        if let session, info.features.contains(.storage) {
            try await reconcile(session, store: store)
            let mark = ReaderLedger.Pending(nonce: ChipLabel.newNonce(), user: user, finger: finger.name, started: Date())
            try store.audit().atomically { transaction in
                try ReaderLedger.update(ReaderLedger.key(info), in: transaction) { $0.pending.append(mark) }
            }
            pending = mark
        }
        var start = InteractionEvent(.enrollStart, "Enrolling \(finger.name) of \(user) on \(info.name): "
                                     + "\(info.enrollStages) scans.")
        start.user = user
        start.finger = finger.name
        start.deviceID = info.deviceID
        start.stages = info.enrollStages
        interaction.event(start)
        // A print on the reader's own storage is replaced there too.
        for old in existing where old.onDevice {
            if let session, let print = try? await Print(serialized: old.template) {
                try? await session.reader.deletePrint(print)
            }
        }
        // A replayed recording (FP_DEVICE_EMULATION=1) only goes on if the user id sent to the
        // reader is the recorded one byte for byte, which is why libfprint itself leaves its
        // random part out then; the label is left out too (the user name alone is sent).
        let replaying = Invocation.environment("FP_DEVICE_EMULATION") == "1"
        let username = replaying ? user : pending.map { ChipLabel.username(nonce: $0.nonce, user: user) } ?? user
        do {
            return (try await reader.enroll(finger: finger, username: username), pending)
        } catch {
            if pending != nil, let session {
                // Readers normally keep nothing from a failed enrollment; make sure, without waiting for next time.
                await Task { _ = try? await reconcile(session, store: store) }.value
            }
            if case DeviceErrorCode.dataDuplicate = error {
                throw ServiceError(.alreadyEnrolled,
                                   "the reader says this finger is already enrolled on it (perhaps under another "
                                       + "user or finger name); delete that print first (touchgate prints list)")
            }
            throw error
        }
    }

    /// The enrolled prints (of `user`, or everyone's), never their templates, without
    /// asking any reader (see ``printsList(user:device:interaction:)``). Works while locked.
    public func prints(user: String? = nil) async throws(ServiceError) -> [PrintReport] {
        try await withStore { store in try store.printIndex().prints(user: user).map(Self.report) }
    }

    /// Deletes `finger` of `user` (from the reader too, when it stores prints). Once a
    /// vault exists this needs the passphrase and destroys every `biometry-current-set` secret.
    public func printsDelete(finger fingerName: String, user: String? = nil, device: String? = nil,
                            interaction: any Interaction) async throws(ServiceError) -> DeleteReport {
        try await withStore { store in
            guard let finger = Vocabulary.finger(fingerName) else {
                throw ServiceError.usage("unknown finger '\(StoredText.escaped(fingerName))'")
            }
            let user = user ?? principal.loginName
            let index = store.printIndex()
            var matches = try index.prints(user: user, finger: finger)
            if let device { matches = matches.filter { $0.deviceID == device || $0.driver == device } }
            guard !matches.isEmpty else {
                try await refuseWhileFprintdOwnsTheReader(device: device, "deleted")
                throw ServiceError.nothingEnrolled("\(finger) of \(StoredText.escaped(user)) is not enrolled; "
                                                   + "see: touchgate prints list")
            }
            let vault = try store.vaultIfPresent()
            try vault?.requireIntactState()
            try await vault?.confirmAndAuthorize(.delete, "Deleting \(finger) of \(user)", interaction)
            let prints = matches.contains(where: \.onDevice) ? try store.printStore() : index
            // Templates are needed only to delete a print from the reader's own storage.
            matches = try prints.prints(user: user, finger: finger).filter { candidate in
                matches.contains { $0.driver == candidate.driver && $0.deviceID == candidate.deviceID }
            }
            for stored in matches where stored.onDevice {
                // The reader's copy goes first, so a failure leaves both in place.
                try await ReaderSession.with(device: stored.deviceID, interaction: interaction, pool: readerPool) { session in
                    try await session.reader.deletePrint(try await Print(serialized: stored.template))
                }
            }
            var invalidated: [String] = []
            for stored in matches {
                invalidated += try (vault?.audit ?? store.audit()).atomically { transaction in
                    _ = try transaction.deletePrint(user: stored.user, finger: stored.finger, driver: stored.driver,
                                                    deviceID: stored.deviceID)
                    if stored.onDevice {
                        try ReaderLedger.update(ReaderLedger.key(driver: stored.driver, deviceID: stored.deviceID),
                                                in: transaction) { ledger in
                            ledger.enrolled.removeAll { $0.user == stored.user && $0.finger == stored.finger }
                        }
                    }
                    return try EnrollmentTracker.recordChange(.delete, print: EnrollmentTracker.printID(stored),
                                                              in: transaction, store: store, context: vault)
                }
            }
            return DeleteReport(user: user, finger: finger, count: matches.count, invalidated: invalidated)
        }
    }

    /// Wipes a reader's own storage and forgets every print made on it. Once a vault
    /// exists this needs the passphrase and destroys every `biometry-current-set` secret.
    public func printsClear(device: String? = nil, interaction: any Interaction) async throws(ServiceError) -> ClearReport {
        try await withStore { store in
            try await refuseWhileFprintdOwnsTheReader(device: device, "cleared")
            let vault = try store.vaultIfPresent()
            try vault?.requireIntactState()
            let info = try await ReaderSession.with(device: device, interaction: interaction, pool: readerPool) { session in
                try await vault?.confirmAndAuthorize(.delete, "Clearing \(session.info.name)", interaction)
                try await session.reader.clearStorage()
                return session.info
            }
            let (count, invalidated) = try (vault?.audit ?? store.audit()).atomically { transaction in
                let count = try transaction.deleteAllPrints(driver: info.driver, deviceID: info.deviceID)
                // The reader is empty now: nothing of ours, pending or enrolled, is left on it.
                try ReaderLedger.update(ReaderLedger.key(info), in: transaction) { $0 = ReaderLedger() }
                guard count > 0 else { return (0, [String]()) }
                let invalidated = try EnrollmentTracker.recordChange(
                    .delete, print: EnrolledPrintID("*@\(info.driver):\(info.deviceID)"), in: transaction, store: store,
                    context: vault)
                return (count, invalidated)
            }
            return ClearReport(deviceID: info.deviceID, forgotten: count, invalidated: invalidated)
        }
    }

    static func report(_ print: StoredPrint) -> PrintReport {
        PrintReport(user: print.user, finger: print.finger, driver: print.driver, deviceID: print.deviceID,
                    enrolled: print.enrolledAt, onDevice: print.onDevice)
    }
}

/// Whether the request was cancelled, readable from the database's own thread (where
/// `Task.isCancelled` does not see the request's task).
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
}
