import Foundation
import Testing
import TouchgateService
import TouchgateVault
import TouchgateAPI

/// The per-user quota of the system mode: refused with `quota` (exit 13), nothing stored,
/// audited once per crossing; the personal mode has none.
@Suite struct ItemQuotaTests {
    /// A rig whose service runs in the system mode with a small quota.
    func systemRig(_ quota: ItemQuota) throws -> (ServiceRig, TouchgateService) {
        let rig = try ServiceRig()
        var service = TouchgateService(principal: rig.service.principal, location: rig.service.location,
                                       mode: .system, custody: { rig.custody(for: $0) })
        #expect(service.itemQuota == ItemQuota(), "the system mode has the default quota")
        service.itemQuota = quota
        return (rig, service)
    }

    func store(_ service: TouchgateService, _ name: String, bytes: Int, replace: Bool = false) async throws(ServiceError) {
        let value = String(repeating: "v", count: bytes)
        _ = try await service.secretAdd(name, value: { SecretBytes(copying: Array(value.utf8)) }, policy: "passphrase",
                                    fresh: false, replace: replace, interaction: ScriptedInteraction())
    }

    func refusals(_ service: TouchgateService) async throws -> Int {
        try await service.auditShow().filter { $0.event == "item.write" && $0.outcome == "denied" }.count
    }

    @Test func theDefaultsAreAThousandItemsAndFourMebibytesAndThePersonalModeHasNone() throws {
        #expect(ItemQuota().maximumItems == 1000 && ItemQuota().maximumStoredBytes == 4 * 1024 * 1024)
        let rig = try ServiceRig()
        defer { rig.remove() }
        #expect(rig.service.itemQuota == nil)
    }

    @Test func storesPastTheBytesAreRefusedAndAuditedOncePerCrossing() async throws {
        // Room for "a" with 600 bytes and "b" with 400, and what each is counted for besides.
        let room = ItemUsage.storedBytes(value: 600, name: "a", policy: "passphrase", details: nil)
            + ItemUsage.storedBytes(value: 400, name: "b", policy: "passphrase", details: nil)
        let (rig, service) = try systemRig(ItemQuota(maximumItems: 100, maximumStoredBytes: room))
        defer { rig.remove() }
        _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        try await store(service, "a", bytes: 600)
        try await store(service, "b", bytes: 400)
        for attempt in 0..<3 {
            do {
                try await store(service, "c-\(attempt)", bytes: 1)
                Issue.record("stored past the quota")
            } catch {
                #expect(error.code == .quota && error.exitStatus == 13, "\(error)")
                #expect(error.message.contains("over the \(room) bytes") && error.message.contains("touchgate secret rm"),
                        "\(error.message)")
            }
        }
        #expect(try await service.secretList().map(\.name) == ["a", "b"], "nothing stored")
        #expect(try await refusals(service) == 1, "three refusals, one record")
        // Replacing within the bound is not a new item: its old value does not count twice.
        try await store(service, "a", bytes: 590, replace: true)
        // That success re-arms the record: the next crossing is recorded again.
        await #expect(throws: ServiceError.self) { try await self.store(service, "d", bytes: 20) }
        #expect(try await refusals(service) == 2)
        try await service.secretRm("b", interaction: ScriptedInteraction())
        try await store(service, "d", bytes: 20)
        #expect(try await service.auditVerify() > 0)
    }

    @Test func storesPastTheItemCountAreRefused() async throws {
        let (rig, service) = try systemRig(ItemQuota(maximumItems: 2, maximumStoredBytes: 1 << 20))
        defer { rig.remove() }
        _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        try await store(service, "one", bytes: 1)
        try await store(service, "two", bytes: 1)
        do {
            try await store(service, "three", bytes: 1)
            Issue.record("a third item was stored")
        } catch {
            #expect(error.code == .quota && error.message.contains("the most one user may (2)"), "\(error)")
        }
        try await store(service, "two", bytes: 5, replace: true)
        #expect(try await service.secretList().count == 2)
    }

    /// Issue 46: attributes and labels were not counted, so one user stored 5.6 MB past the
    /// 4 MiB bound in 18 s through the Secret Service with one-byte values.
    @Test func secretServiceAttributesAndLabelsCountAgainstTheBytes() async throws {
        let (rig, service) = try systemRig(ItemQuota(maximumItems: 1000, maximumStoredBytes: 120_000))
        defer { rig.remove() }
        _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        let program = ApplicationIdentity(executable: "/usr/bin/secret-tool", chain: "pid 10 /usr/bin/secret-tool")
        func details(_ index: Int) -> ItemDetails {
            ItemDetails(collection: "login", label: String(repeating: "L", count: 1000),
                        attributes: (0..<8).map { SecretAttribute("a\(index)-\($0)", String(repeating: "x", count: 4000)) },
                        contentType: "text/plain")
        }
        var stored = 0, refusal: ServiceError?
        for index in 0..<10 {
            do {
                _ = try await service.secretServiceStore(details(index), value: { SecretBytes(copying: [1]) }, replace: false,
                                                         application: program, interaction: ScriptedInteraction())
                stored += 1
            } catch {
                refusal = error
                break
            }
        }
        // Each item is about 34 KB of attributes, label and name around a one-byte value: three fit, not four.
        #expect(stored == 3, "\(stored) stored: \(String(describing: refusal))")
        let refused = try #require(refusal)
        #expect(refused.code == .quota && refused.message.contains("over the 120000 bytes")
                && refused.message.contains("nothing was stored"), "\(refused)")
        #expect(try await service.secretList().count == 3, "nothing stored past the bound")
        #expect(try await refusals(service) == 1)
        #expect(try await service.auditVerify() > 0, "the rolled-back write left the trail whole")
    }
}
