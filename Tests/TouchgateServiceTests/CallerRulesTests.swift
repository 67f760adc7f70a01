import Testing
import TouchgateService
import TouchgateAPI

/// Who may ask touchgated for what, and whose trail records a refusal.
@Suite struct CallerRulesTests {
    @Test("only deleting orphans, clearing a reader and importing fprintd's store need root; every other operation is the caller's own")
    func rootOnlyOperations() {
        let needRoot = Set(DaemonOperation.allCases.filter { CallerRules.rootOnly($0) != nil })
        #expect(needRoot == [.printsDeleteOrphans, .printsClear, .importFprintd])
        for operation in needRoot {
            #expect(throws: ServiceError.self) { try CallerRules.requireRoot(callerIsRoot: false, CallerRules.rootOnly(operation)!) }
            #expect(throws: Never.self) { try CallerRules.requireRoot(callerIsRoot: true, CallerRules.rootOnly(operation)!) }
        }
        #expect(throws: ServiceError.self) { try CallerRules.requireMayActForAnotherUser(callerIsRoot: false) }
        #expect(throws: Never.self) { try CallerRules.requireMayActForAnotherUser(callerIsRoot: true) }
    }

    @Test("a forbidden request is recorded in the caller's trail, a remote session's in the named user's; other failures are not refusals")
    func refusalTrails() {
        #expect(CallerRules.trail(for: ServiceError(.forbidden, "x")) == .caller)
        #expect(CallerRules.trail(for: ServiceError(.remoteSession, "x")) == .namedUser)
        #expect(CallerRules.trail(for: ServiceError(.usage, "x")) == nil)
        #expect(CallerRules.trail(for: ServiceError(.notFound, "x")) == nil)
    }

    @Test("audit.ship sends every trail only for root naming no user")
    func shipScope() {
        #expect(CallerRules.shipsEveryTrail(callerIsRoot: true, namedUser: nil))
        #expect(!CallerRules.shipsEveryTrail(callerIsRoot: true, namedUser: "ana"))
        #expect(!CallerRules.shipsEveryTrail(callerIsRoot: false, namedUser: nil))
    }
}
