import Foundation
import Logging
import Synchronization
import Testing
import TouchgateAPI
import TouchgateService
import TouchgateVault

/// The stores of several users under one directory, as a host that serves them all keeps
/// them, and the gate over them.
private struct GateRig {
    let directory: URL
    let gate: ServiceGate
    private let custodies = CustodyShelf()

    init() {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-gate-\(UUID().uuidString)")
        self.directory = directory
        let shelf = custodies
        let services: @Sendable (Principal) -> TouchgateService = { principal in
            TouchgateService(principal: principal,
                             location: StoreLocation(directory: directory.appendingPathComponent(String(principal.uid))),
                             custody: { shelf.custody(for: $0) })
        }
        self.services = services
        gate = ServiceGate(services: services, principals: {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).compactMap(UInt32.init).sorted()
                .map { Principal(uid: $0, loginName: UserDatabase.loginName(of: $0)) }
        }, sessions: LocalSessionRule(logger: Logger(label: "test")))
    }

    let services: @Sendable (Principal) -> TouchgateService

    func service(_ uid: UInt32) -> TouchgateService {
        services(Principal(uid: uid, loginName: UserDatabase.loginName(of: uid)))
    }

    /// A store with a vault for `uid`.
    func initialize(_ uid: UInt32) async throws {
        _ = try await service(uid).initialize(stretching: .minimum, interaction: ScriptedInteraction())
    }

    func records(_ uid: UInt32) async throws -> [AuditRecordReport] {
        try await service(uid).auditShow()
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

private let root = Caller(uid: 0, loginName: "root", pid: 4000, executable: "/usr/sbin/sshd", door: .daemon)
private let nobody = Caller(uid: 65534, loginName: "nobody", pid: 4001, executable: "/usr/bin/touchgate", door: .daemon)

/// The who-may-do-what rules, applied by the service for every door (``ServiceGate``).
@Suite struct ServiceGateTests {
    @Test("a user naming another user is refused as forbidden, recorded in the caller's trail, never the other's")
    func actingForAnotherNeedsRoot() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        try await rig.initialize(1)
        try await rig.initialize(65534)
        let before = try await rig.records(1).count
        var ran = false
        do {
            _ = try await rig.gate.serve(.status, caller: nobody, namedUser: "daemon", localOnly: false) { _ in ran = true }
            Issue.record("nobody acted for daemon")
        } catch let error as ServiceError {
            #expect(error.code == .forbidden)
        }
        #expect(!ran)
        #expect(try await rig.records(1).count == before, "nothing written to the named user's trail")
        let refusal = try #require(try await rig.records(65534).last)
        #expect(refusal.event == "access.denied" && refusal.uid == 65534)
        #expect(refusal.reason.contains("status") && refusal.reason.contains("pid 4001 /usr/bin/touchgate"))
    }

    @Test("root acts for the user it names; naming oneself or nobody is the caller's own store; an unknown name is a usage error")
    func whoseServiceRuns() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        let named = try await rig.gate.serve(.status, caller: root, namedUser: "daemon", localOnly: false) { $0.principal }
        #expect(named.uid == 1)
        let own = try await rig.gate.serve(.status, caller: nobody, namedUser: "nobody", localOnly: false) { $0.principal }
        #expect(own.uid == 65534)
        let unnamed = try await rig.gate.serve(.status, caller: nobody, namedUser: nil, localOnly: false) { $0.principal }
        #expect(unnamed.uid == 65534)
        await #expect { _ = try await rig.gate.serve(.status, caller: root, namedUser: "no-such-user-here",
                                                     localOnly: false) { _ in } } throws: {
            ($0 as? ServiceError)?.code == .usage
        }
        // Not even whether the name exists is told to a user who may not act for others.
        await #expect { _ = try await rig.gate.serve(.status, caller: nobody, namedUser: "no-such-user-here",
                                                     localOnly: false) { _ in } } throws: {
            ($0 as? ServiceError)?.code == .forbidden
        }
    }

    @Test("root-only operations are refused to others before the use case runs, and allowed to root")
    func rootOnlyOperations() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        try await rig.initialize(65534)
        for operation in DaemonOperation.allCases where CallerRules.rootOnly(operation) != nil {
            var ran = false
            await #expect { _ = try await rig.gate.serve(operation, caller: nobody, namedUser: nil,
                                                         localOnly: false) { _ in ran = true } } throws: {
                ($0 as? ServiceError)?.code == .forbidden
            }
            #expect(!ran, "\(operation) ran for a user")
            #expect(try await rig.gate.serve(operation, caller: root, namedUser: nil, localOnly: false) { _ in true })
        }
        let refusals = try await rig.records(65534).filter { $0.event == "access.denied" }
        #expect(refusals.count == 3)
    }

    @Test("the operations that name another program are served to the verified agent and root only, refused and recorded for others")
    func agentOnlyOperations() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        try await rig.initialize(65534)
        var agent = nobody
        agent.isVerifiedAgent = true
        for operation in DaemonOperation.allCases where operation.contract.callers == .agentOnly {
            var ran = false
            await #expect { _ = try await rig.gate.serve(operation, caller: nobody, namedUser: nil,
                                                         localOnly: false) { _ in ran = true } } throws: {
                ($0 as? ServiceError)?.code == .forbidden
            }
            #expect(!ran, "\(operation) ran for a process that is not the agent")
            #expect(try await rig.gate.serve(operation, caller: agent, namedUser: nil, localOnly: false) { _ in true })
            #expect(try await rig.gate.serve(operation, caller: root, namedUser: nil, localOnly: false) { _ in true })
        }
        let refusals = try await rig.records(65534).filter { $0.event == "access.denied" }
        #expect(refusals.count == 5 && refusals.allSatisfy { $0.reason.contains("touchgate agent's own request") })
    }

    @Test("GatedRequests: every use case a door calls passes the gate with the door's caller, and its records name them")
    func gatedRequestsPassTheGate() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        try await rig.initialize(65534)
        let seen = Mutex<[(DaemonOperation, Caller.Door, Int32)]>([])
        var gate = rig.gate
        gate.observer = { operation, caller in seen.withLock { $0.append((operation, caller.door, caller.pid)) } }
        for door in Caller.Door.allCases {
            let caller = Caller(uid: 65534, loginName: "nobody", pid: 5000, executable: "/usr/bin/ssh", door: door,
                                requester: "asked for pid 5001")
            let requests = GatedRequests(gate: gate, caller: caller, mode: .personal)
            _ = try await requests.status()
            _ = try await requests.lock()
        }
        let observed = seen.withLock { $0 }
        #expect(observed.map(\.0) == Array(repeating: [DaemonOperation.status, .lock], count: Caller.Door.allCases.count).flatMap { $0 })
        #expect(observed.map(\.1) == Caller.Door.allCases.flatMap { [$0, $0] } && observed.allSatisfy { $0.2 == 5000 })
        let locks = try await rig.records(65534).filter { $0.event == "vault.lock" }
        #expect(locks.count == Caller.Door.allCases.count)
        for (record, door) in zip(locks, Caller.Door.allCases) {
            #expect(record.reason.contains("pid 5000 /usr/bin/ssh \(door.words), asked for pid 5001"), "\(record.reason)")
        }
    }

    @Test("capture is never served and migrate takes no named user, for root too; neither is a refusal to record")
    func operationsOnlyForTheCallerItself() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        try await rig.initialize(0)
        let before = try await rig.records(0).count
        for (operation, user) in [(DaemonOperation.capture, nil), (.migrate, "daemon")] as [(DaemonOperation, String?)] {
            await #expect { _ = try await rig.gate.serve(operation, caller: root, namedUser: user,
                                                         localOnly: false) { _ in } } throws: {
                ($0 as? ServiceError)?.code == .usage
            }
        }
        #expect(try await rig.records(0).count == before)
    }

    @Test("every record a request writes names the caller and its process, and the helper's claimed requester beside it")
    func recordsNameTheCaller() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        try await rig.initialize(1)
        var helper = root
        helper.requester = "askpass for pid 41 /usr/bin/ssh-add"
        try await rig.gate.serve(.secretRm, caller: helper, namedUser: "daemon", localOnly: false) { service in
            try await service.recordRefusal(of: "remove", ServiceError(.forbidden, "a test refusal"))
        }
        let record = try #require(try await rig.records(1).last)
        #expect(record.uid == 0, "the caller, not the user acted for")
        #expect(record.vaultUser == "daemon")
        #expect(record.reason.contains("pid 4000 /usr/sbin/sshd") && record.reason.contains("askpass for pid 41"))
    }

    @Test("a refusal before the gate (over the rate) is recorded only where the user has a store, and never names another for a non-root caller")
    func refusalsBeforeTheGate() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        let rate = ServiceError(.limit, "too many requests")
        await rig.gate.recordRefusal(rate, of: .verify, caller: nobody, namedUser: nil)
        #expect(!rig.service(65534).hasStore, "a refusal made no store")
        try await rig.initialize(65534)
        try await rig.initialize(1)
        await rig.gate.recordRefusal(rate, of: .verify, caller: nobody, namedUser: "daemon")
        #expect(try await rig.records(65534).last?.event == "access.denied")
        #expect(try await rig.records(1).last?.event != "access.denied")
        await rig.gate.recordRefusal(rate, of: .verify, caller: root, namedUser: "daemon")
        #expect(try await rig.records(1).last?.event == "access.denied")
    }

    @Test("audit.ship: root naming no user ships every trail, anyone else their own; only root may accept a new fleet log")
    func shipScope() async throws {
        let rig = GateRig()
        defer { rig.remove() }
        #expect { _ = try rig.gate.trailsToShip(for: nobody, namedUser: nil, service: rig.service(65534),
                                                newLog: false) } throws: {
            ($0 as? ServiceError)?.code == .notFound
        }
        try await rig.initialize(1)
        try await rig.initialize(65534)
        let every = try rig.gate.trailsToShip(for: root, namedUser: nil, service: rig.service(0), newLog: true)
        #expect(every.map(\.principal.uid) == [1, 65534])
        let own = try rig.gate.trailsToShip(for: nobody, namedUser: nil, service: rig.service(65534), newLog: false)
        #expect(own.map(\.principal.uid) == [65534])
        #expect(try rig.gate.trailsToShip(for: root, namedUser: "daemon", service: rig.service(1), newLog: false)
            .map(\.principal.uid) == [1])
        #expect(throws: ServiceError.self) {
            try rig.gate.trailsToShip(for: nobody, namedUser: nil, service: rig.service(65534), newLog: true)
        }
    }
}
