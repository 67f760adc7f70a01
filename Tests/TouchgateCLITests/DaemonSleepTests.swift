import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// touchgated keeping readers open across requests, following system sleep through logind
/// (python3-dbusmock's template on a private system bus), and readers that vanish and come
/// back while it runs.
@Suite("touchgated: sleep and hotplug", .serialized)
struct DaemonSleepTests {
    static let inhibitor = "sleep touchgated cancel fingerprint operations and suspend readers delay"

    @Test("a reader opened by one request stays open, listening socket and all, for the next ones; devices says so")
    func readerStaysOpenAcrossRequests() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        let fresh = try await rig.run(["devices", "--json"])
        let listed = try #require((fresh.json?["devices"] as? [[String: Any]])?.first, "\(fresh.stdout) \(fresh.stderrLines)")
        #expect(listed["open"] as? Bool == false, "no request has used the reader yet: \(fresh.stdout)")
        #expect(!rig.daemonHoldsSocket(boundTo: rig.finger.socketPath), "the reader is open before any request used it")

        try await rig.initialize()
        // virtual_image listens on its socket only while the reader is open.
        #expect(rig.daemonHoldsSocket(boundTo: rig.finger.socketPath),
                "enroll's reader was closed after the request:\n\(rig.daemonLog)")
        for _ in 0..<2 {
            let verified = try await rig.run(["verify", "--json"], presenting: ["whorl"])
            #expect(verified.status == 0, "\(verified.stderrLines)\n\(rig.daemonLog)")
            #expect(rig.daemonHoldsSocket(boundTo: rig.finger.socketPath), "closed after verify:\n\(rig.daemonLog)")
        }
        // Another user's request is served by the same open reader.
        let other = try await rig.run(["devices", "--json"], as: DaemonRig.otherUID)
        #expect((other.json?["devices"] as? [[String: Any]])?.first?["open"] as? Bool == true, "\(other.stdout)")
        #expect(try await rig.run(["devices"]).stdout.contains("held open by touchgated"))
        #expect(rig.logLines(containing: "stays open for the next requests").count == 1, "opened more than once:\n\(rig.daemonLog)")
        #expect(rig.logLines(containing: "readers enumerated").count == 1, "\(rig.daemonLog)")

        // Stopping the daemon closes it.
        rig.stop()
        #expect(rig.logLines(containing: "closed: touchgated stops").count == 1, "\(rig.daemonLog)")
    }

    @Test("a delay inhibitor from start; sleep cancels the touch awaited with its reason and lets go; resume retakes it")
    func sleepAndResume() async throws {
        let logind = try await LogindRig()
        defer { logind.stop() }
        let rig = try await DaemonRig()
        rig.daemonEnvironment = logind.environment
        try await rig.start()
        let taken = await logind.waitForInhibitors { !$0.isEmpty }
        #expect(taken == [Self.inhibitor], "the daemon took no delay inhibitor at start:\n\(rig.daemonLog)")
        try await rig.initialize()

        // The system goes to sleep while a client waits for a finger.
        rig.finger.present([])
        let slept = try await rig.client().run(["verify", "--json"]) { line, _ in
            if VirtualImageFinger.isPrompt(line) { try? await logind.prepareForSleep(true) }
        }
        let error = slept.json
        #expect(slept.status == 130, "a touch cancelled for sleep ends as cancelled (exit 130): \(slept.stdout)")
        #expect(error?["error"] as? String == "cancelled", "\(slept.stdout)")
        #expect((error?["message"] as? String)?.contains("the system is going to sleep") == true, "\(slept.stdout)")
        let released = await logind.waitForInhibitors { $0.isEmpty }
        #expect(released.isEmpty, "the inhibitor was not released, so sleep would wait for it:\n\(rig.daemonLog)")

        // A reader operation asked for while asleep starts only once the system has woken.
        let early = Task { try await rig.run(["verify", "--json"], presenting: ["whorl"]) }
        try await Task.sleep(for: .seconds(1))
        #expect(rig.finger.prompts == 0, "the reader was used while the system slept")
        try await logind.prepareForSleep(false)
        let woken = try await early.value
        #expect(woken.status == 0, "\(woken.stderrLines)\n\(rig.daemonLog)")
        let retaken = await logind.waitForInhibitors { !$0.isEmpty }
        #expect(retaken == [Self.inhibitor], "no new inhibitor after resume:\n\(rig.daemonLog)")

        let next = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(next.status == 0, "\(next.stderrLines)\n\(rig.daemonLog)")
        #expect(rig.daemonLog.contains("going to sleep: the fingerprint operation in progress was cancelled"), "\(rig.daemonLog)")
        #expect(rig.daemonLog.contains("woke from sleep"), "\(rig.daemonLog)")
        // The reader enroll opened was kept open, so it was suspended before sleep and resumed after.
        #expect(rig.logLines(containing: "1 open reader(s) suspended").count == 1, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: "(virtual_image) suspended for sleep").count == 1, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: "(virtual_image) resumed").count == 1, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: "woke from sleep: 1 reader(s) resumed").count == 1, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: "stays open for the next requests").count == 1,
                "the reader was reopened rather than resumed:\n\(rig.daemonLog)")

        // Sleep with nothing running: the inhibitor is let go all the same, and taken again after.
        try await logind.prepareForSleep(true)
        #expect(await logind.waitForInhibitors { $0.isEmpty }.isEmpty, "\(rig.daemonLog)")
        try await logind.prepareForSleep(false)
        #expect(await logind.waitForInhibitors { !$0.isEmpty } == [Self.inhibitor], "\(rig.daemonLog)")
    }

    /// libfprint's virtual reader takes its UNPLUG only once an operation runs, so here the
    /// reader resumes and the first touch finds it gone: that request ends as disconnected,
    /// and the pool drops it and finds the reader anew for the next one. (A reader the
    /// kernel removed during sleep is dropped at resume instead: ReaderPool.resume checks.)
    @Test("a reader unplugged while the system slept: the first touch after waking says so (exit 4), the next is served")
    func readerUnpluggedWhileAsleep() async throws {
        let logind = try await LogindRig()
        defer { logind.stop() }
        let rig = try await DaemonRig()
        rig.daemonEnvironment = logind.environment
        try await rig.start()
        _ = await logind.waitForInhibitors { !$0.isEmpty }
        try await rig.initialize()

        try await logind.prepareForSleep(true)
        #expect(await logind.waitForInhibitors { $0.isEmpty }.isEmpty, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: "(virtual_image) suspended for sleep").count == 1, "\(rig.daemonLog)")
        try rig.finger.unplug()
        try await logind.prepareForSleep(false)
        #expect(await logind.waitForInhibitors { !$0.isEmpty } == [Self.inhibitor], "\(rig.daemonLog)")

        // No finger for this touch, and the UNPLUG's connection kept: an image sent at its
        // prompt would come on a new connection, and the driver ignores what is still unread
        // on an older one, the UNPLUG included (a run here matched instead: "Error on old
        // connection, ignoring").
        let first = try await rig.client().run(["verify", "--json"])
        #expect(first.status == 4, "\(first.stdout) \(first.stderrLines)\n\(rig.daemonLog)")
        #expect(first.json?["error"] as? String == "disconnected", "\(first.stdout)")
        #expect((first.json?["message"] as? String)?.contains("Plug it back in and try again") == true, "\(first.stdout)")
        #expect(rig.logLines(containing: "(virtual_image) closed: it was unplugged").count == 1, "\(rig.daemonLog)")

        let next = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(next.status == 0, "\(next.stderrLines)\n\(rig.daemonLog)")
        #expect(rig.logLines(containing: "readers enumerated (no reader known)").count == 1, "\(rig.daemonLog)")
        #expect(!rig.daemonLog.contains("fatal signal"), "\(rig.daemonLog)")
    }

    @Test("a reader unplugged mid-touch ends that request as disconnected; the reader that appears next is used")
    func readerUnpluggedMidTouch() async throws {
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        rig.finger.present([])
        let finger = rig.finger
        let unplugged = try await rig.client().run(["verify", "--json"]) { line, _ in
            if VirtualImageFinger.isPrompt(line) { try? finger.unplug() }
        }
        let error = unplugged.json
        #expect(unplugged.status == 4, "\(unplugged.stdout) \(unplugged.stderrLines)\n\(rig.daemonLog)")
        #expect(error?["error"] as? String == "disconnected", "\(unplugged.stdout)")

        // The unplugged reader was closed and dropped from the pool.
        #expect(rig.logLines(containing: "(virtual_image) closed: it was unplugged").count == 1, "\(rig.daemonLog)")
        #expect(!rig.daemonHoldsSocket(boundTo: rig.finger.socketPath), "the unplugged reader is still open")

        let status = try await rig.run(["status", "--json"])
        #expect(status.status == 0, "\(status.stderrLines)")
        // libfprint's virtual_image reader appears only when readers are enumerated: with none
        // left, the daemon enumerates anew, and finds it plugged in again, with the print
        // enrolled on it before.
        #expect(rig.logLines(containing: "readers enumerated (no reader known)").count == 1, "\(rig.daemonLog)")
        let readers = try await rig.run(["devices", "--json"])
        #expect(readers.stdout.contains("virtual_image"), "\(readers.stdout) \(readers.stderrLines)")
        let next = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(next.status == 0, "\(next.stderrLines)\n\(rig.daemonLog)")
        #expect(rig.logLines(containing: "stays open for the next requests").count == 2,
                "the reader enumerated anew was not the one opened:\n\(rig.daemonLog)")
        #expect(rig.daemonHoldsSocket(boundTo: rig.finger.socketPath), "\(rig.daemonLog)")
        #expect(!rig.daemonLog.contains("fatal signal"), "\(rig.daemonLog)")
    }

    @Test("without a system bus, or without logind on it, the daemon serves as usual and says once that sleep is not watched")
    func withoutLogind() async throws {
        let bus = try await LogindRig(logind: false)
        defer { bus.stop() }
        for address in ["unix:path=/nonexistent/touchgate-test-bus", bus.busAddress] {
            let rig = try await DaemonRig()
            rig.daemonEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": address]
            try await rig.start()
            let status = try await rig.run(["status", "--json"])
            #expect(status.status == 0, "\(address): \(status.stderrLines)")
            let enrolled = try await rig.run(["enroll", "--json", "--finger", "right-index"], presenting: ["whorl"])
            #expect(enrolled.status == 0, "\(address): the reader is served: \(enrolled.stderrLines)\n\(rig.daemonLog)")
            var lines: [Substring] = []
            for _ in 0..<100 {
                lines = rig.daemonLog.split(separator: "\n").filter { $0.contains("sleep is not watched") }
                if !lines.isEmpty { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(lines.count == 1, "\(address): \(rig.daemonLog)")
            #expect(lines.first?.contains("systemd-logind is not on the system bus") == true, "\(rig.daemonLog)")
        }
    }
}
