import Foundation
import Testing
import TouchgateVault

@Suite("Commits are durable")
struct DatabaseDurabilityTests {
    @Test("the writer commits with synchronous = FULL, in WAL mode")
    func writerIsFullySynchronous() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try TouchgateDatabase(location: StoreLocation(directory: directory))
        // 2 is FULL: each commit waits for the WAL to reach the disk (NORMAL, 1, would not).
        let (synchronous, journal) = try database.writer.write { db in
            (try Int.fetchOne(db, sql: "PRAGMA synchronous"), try String.fetchOne(db, sql: "PRAGMA journal_mode"))
        }
        #expect(synchronous == 2)
        #expect(journal == "wal")
    }
}
