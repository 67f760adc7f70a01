import FingerprintKit
import Foundation
import Logging
import Testing
import TouchgateAPI
import TouchgatePolicy
import TouchgatePolicyTesting
import TouchgateService
import TouchgateVault

/// A service over a temporary store, with a scripted reader and a manual clock.
struct RuleRig {
    let base: ServiceRig
    let reader: ScriptedReader
    let clock = ManualClock()
    let service: TouchgateService

    init(_ script: [ScriptedReader.Scan] = []) throws {
        base = try ServiceRig()
        reader = ScriptedReader(script)
        var service = base.service
        service.readerPort = reader
        service.clock = clock
        self.service = service
    }

    /// A vault, unlocked, with right-index enrolled.
    static func ready(_ script: [ScriptedReader.Scan] = []) async throws -> RuleRig {
        let rig = try RuleRig(script)
        _ = try await rig.service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
        try await rig.service.unlock(interaction: ScriptedInteraction())
        _ = try await rig.service.enroll(finger: "right-index", interaction: ScriptedInteraction())
        return rig
    }

    func store(_ name: String, _ policy: String, fresh: Bool = false) async throws {
        _ = try await service.secretAdd(name, value: base.value("value of \(name)"), policy: policy, fresh: fresh,
                                    interaction: ScriptedInteraction())
    }

    /// Releases `name`; the value's text, or the error's code.
    func release(_ name: String, touchNow: Bool = false) async -> Released {
        do {
            let value = try await service.secretGet(name, touchNow: touchNow, interaction: ScriptedInteraction())
            return .value(value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
        } catch {
            return .failed(error.code)
        }
    }

    func remove() { base.remove() }
}

/// What a release gave: the value's text, or the error's code.
enum Released: Equatable {
    case value(String)
    case failed(ErrorCode)

    var code: ErrorCode? { if case .failed(let code) = self { code } else { nil } }
}

/// Every rule of a use case that needs a finger, through the service alone: a scripted
/// reader, a manual clock, milliseconds per test. What only a process shows (the terminal,
/// signals, exit statuses, real readers and peers) stays in the end-to-end suites.
@Suite struct ServiceRuleTests {
    @Test("lockout: three strangers lock the reader out; during the lockout no scan is made; after it the finger works")
    func lockout() async throws {
        let rig = try await RuleRig.ready([.stranger, .stranger, .stranger])
        defer { rig.remove() }
        try await rig.store("db", "biometry-any")
        var codes: [ErrorCode?] = []
        for _ in 0..<3 { codes.append(await rig.release("db").code) }
        #expect(codes == [.noMatch, .noMatch, .lockedOut], "the third no-match starts the lockout")
        let scans = rig.reader.scans
        let opens = rig.reader.opens
        rig.reader.then(.finger("right-index"))
        #expect(await rig.release("db").code == .lockedOut)
        #expect(rig.reader.scans == scans && rig.reader.opens == opens, "the reader was not even opened")
        rig.clock.advance(by: .seconds(15 * 60 - 1))
        #expect(await rig.release("db").code == .lockedOut)
        rig.clock.advance(by: .seconds(2))
        #expect(await rig.release("db") == .value("value of db"))
        let records = try await rig.service.auditShow()
        #expect(records.contains { $0.event == "lockout.start" || $0.reason.contains("lockout") })
    }

    @Test("reuse window: one touch serves the next releases until the idle time passes")
    func reuseWindow() async throws {
        let rig = try await RuleRig.ready([.finger("right-index")])
        defer { rig.remove() }
        try await rig.store("db", "biometry-any")
        #expect(await rig.release("db") == .value("value of db"))
        #expect(rig.reader.scans == 1)
        rig.clock.advance(by: .seconds(60))
        #expect(await rig.release("db") == .value("value of db"))
        #expect(rig.reader.scans == 1, "reused within the window")
        rig.clock.advance(by: .seconds(3 * 60))
        rig.reader.then(.finger("right-index"))
        #expect(await rig.release("db") == .value("value of db"))
        #expect(rig.reader.scans == 2, "a touch again once the window closed")
    }

    @Test("fresh touch: a fresh item, or a release asking for a touch now, scans every time")
    func freshTouch() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .finger("right-index"), .finger("right-index")])
        defer { rig.remove() }
        try await rig.store("fresh", "biometry-any", fresh: true)
        try await rig.store("plain", "biometry-any")
        #expect(await rig.release("fresh") == .value("value of fresh"))
        #expect(await rig.release("fresh") == .value("value of fresh"))
        #expect(rig.reader.scans == 2)
        #expect(await rig.release("plain", touchNow: true) == .value("value of plain"))
        #expect(rig.reader.scans == 3)
        #expect(await rig.release("plain") == .value("value of plain"), "the touch just made is reused")
        #expect(rig.reader.scans == 3)
    }

    @Test("binding: enrolling another finger invalidates biometry-current-set items, never biometry-any ones")
    func enrollmentChangeInvalidatesBoundItems() async throws {
        let rig = try await RuleRig.ready()
        defer { rig.remove() }
        try await rig.store("bound", "biometry-current-set")
        try await rig.store("any", "biometry-any")
        let report = try await rig.service.enroll(finger: "left-index", interaction: ScriptedInteraction())
        #expect(report.invalidated == ["bound"])
        rig.reader.then(.finger("left-index"))
        #expect(await rig.release("bound").code == .itemInvalidated)
        #expect(await rig.release("any") == .value("value of any"), "the new finger opens biometry-any items")
        let items = try await rig.service.secretList()
        #expect(items.first { $0.name == "bound" }?.invalidated == true)
    }

    @Test("poor scans are retried within one attempt and are not counted toward the lockout")
    func poorScansAreRetried() async throws {
        let rig = try await RuleRig.ready([.poor, .poor, .finger("right-index")])
        defer { rig.remove() }
        try await rig.store("db", "biometry-any")
        #expect(await rig.release("db") == .value("value of db"))
        #expect(rig.reader.scans == 3)
        let status = try await rig.service.status()
        #expect(status.lockout?.consecutiveFailures == 0)
    }

    @Test("a reader that goes away is not a failed attempt")
    func unpluggedIsNotAnAttempt() async throws {
        let rig = try await RuleRig.ready([.unplugged])
        defer { rig.remove() }
        try await rig.store("db", "biometry-any")
        #expect(await rig.release("db").code == .noReader)
        #expect(try await rig.service.status().lockout?.consecutiveFailures == 0)
    }

    @Test("verify: a match names the finger; a stranger is an answer with the attempts left, and is audited")
    func verifyAnswers() async throws {
        let rig = try await RuleRig.ready([.finger("right-index"), .stranger])
        defer { rig.remove() }
        let matched = try await rig.service.verify(interaction: ScriptedInteraction())
        #expect(matched.match && matched.finger == "right-index" && matched.user == "alice")
        let missed = try await rig.service.verify(interaction: ScriptedInteraction())
        #expect(!missed.match && missed.attemptsLeft == 2)
        #expect(try await rig.service.auditShow().filter { $0.event == "auth.attempt" }.count >= 2)
    }

    @Test("act-for: root acting for a user is matched against that user's prints and counted in that user's store")
    func actingForAUser() async throws {
        let rig = GatedRig()
        defer { rig.remove() }
        _ = try await rig.gate.serve(.enroll, caller: rig.daemonUser, namedUser: nil, localOnly: false) { service in
            try await service.enroll(finger: "right-thumb", interaction: ScriptedInteraction())
        }
        rig.reader.then(.finger("right-thumb"), .stranger)
        let matched = try await rig.gate.serve(.verify, caller: rig.sshd, namedUser: "daemon", localOnly: false) { service in
            try await service.verify(interaction: ScriptedInteraction())
        }
        #expect(matched.match && matched.user == "daemon" && matched.finger == "right-thumb")
        // Root has no prints: the same finger is a stranger to root's own store.
        await #expect { _ = try await rig.gate.serve(.verify, caller: rig.sshd, namedUser: nil, localOnly: false) { service in
            try await service.verify(interaction: ScriptedInteraction())
        } } throws: { ($0 as? ServiceError)?.code == .nothingEnrolled }
    }

    @Test("remote session: a local-only touch for a remote login session is refused before the reader opens, in the named user's trail; a local one proceeds")
    func remoteSession() async throws {
        let rig = GatedRig()
        defer { rig.remove() }
        try await rig.daemonUserWithAVault()
        rig.reader.then(.finger("right-thumb"))
        let opens = rig.reader.opens
        await #expect { _ = try await rig.gate.serve(.verify, caller: rig.sshd, namedUser: "daemon", localOnly: true) { service in
            try await service.verify(interaction: ScriptedInteraction())
        } } throws: { ($0 as? ServiceError)?.code == .remoteSession }
        #expect(rig.reader.opens == opens, "no reader was opened for a remote session")
        let refusal = try #require(try await rig.services(Principal(uid: 1, loginName: "daemon")).auditShow().last)
        #expect(refusal.event == "access.denied" && refusal.reason.contains("203.0.113.9"))
        // Without local-only, or from the local console, the same touch is asked for.
        let local = Caller(uid: 0, loginName: "root", pid: GatedRig.consolePID, executable: "/usr/bin/login", door: .daemon)
        let matched = try await rig.gate.serve(.verify, caller: local, namedUser: "daemon", localOnly: true) { service in
            try await service.verify(interaction: ScriptedInteraction())
        }
        #expect(matched.match)
        // A local session at no seat: nobody at this machine's screen and keyboard to touch it.
        let seatless = Caller(uid: 0, loginName: "root", pid: GatedRig.seatlessPID, executable: "/usr/bin/su", door: .daemon)
        await #expect { _ = try await rig.gate.serve(.verify, caller: seatless, namedUser: "daemon", localOnly: true) { service in
            try await service.verify(interaction: ScriptedInteraction())
        } } throws: { ($0 as? ServiceError)?.code == .remoteSession && "\($0)".contains("no seat") }
        #expect(rig.reader.opens == opens + 1, "no reader was opened for a session at no seat")
        // logind unable to tell proceeds; logind failing otherwise counts as remote.
        let unknown = Caller(uid: 0, loginName: "root", pid: GatedRig.unknownPID, executable: nil, door: .daemon)
        await #expect { _ = try await rig.gate.serve(.status, caller: unknown, namedUser: "daemon", localOnly: true) { _ in } }
            throws: { ($0 as? ServiceError)?.code == .remoteSession }
        let outside = Caller(uid: 0, loginName: "root", pid: GatedRig.outsidePID, executable: nil, door: .daemon)
        #expect(try await rig.gate.serve(.status, caller: outside, namedUser: "daemon", localOnly: true) { _ in true })
        // The console's pid, but the process that asked exited before its session was told:
        // the session found may be a later process's, given the freed pid.
        var gone = local
        gone.handle = ExitedProcess(pid: GatedRig.consolePID)
        await #expect { _ = try await rig.gate.serve(.verify, caller: gone, namedUser: "daemon", localOnly: true) { service in
            try await service.verify(interaction: ScriptedInteraction())
        } } throws: { ($0 as? ServiceError)?.code == .remoteSession && "\($0)".contains("exited before its login session") }
        #expect(rig.reader.opens == opens + 1, "no reader was opened for a caller that is gone")
    }

    @Test("on another user's behalf: su or polkit's helper started by one user, asking for another's finger from no login session, is refused; from a local one, or for its own user, it proceeds")
    func onAnotherUsersBehalf() async throws {
        let rig = GatedRig()
        defer { rig.remove() }
        try await rig.daemonUserWithAVault()
        let opens = rig.reader.opens
        // Started by nobody (65534), asking for daemon's (uid 1) finger, in no session (a cron job, a user service).
        let helper = Caller(uid: 0, loginName: "root", pid: GatedRig.noSessionPID, executable: nil, realUID: 65534, door: .daemon)
        await #expect { _ = try await rig.gate.serve(.verify, caller: helper, namedUser: "daemon", localOnly: true) { service in
            try await service.verify(interaction: ScriptedInteraction())
        } } throws: { ($0 as? ServiceError)?.code == .remoteSession && "\($0)".contains("uid 65534") }
        #expect(rig.reader.opens == opens, "no reader was opened")
        let refusal = try #require(try await rig.services(Principal(uid: 1, loginName: "daemon")).auditShow().last)
        #expect(refusal.event == "access.denied" && refusal.reason.contains("no login session"), "\(refusal.reason)")
        // Without local-only (no PAM module asked), nothing changes.
        #expect(try await rig.gate.serve(.status, caller: helper, namedUser: "daemon", localOnly: false) { _ in true })
        // The same process for its own user, or run by root through and through (a greeter, a
        // system service), proceeds as before.
        for realUID: UInt32 in [1, 0] {
            let own = Caller(uid: 0, loginName: "root", pid: GatedRig.noSessionPID, executable: nil, realUID: realUID, door: .daemon)
            rig.reader.then(.finger("right-thumb"))
            let matched = try await rig.gate.serve(.verify, caller: own, namedUser: "daemon", localOnly: true) { service in
                try await service.verify(interaction: ScriptedInteraction())
            }
            #expect(matched.match, "real uid \(realUID)")
        }
        // On another user's behalf from a local session at a seat: the person asking is here.
        let seated = Caller(uid: 0, loginName: "root", pid: GatedRig.consolePID, executable: nil, realUID: 65534, door: .daemon)
        rig.reader.then(.finger("right-thumb"))
        let matched = try await rig.gate.serve(.verify, caller: seated, namedUser: "daemon", localOnly: true) { service in
            try await service.verify(interaction: ScriptedInteraction())
        }
        #expect(matched.match)
    }
}

/// A held process that has exited.
private final class ExitedProcess: HeldProcess {
    let pid: Int32
    init(pid: Int32) { self.pid = pid }
    var isRunning: Bool { false }
}

/// Several users' stores behind one gate, one scripted reader and one manual clock, with
/// logind's answers scripted by pid.
private struct GatedRig {
    static let sshPID: Int32 = 20, consolePID: Int32 = 21, unknownPID: Int32 = 22, outsidePID: Int32 = 23, seatlessPID: Int32 = 24
    static let noSessionPID: Int32 = 25
    let reader = ScriptedReader()
    let clock = ManualClock()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-gated-\(UUID().uuidString)")
    let services: @Sendable (Principal) -> TouchgateService
    let gate: ServiceGate
    let daemonUser = Caller(uid: 1, loginName: "daemon", pid: 10, executable: nil, door: .daemon)
    let sshd = Caller(uid: 0, loginName: "root", pid: GatedRig.sshPID, executable: "/usr/sbin/sshd", door: .daemon)

    struct LogindBroke: Error {}

    init() {
        let (reader, clock, directory, shelf) = (reader, clock, directory, CustodyShelf())
        let services: @Sendable (Principal) -> TouchgateService = { principal in
            var service = TouchgateService(principal: principal,
                                           location: StoreLocation(directory: directory.appendingPathComponent("\(principal.uid)")),
                                           custody: { shelf.custody(for: $0) })
            service.readerPort = reader
            service.clock = clock
            return service
        }
        self.services = services
        let sessions = LocalSessionRule(logger: Logger(label: "test")) { pid in
            switch pid {
            case Self.sshPID: LogindSession(id: "c7", remote: true, remoteHost: "203.0.113.9")
            case Self.consolePID: LogindSession(id: "1", remote: false, remoteHost: "")
            case Self.seatlessPID: LogindSession(id: "c9", remote: false, remoteHost: "", seat: "")
            case Self.unknownPID: throw LogindBroke()
            case Self.noSessionPID: nil
            default: throw LocalSessionRule.LogindAbsent("not in any session logind knows")
            }
        }
        gate = ServiceGate(services: services, principals: { [] }, sessions: sessions)
    }

    /// The daemon user (uid 1) with a vault, unlocked, and right-thumb enrolled.
    func daemonUserWithAVault() async throws {
        _ = try await gate.serve(.enroll, caller: daemonUser, namedUser: nil, localOnly: false) { service in
            _ = try await service.initialize(stretching: .minimum, interaction: ScriptedInteraction())
            try await service.unlock(interaction: ScriptedInteraction())
            return try await service.enroll(finger: "right-thumb", interaction: ScriptedInteraction())
        }
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}
