import Foundation
import Testing
@testable import TouchgateVault

@Suite("Audit appends from many writers form one gapless chain")
struct AuditConcurrencyTests {
    @Test("tasks with separate database instances on one file", .timeLimit(.minutes(2)))
    func separateInstances() async throws {
        let fixture = try AuditFixture()
        let writers = 4, perWriter = 20
        let location = fixture.location
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let log = try AuditLog(database: try TouchgateDatabase(location: location), journal: .disabled)
                    for index in 0..<perWriter {
                        try log.append(.authAttempt, .failure, vaultUser: "writer-\(writer)", reason: "attempt \(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        let total = writers * perWriter
        #expect(try fixture.log.verify() == .intact(count: total))
        let records = try fixture.log.records()
        #expect(records.map(\.sequence) == Array(1...Int64(total)))
        for writer in 0..<writers {
            #expect(records.filter { $0.vaultUser == "writer-\(writer)" }.count == perWriter)
        }
    }

    @Test("tasks sharing one instance", .timeLimit(.minutes(2)))
    func sharedInstance() async throws {
        let fixture = try AuditFixture()
        let log = fixture.log
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for index in 0..<15 {
                        try log.append(.itemRead, .success, vaultUser: "w\(writer)", item: "i\(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try fixture.log.verify() == .intact(count: 60))
    }
}
