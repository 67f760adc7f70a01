import Foundation
import Testing
@testable import TouchgateVault

/// A vault with an audit log, some records, and the three kinds of state other layers
/// keep (policy state, policy settings, enrollment generation), all written through
/// touchgate. Edits go through a separate plain connection, as sqlite3 would.
final class StateFixture {
    let vault: VaultFixture
    let log: AuditLog
    let state: StateStore

    static let policyState = Data(#"{"failures":2,"lockoutUntil":900}"#.utf8)
    static let settings = Data(#"{"lockoutThreshold":3,"lockoutMinutes":15,"sessionSeconds":300}"#.utf8)
    static let generation = Data([0, 0, 0, 0, 0, 0, 0, 7])

    init(journal: AuditJournal = .disabled) throws {
        vault = try VaultFixture()
        log = try AuditLog(database: vault.store.database, journal: journal)
        state = StateStore(log: log)
        try log.append(.vaultInit, .success, vaultUser: "alice", reason: "vault created")
        try state.updateState("policy.state") { $0 = Self.policyState }
        try state.updateState("policy.settings") { $0 = Self.settings }
        try state.updateState("enrollment.generation") { $0 = Self.generation }
        try log.append(.authAttempt, .failure, vaultUser: "alice", reason: "no match")
    }

    var database: TouchgateDatabase { vault.store.database }
    var location: StoreLocation { vault.store.location }
    var keyPath: String { AuditLog.keyPath(for: location) }

    /// Runs SQL through its own connection, as an attacker with sqlite3 and the file would.
    func sqlite3(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws {
        let queue = try DatabaseQueue(path: location.databasePath)
        try queue.write { db in try db.execute(sql: sql, arguments: arguments) }
        try queue.close()
    }

    /// Every `vault_state` row and the marker, as stored (to check that nothing was written).
    func rawState() throws -> [String] {
        try database.writer.read { db in
            try String.fetchAll(db, sql: """
                SELECT quote(key) || '=' || quote(value) FROM vault_state
                UNION ALL SELECT 'sealed=' || quote(templates_sealed) FROM vault_meta
                UNION ALL SELECT 'head=' || headSeq || quote(mac) FROM auditHead
                ORDER BY 1
                """)
        }
    }

    /// A log opened afresh on the same files (a new process).
    func reopen() throws -> AuditLog {
        try AuditLog(database: try TouchgateDatabase(location: location), journal: .disabled)
    }
}

/// The detail of the `IntegrityError` `body` throws; records an issue for anything else.
func tamperDetail<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    switch thrownError(body) {
    case let IntegrityError.stateTampered(detail)?:
        #expect(IntegrityError.stateTampered(detail: detail).description.contains("touchgate repair"),
                sourceLocation: sourceLocation)
        return detail
    case let other:
        Issue.record("expected IntegrityError.stateTampered, got \(String(describing: other))", sourceLocation: sourceLocation)
        return nil
    }
}

/// The reason of a broken verification; records an issue when it is intact.
func brokenReason(_ verification: AuditVerification, sourceLocation: SourceLocation = #_sourceLocation) -> String {
    guard case let .broken(_, reason) = verification else {
        Issue.record("expected a broken log, got \(verification)", sourceLocation: sourceLocation)
        return ""
    }
    return reason
}
