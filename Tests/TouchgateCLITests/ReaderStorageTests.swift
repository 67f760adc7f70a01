import Foundation
import Testing
import TouchgateTestSupport

/// A match-on-chip reader (libfprint's virtual_device_storage) for end-to-end runs.
///
/// The driver keeps its storage in the memory of the process that opened it, so the test
/// plays the chip's memory: each run starts with the ids in `held` INSERTed as soon as the
/// reader listens, and the test updates `held` from what the run did. Enrollment scans an
/// id built the way libfprint's match-on-chip drivers build theirs
/// (`FP1-<date>-<finger>-<random>-<username>`, `fpi_print_generate_user_id`), from the
/// username Touchgate recorded for the enrollment before the reader started.
final class StorageReaderRig: @unchecked Sendable {
    let home: TemporaryDirectory
    let client: VirtualDeviceClient
    let process: CLIProcess

    init() throws {
        home = try TemporaryDirectory("touchgate-chip")
        let socket = home.path("virtual-device.socket")
        client = VirtualDeviceClient(socketPath: socket)
        process = CLIProcess(environment: [
            "HOME": home.url.path, "XDG_DATA_HOME": home.path("data"),
            "FP_VIRTUAL_DEVICE_STORAGE": socket, "FP_DRIVERS_WHITELIST": "virtual_device_storage",
        ])
    }

    var database: String { home.path("data/touchgate/touchgate.sqlite") }

    /// Runs touchgate with the reader holding `held`; each prompt for a finger is answered
    /// with `SCAN` of `scan(nonce-label)` (once per stage for enroll). `onLine` sees every
    /// stderr line after that.
    func run(_ arguments: [String], held: [String], scanning scan: (@Sendable (String) async -> String)? = nil, stages: Int = 5,
             stdin: Data? = nil, onLine: @escaping @Sendable (String, RunningProcess) -> Void = { _, _ in }) async throws -> CLIResult {
        let inserted = DispatchSemaphore(value: 0)
        let client = self.client
        Thread.detachNewThread {
            // As soon as the reader listens: what the chip holds.
            for id in held { _ = try? client.send("INSERT \(id)", expectReply: true) }
            inserted.signal()
        }
        let answered = LockedFlag()
        let database = self.database
        let result = try await process.run(arguments, stdin: stdin) { line, process in
            if VirtualImageFinger.isPrompt(line), let scan, answered.setOnce() {
                inserted.wait()
                inserted.signal()
                let id = await scan(await Self.pendingLabel(database) ?? "none")
                for _ in 0..<stages { _ = try? client.send("SCAN \(id)", expectReply: true) }
            }
            onLine(line, process)
        }
        _ = inserted.wait(timeout: .now() + 6)
        return result
    }

    /// The chip id a match-on-chip driver makes for `username` and `finger` (libfprint's finger number).
    static func chipID(_ username: String, finger: Int) -> String {
        "FP1-20261121-\(String(finger, radix: 16, uppercase: true))-1A2B3C4D-\(username)"
    }

    /// The username Touchgate recorded for the pending enrollment on the reader.
    static func pendingLabel(_ database: String) async -> String? {
        guard let text = try? await sqlite(database, "SELECT CAST(value AS TEXT) FROM vault_state "
                                         + "WHERE key = 'enrollment.chip.virtual_device_storage:0'"),
              let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let pending = (json["pending"] as? [[String: Any]])?.last,
              let nonce = pending["nonce"] as? String, let user = pending["user"] as? String else { return nil }
        return "touchgate-\(nonce)-\(user)"
    }

    func sql(_ statement: String) async throws -> String { try await Self.sqlite(database, statement) }

    static func sqlite(_ database: String, _ statement: String) async throws -> String {
        let result = try await runProgram("/usr/bin/sqlite3", ["-cmd", ".timeout 5000", database, statement])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Holds the database's write lock (another writer's transaction) until ``release()``.
    final class WriteLock: Sendable {
        private let process: BackgroundProcess

        init(_ database: String) async throws {
            let output = LineCollector()
            process = try await BackgroundProcess.start("/usr/bin/sqlite3", [database], environment: [:],
                                                        holdingInputOpen: true, output: .lines { output.append($0) })
            try process.write(".timeout 5000\nBEGIN IMMEDIATE;\nSELECT 'locked';\n")
            for _ in 0..<500 where !output.lines.contains("locked") {
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        private let released = LockedFlag()

        func release() {
            guard released.setOnce() else { return }
            try? process.write("ROLLBACK;\n.quit\n")
            process.closeInput()
            process.waitUntilEnded(seconds: 10)
        }
    }
}

/// `prints list` and `prints delete --orphans` on a reader with its own storage, and
/// enrollments interrupted after the reader stored the print.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct ReaderStorageTests {
    static let rightIndex = 7, leftIndex = 2

    /// Enrolls `finger` on a reader holding `held`; returns the chip id it stored.
    private func enroll(_ rig: StorageReaderRig, _ finger: String, number: Int, held: [String]) async throws -> String {
        let ids = LockedBox<String>()
        let result = try await rig.run(["enroll", "--json", "--finger", finger], held: held, scanning: { label in
            let id = StorageReaderRig.chipID(label, finger: number)
            ids.set(id)
            return id
        })
        try #require(result.status == 0, "\(result.stderrLines)")
        return try #require(ids.value)
    }

    private func list(_ rig: StorageReaderRig, held: [String]) async throws -> [String: Any] {
        let result = try await rig.run(["prints", "list", "--json"], held: held)
        try #require(result.status == 0, "\(result.stderrLines)")
        return try #require(result.json)
    }

    private func state(_ list: [String: Any], _ finger: String) -> String? {
        (list["prints"] as? [[String: Any]])?.first { $0["finger"] as? String == finger }?["reader-state"] as? String
    }

    @Test func listShowsInStepMissingAndOrphanAndVerifySaysWhatToDo() async throws {
        let rig = try StorageReaderRig()
        defer { rig.home.remove() }
        let right = try await enroll(rig, "right-index", number: Self.rightIndex, held: [])
        #expect(right.contains("-touchgate-"), "the chip id carries Touchgate's label: \(right)")
        let left = try await enroll(rig, "left-index", number: Self.leftIndex, held: [right])

        let inStep = try await list(rig, held: [right, left])
        #expect(state(inStep, "right-index") == "in-step")
        #expect(state(inStep, "left-index") == "in-step")
        #expect((inStep["orphans"] as? [[String: Any]])?.isEmpty == true)

        // The reader lost the left print, and holds someone else's print.
        let foreign = StorageReaderRig.chipID("bob", finger: Self.rightIndex)
        let drifted = try await list(rig, held: [right, foreign])
        #expect(state(drifted, "right-index") == "in-step")
        #expect(state(drifted, "left-index") == "missing-on-reader")
        let orphans = try #require(drifted["orphans"] as? [[String: Any]])
        #expect(orphans.count == 1)
        #expect(orphans.first?["chip-user"] as? String == "bob")
        #expect(orphans.first?["finger"] as? String == "right-index")
        #expect(orphans.first?["touchgate"] as? Bool == false)
        #expect(orphans.first?["reader-state"] as? String == "orphan")
        let readers = try #require(drifted["readers"] as? [[String: Any]])
        #expect(readers.first?["held"] as? Int == 2 && readers.first?["compared"] as? Bool == true)

        let text = try await rig.run(["prints", "list"], held: [right, foreign])
        #expect(text.stdout.contains("right-index") && text.stdout.contains("in step"), "\(text.stdout)")
        #expect(text.stdout.contains("only in store (missing on reader)"), "\(text.stdout)")
        #expect(text.stdout.contains("user bob") && text.stdout.contains("only on reader (orphan)"), "\(text.stdout)")
        // Listing deleted nothing: a foreign print goes only on request.
        let unchanged = try await list(rig, held: [right, foreign])
        #expect((unchanged["orphans"] as? [Any])?.count == 1)

        // verify of the lost finger says what to do.
        let verify = try await rig.run(["verify", "--finger", "left-index"], held: [right], scanning: { _ in left },
                                       stages: 1)
        #expect(verify.status == 3, "\(verify.stderrLines)")
        #expect(verify.stderrLines.joined().contains("no longer holds"), "\(verify.stderrLines)")
        #expect(verify.stderrLines.joined().contains("touchgate prints list"), "\(verify.stderrLines)")
    }

    @Test func deleteOrphansAsksThenDeletesOnlyWhatTheStoreDoesNotKnow() async throws {
        let rig = try StorageReaderRig()
        defer { rig.home.remove() }
        let right = try await enroll(rig, "right-index", number: Self.rightIndex, held: [])
        let foreign = StorageReaderRig.chipID("bob", finger: Self.leftIndex)
        let bare = "fprintd-print-7"

        // No terminal and no --yes: refused, nothing deleted.
        let refused = try await rig.run(["prints", "delete", "--orphans", "--json"], held: [right, foreign, bare])
        #expect(refused.status == 11, "\(refused.stderrLines)")
        #expect(refused.json?["error"] as? String == "declined")

        let deleted = try await rig.run(["prints", "delete", "--orphans", "--yes", "--json"],
                                        held: [right, foreign, bare])
        #expect(deleted.status == 0, "\(deleted.stderrLines)")
        let report = try #require(deleted.json)
        #expect((report["deleted"] as? [[String: Any]])?.count == 2)
        #expect((report["deleted"] as? [[String: Any]])?.contains { $0["chip-user"] as? String == "bob" } == true)
        #expect(report["remaining"] as? Int == 1, "the enrolled print stays on the reader")
        #expect(try await rig.sql("SELECT count(*) FROM audit WHERE event = 'finger.delete' AND reason LIKE 'orphan removed%'")
                == "2")
        // The store is untouched.
        let after = try await list(rig, held: [right])
        #expect(state(after, "right-index") == "in-step")

        let none = try await rig.run(["prints", "delete", "--orphans", "--json"], held: [right])
        #expect(none.status == 0 && (none.json?["deleted"] as? [Any])?.isEmpty == true, "\(none.stderrLines)")
    }

    /// The label Touchgate writes is visible to anyone who lists the reader, so a foreign
    /// print can carry a copy. Template equality decides where templates can be read: the
    /// copies are orphans, our real print is in step, and `--orphans` deletes the copies only.
    @Test func aForgedLabelNeitherHidesOurPrintNorPassesForIt() async throws {
        let rig = try StorageReaderRig()
        defer { rig.home.remove() }
        let right = try await enroll(rig, "right-index", number: Self.rightIndex, held: [])
        let label = String(right.dropFirst(StorageReaderRig.chipID("", finger: Self.rightIndex).count))
        #expect(label.hasPrefix("touchgate-"), "\(right)")
        // Several copies, so that the driver lists at least one before the real print.
        let forged = ["FFFFFFFF", "EEEEEEEE", "DDDDDDDD"].map { "FP1-20200101-7-\($0)-\(label)" }
        let held = forged + [right]

        let listed = try await list(rig, held: held)
        #expect(state(listed, "right-index") == "in-step")
        let orphans = try #require(listed["orphans"] as? [[String: Any]])
        #expect(orphans.count == 3, "\(orphans)")
        #expect(orphans.allSatisfy { $0["enrolled"] as? String == "2020-01-01" }, "the copies, not ours: \(orphans)")

        let deleted = try await rig.run(["prints", "delete", "--orphans", "--yes", "--json"], held: held)
        #expect(deleted.status == 0, "\(deleted.stderrLines)")
        let gone = try #require(deleted.json?["deleted"] as? [[String: Any]])
        #expect(gone.count == 3 && gone.allSatisfy { $0["enrolled"] as? String == "2020-01-01" },
                "only the copies are deleted, never the print the store holds: \(gone)")
        #expect(deleted.json?["remaining"] as? Int == 1)

        // A copy alone does not pass for ours: the real print is missing, the copy an orphan.
        let copyOnly = try await list(rig, held: [forged[0]])
        #expect(state(copyOnly, "right-index") == "missing-on-reader")
        #expect((copyOnly["orphans"] as? [Any])?.count == 1)
    }

    /// Runs an enrollment whose save has to wait for the database (another writer holds it)
    /// once the reader has stored the print; `atFinalStage` acts at that moment, and the
    /// lock is released `holdFor` seconds after it. Returns the run and the chip id.
    private func enrollWithBlockedSave(_ rig: StorageReaderRig, holdFor: Double,
                                       atFinalStage: @escaping @Sendable (RunningProcess) -> Void) async throws -> (CLIResult, String) {
        let ids = LockedBox<String>()
        let lock = LockedBox<StorageReaderRig.WriteLock>()
        let database = rig.database
        let result = try await rig.run(["enroll", "--json", "--finger", "right-index"], held: [], scanning: { label in
            // The pending mark is committed; from now on the test holds the database.
            lock.set(try? await StorageReaderRig.WriteLock(database))
            let id = StorageReaderRig.chipID(label, finger: Self.rightIndex)
            ids.set(id)
            return id
        }, onLine: { line, process in
            guard line.contains("\"event\":\"enroll-stage\""), line.contains("\"completed\":5") else { return }
            atFinalStage(process)
            DispatchQueue.global().asyncAfter(deadline: .now() + holdFor) { lock.value?.release() }
        })
        lock.value?.release()
        return (result, try #require(ids.value))
    }

    @Test func killedAfterTheReaderStoredThePrintTheNextListRemovesIt() async throws {
        let rig = try StorageReaderRig()
        defer { rig.home.remove() }
        let (killed, id) = try await enrollWithBlockedSave(rig, holdFor: 1.0) { process in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { kill(process.processIdentifier, SIGKILL) }
        }
        #expect(killed.status == 128 + 9, "\(killed.stderrLines)")
        #expect(try await rig.sql("SELECT count(*) FROM print") == "0")

        // The reader kept the print; the next operation on it removes it, and says so in the audit trail.
        let listed = try await list(rig, held: [id])
        #expect((listed["orphans"] as? [Any])?.isEmpty == true, "\(listed)")
        #expect((listed["readers"] as? [[String: Any]])?.first?["held"] as? Int == 0)
        #expect(try await rig.sql("SELECT count(*) FROM audit WHERE event = 'finger.delete' AND reason LIKE '%interrupted%'")
                == "1")
        #expect(await StorageReaderRig.pendingLabel(rig.database) == nil, "the pending mark is gone")
        // A foreign print is never removed that way.
        let foreign = StorageReaderRig.chipID("bob", finger: Self.rightIndex)
        let again = try await list(rig, held: [foreign])
        #expect((again["orphans"] as? [Any])?.count == 1)
    }

    @Test func cancelledWhileTheStoreWaitsRemovesThePrintAtOnce() async throws {
        let rig = try StorageReaderRig()
        defer { rig.home.remove() }
        let (cancelled, _) = try await enrollWithBlockedSave(rig, holdFor: 1.0) { process in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { kill(process.processIdentifier, SIGINT) }
        }
        #expect(cancelled.status == 130, "\(cancelled.stderrLines)")
        #expect(try await rig.sql("SELECT count(*) FROM print") == "0")
        // Removed from the reader in the same run: recorded, and no pending mark is left for later.
        #expect(try await rig.sql("SELECT count(*) FROM audit WHERE event = 'finger.delete' AND reason LIKE '%did not finish%'")
                == "1")
        #expect(await StorageReaderRig.pendingLabel(rig.database) == nil)
    }

    @Test func aSaveThatFailsRemovesThePrintAtOnce() async throws {
        let rig = try StorageReaderRig()
        defer { rig.home.remove() }
        // The other writer holds the database past the busy timeout (10 s): saving fails.
        let (failed, _) = try await enrollWithBlockedSave(rig, holdFor: 11.5) { _ in }
        #expect(failed.status != 0 && failed.status != 130, "\(failed.stderrLines)")
        #expect(try await rig.sql("SELECT count(*) FROM print") == "0")
        #expect(try await rig.sql("SELECT count(*) FROM audit WHERE event = 'finger.delete' AND reason LIKE '%did not finish%'")
                == "1")
        #expect(await StorageReaderRig.pendingLabel(rig.database) == nil)
    }
}

/// A value set from another thread.
final class LockedBox<Value>: @unchecked Sendable {
    // @unchecked Sendable: `stored` is only touched under `lock`.
    private let lock = NSLock()
    private var stored: Value?

    var value: Value? { lock.withLock { stored } }
    func set(_ value: Value?) { lock.withLock { stored = value } }
}
