import Foundation
import Testing
@testable import TouchgateService
import TouchgateVault
import TouchgateAPI

/// Stores kept open across requests (touchgated's): kept while they are the store at their
/// path, reopened when they are not, bounded, and as guarded as a store opened afresh.
@Suite struct OpenStoresTests {
    private func kept(_ rig: ServiceRig, _ open: OpenStores) -> TouchgateService {
        var service = rig.service
        service.openStores = open
        return service
    }

    @Test func aStoreIsKeptUntilItsFileIsReplacedOrItIsForgotten() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        let open = OpenStores()
        let location = rig.service.location
        let first = try open.database(at: location).0
        #expect(try open.database(at: location).0 === first, "the second request opened the store again")
        #expect(open.count == 1)

        // The whole directory put back from a copy (what root could do): the copy is the store now.
        let copy = rig.directory.appendingPathComponent("copy")
        try FileManager.default.copyItem(at: location.directory, to: copy)
        try FileManager.default.removeItem(at: location.directory)
        try FileManager.default.moveItem(at: copy, to: location.directory)
        let reopened = try open.database(at: location).0
        #expect(reopened !== first, "a replaced store was served from the connections of the removed one")
        #expect(try open.database(at: location).0 === reopened)

        open.forget(location)
        #expect(open.count == 0)
        #expect(try open.database(at: location).0 !== reopened)
    }

    @Test func atMostCapacityStoresStayOpenAndIdleOnesAreClosed() throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        let open = OpenStores(capacity: 2, idleTimeout: .seconds(3600))
        let locations = (0..<3).map { StoreLocation(directory: rig.directory.appendingPathComponent("user-\($0)")) }
        let first = try open.database(at: locations[0]).0
        _ = try open.database(at: locations[1]).0
        _ = try open.database(at: locations[2]).0
        #expect(open.count == 2)
        #expect(try open.database(at: locations[0]).0 !== first, "the least recently used store stayed open")
        #expect(open.sweep() == 0, "stores used just now were closed as idle")

        let brief = OpenStores(idleTimeout: .zero)
        _ = try brief.database(at: locations[0]).0
        #expect(brief.sweep() == 1)
        #expect(brief.count == 0)
    }

    @Test func aKeptStoreStillRefusesStateEditedBehindItsBack() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        let service = kept(rig, OpenStores())
        _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        try await service.unlock(interaction: ScriptedInteraction())
        _ = try await service.secretAdd("db", value: rig.value("s3cret"), policy: "passphrase", fresh: false,
                                    interaction: ScriptedInteraction())
        let value = try await service.secretGet("db", interaction: ScriptedInteraction())
        #expect(value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "s3cret")

        // Another connection (sqlite3, say) edits the authenticated state while the store is kept open.
        try rig.sql("""
            INSERT OR REPLACE INTO vault_state (key, value, updated_at) VALUES ('policy.settings', \
            CAST('{"lockoutThreshold":20,"lockoutDurationSeconds":1,"sessionTimeoutSeconds":300,"idleTimeoutSeconds":300}' AS BLOB), 0)
            """)
        await #expect(throws: ServiceError.self, "an edited state went unnoticed by a kept store") {
            _ = try await service.secretGet("db", interaction: ScriptedInteraction())
        }
        let records = try await rig.service.auditShow()
        #expect(records.contains { $0.event == "integrity.failure" }, "the tampering was not audited")
    }

    @Test func concurrentRequestsOfOneUserShareTheKeptStore() async throws {
        let rig = try ServiceRig()
        defer { rig.remove() }
        let open = OpenStores()
        let service = kept(rig, open)
        _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        try await service.unlock(interaction: ScriptedInteraction())
        _ = try await service.secretAdd("db", value: rig.value("s3cret"), policy: "passphrase", fresh: false,
                                    interaction: ScriptedInteraction())
        let before = try await service.auditShow().count
        let released = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                group.addTask { try await service.secretGet("db", interaction: ScriptedInteraction()).count }
            }
            return try await group.reduce(0) { $0 + ($1 == 6 ? 1 : 0) }
        }
        #expect(released == 16)
        #expect(open.count == 1)
        // Every release audited, and the chain intact: the shared writer serialised the appends.
        #expect(try await service.auditShow().count - before >= 16)
        #expect(try await service.auditVerify() == (try await service.auditShow().count))
    }
}
