import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Touchgate alongside the real fprintd (Debian's), on a private system bus with
/// libfprint's virtual_image reader behind it (``FprintdRig``): prints enrolled with
/// `fprintd-enroll`, verified and released by touchgate through fprintd, and imported into
/// Touchgate's own store.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct FprintdTests {
    /// A vault rig whose touchgate talks to `fprintd`'s bus. Its own virtual_image finger
    /// presents nothing unless a test asks: fprintd's finger plays while fprintd owns the reader.
    static func vaultRig(_ fprintd: FprintdRig) throws -> VaultRig {
        var vault = try VaultRig()
        vault.rig.process.environment.merge(fprintd.environment) { $1 }
        return vault
    }

    /// `fprintd-enroll -f finger $USER` with `print`; required to succeed.
    static func enroll(_ fprintd: FprintdRig, _ print: String, finger: String = "right-index-finger") async throws {
        let result = try await fprintd.tool(["fprintd-enroll", "-f", finger, NSUserName()], presenting: [print])
        try #require(result.status == 0, "fprintd-enroll: \(result.output)")
        try #require(result.output.contains("enroll-completed"), "fprintd-enroll: \(result.output)")
    }

    @Test func verifiesThroughFprintdAgainstItsPrints() async throws {
        let fprintd = try await FprintdRig()
        defer { fprintd.stop() }
        let vault = try Self.vaultRig(fprintd)
        defer { vault.home.remove() }
        try await Self.enroll(fprintd, "whorl")

        let devices = try await vault.run(["devices", "--json"])
        let listed = try #require(devices.json?["devices"] as? [[String: Any]])
        #expect(listed.count == 1)
        #expect(listed.first?["backend"] as? String == "fprintd")
        #expect(listed.first?["name"] as? String == "Virtual image device for debugging")
        #expect(try await vault.status()["reader-backend"] as? String == "fprintd")
        #expect(try await vault.run(["devices"]).stdout.contains("fprintd"))

        fprintd.finger.present(["whorl"])
        let match = try await vault.run(["verify", "--json"])
        #expect(match.status == 0, "\(match.stderrLines)")
        #expect(match.json?["match"] as? Bool == true)
        #expect(match.json?["finger"] as? String == "right-index", "fprintd named the finger it checked")
        #expect(match.eventNames.filter { $0 == "finger-needed" } == ["finger-needed"], "one prompt per scan")
        #expect(fprintd.finger.prompts == 1)

        // fprintd's finger names are accepted as well as Touchgate's.
        for name in ["right-index-finger", "right-index"] {
            fprintd.finger.present(["whorl"])
            let named = try await vault.run(["verify", "--json", "--finger", name])
            #expect(named.status == 0, "\(name): \(named.stderrLines)")
            #expect(named.json?["finger"] as? String == "right-index")
        }
        fprintd.finger.present(["whorl"])
        let notThere = try await vault.run(["verify", "--json", "--finger", "left-thumb"])
        #expect(notThere.status == 3)
        #expect(Self.message(notThere).contains("fprintd-enroll -f left-thumb"))
        #expect(fprintd.finger.prompts == 0, "refused before claiming the reader")

        fprintd.finger.present(["arch"])
        let miss = try await vault.run(["verify", "--json"])
        #expect(miss.status == 1)
        #expect(miss.json?["result"] as? String == "no-match")
        #expect(miss.json?["attempts-left"] as? Int == 2, "counted like any attempt")

        // A poor scan: fprintd says verify-retry-scan, touchgate asks again and matches.
        fprintd.finger.present(["retry", "whorl"])
        let retried = try await vault.run(["verify", "--json"])
        #expect(retried.status == 0, "\(retried.stderrLines)")
        #expect(retried.eventNames.filter { $0 == "retry" }.count == 1)
        #expect(retried.eventNames.filter { $0 == "finger-needed" }.count == 2)
        // fprintd starts the next scan by itself after a retry; touchgate stops it and starts
        // its own (one VerifyStart per scan the policy core counts), so the reader may wait once more.
        #expect(fprintd.finger.prompts >= 2)

        // fprintd manages the prints: enrolling and deleting say so, not "busy".
        for arguments in [["enroll", "--json"], ["prints", "delete", "--finger", "right-index", "--json"]] {
            let refused = try await vault.run(arguments)
            #expect(refused.status == 5, "\(arguments): \(refused.stderrLines)")
            let message = refused.json?["message"] as? String ?? ""
            #expect(message.contains("managed by fprintd") && message.contains("fprintd-enroll"), "\(message)")
            #expect(!message.contains("busy"))
        }

        // Forcing the direct backend shows the reader libfprint finds instead.
        var direct = vault.rig.process
        direct.environment["TOUCHGATE_READER_BACKEND"] = "libfprint"
        let forced = try await direct.run(["devices", "--json"])
        #expect((forced.json?["devices"] as? [[String: Any]])?.first?["backend"] as? String == "libfprint")
        direct.environment["TOUCHGATE_READER_BACKEND"] = "sometimes"
        let unknown = try await direct.run(["verify", "--json"])
        #expect(unknown.status == 64, "an unknown backend is a usage error: \(unknown.stderrLines)")
    }

    /// fprintd with whorl enrolled, on a bus the daemon can reach: it runs under a user of
    /// its own. Stop it when done.
    static func fprintdForTheDaemon() async throws -> FprintdRig {
        let fprintd = try await FprintdRig()
        do {
            try await enroll(fprintd, "whorl")
        } catch {
            fprintd.stop()
            throw error
        }
        chmod(fprintd.directory.url.path, 0o755)
        chmod(fprintd.directory.path("system-bus.socket"), 0o666)
        return fprintd
    }

    @Test("touchgated beside fprintd verifies through it and never opens the reader itself")
    func daemonVerifiesThroughFprintd() async throws {
        let fprintd = try await Self.fprintdForTheDaemon()
        defer { fprintd.stop() }
        let rig = try await DaemonRig()
        // The daemon could reach a virtual_image reader of its own too (DaemonRig gives it
        // one): with fprintd on the bus it must leave readers to fprintd all the same.
        rig.daemonEnvironment = fprintd.environment
        // A line per request, to count the verifies below.
        rig.daemonArguments = ["--log-level", "debug"]
        try await rig.start()

        let devices = try await rig.run(["devices", "--json"])
        let listed = try #require(devices.json?["devices"] as? [[String: Any]], "\(devices.stdout) \(devices.stderrLines)")
        #expect(listed.map { $0["backend"] as? String } == ["fprintd"], "\(devices.stdout)")
        #expect(listed.first?["open"] == nil, "fprintd's reader is not the daemon's to hold: \(devices.stdout)")

        fprintd.finger.present(["whorl"])
        let match = try await rig.run(["verify", "--json"])
        #expect(match.status == 0, "\(match.stderrLines)\n\(rig.daemonLog)")
        #expect(match.json?["match"] as? Bool == true)
        #expect(match.json?["finger"] as? String == "right-index", "fprintd named the finger it checked")
        #expect(fprintd.finger.prompts == 1, "fprintd's reader was not the one that scanned")
        fprintd.finger.present(["arch"])
        let miss = try await rig.run(["verify", "--json"])
        #expect(miss.status == 1, "\(miss.stderrLines)\n\(rig.daemonLog)")
        #expect(fprintd.finger.prompts == 1)

        // The daemon's own virtual_image reader would listen on its socket once opened: it
        // never was, and the daemon never even enumerated readers.
        #expect(!FileManager.default.fileExists(atPath: rig.finger.socketPath), "the daemon opened a reader itself")
        #expect(rig.logLines(containing: "readers enumerated").isEmpty, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: "stays open").isEmpty, "\(rig.daemonLog)")
        #expect(rig.logLines(containing: ": verify").count == 2, "\(rig.daemonLog)")
    }

    @Test("touchgated beside fprintd refuses at once when the lid is closed over a built-in reader, and asks fprintd when it opens")
    func daemonClosedLidThroughFprintd() async throws {
        let fprintd = try await Self.fprintdForTheDaemon()
        defer { fprintd.stop() }
        // logind's stand-in on fprintd's bus, with a lid.
        let logind = try await LogindRig(joining: fprintd.environment["DBUS_SYSTEM_BUS_ADDRESS"])
        defer { logind.stop() }
        try await logind.setLid(closed: true)
        let rig = try await DaemonRig()
        rig.daemonEnvironment = fprintd.environment
        rig.daemonArguments = ["--reader-placement", "built-in"]
        try await rig.start()

        fprintd.finger.present(["whorl"])
        let started = Date()
        let refused = try await rig.run(["verify", "--json"])
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderrLines)\n\(rig.daemonLog)")
        #expect(refused.stderrLines.joined().contains("the lid is closed"), "\(refused.stderrLines)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(fprintd.finger.prompts == 0, "fprintd was never asked to scan")

        try await logind.setLid(closed: false)
        let matched = try await rig.run(["verify", "--json"])
        #expect(matched.status == 0 && fprintd.finger.prompts == 1, "\(matched.stderrLines)\n\(rig.daemonLog)")
    }

    @Test func ctrlCStopsTheVerificationAndReleasesTheReader() async throws {
        let fprintd = try await FprintdRig()
        defer { fprintd.stop() }
        let vault = try Self.vaultRig(fprintd)
        defer { vault.home.remove() }
        try await Self.enroll(fprintd, "whorl")

        fprintd.finger.present([])
        let cancelled = try await vault.rig.process.run(["verify", "--json"]) { line, process in
            if line.contains("\"event\":\"finger-needed\"") { kill(process.processIdentifier, SIGINT) }
        }
        #expect(cancelled.status == 130, "\(cancelled.stderrLines)")
        #expect(cancelled.errorCode == "cancelled")
        #expect(!cancelled.stderrLines.joined().contains("CRITICAL"))
        // fprintd is free again: its own verify claims the reader and matches.
        let after = try await fprintd.tool(["fprintd-verify", NSUserName()], presenting: ["whorl"])
        #expect(after.status == 0, "\(after.output)")
        #expect(after.output.contains("verify-match"))
    }

    @Test func biometryCurrentSetFollowsTheFingersEnrolledInFprintd() async throws {
        let fprintd = try await FprintdRig()
        defer { fprintd.stop() }
        let vault = try Self.vaultRig(fprintd)
        defer { vault.home.remove() }
        try await Self.enroll(fprintd, "whorl")
        try await vault.initAndUnlock()
        try await vault.add("bound", "only-this-set", policy: "biometry-current-set")
        try await vault.add("any", "any-finger", policy: "biometry-any")

        fprintd.finger.present(["whorl"])
        let opened = try await vault.get("bound")
        #expect(opened.status == 0, "\(opened.stderrLines)")
        #expect(opened.released == "only-this-set")

        // A finger enrolled through fprintd, behind touchgate's back, invalidates the item.
        try await Self.enroll(fprintd, "arch", finger: "left-thumb")
        fprintd.finger.present(["whorl"])
        let gone = try await vault.get("bound")
        #expect(gone.status == 8, "\(gone.stderrLines)")
        #expect(gone.errorCode == "item-invalidated")
        #expect(fprintd.finger.prompts == 0, "refused before asking for a finger")
        fprintd.finger.present(["arch"])
        let kept = try await vault.get("any")
        #expect(kept.status == 0, "biometry-any still opens with a finger fprintd knows: \(kept.stderrLines)")
        #expect(kept.released == "any-finger")

        // Bound to the two fingers now; fprintd-delete, then the very same finger names again:
        // the item stays refused, as the fingers are not the ones it was bound to.
        try await vault.add("bound-again", "second-set", policy: "biometry-current-set")
        let deleted = try await fprintd.tool(["fprintd-delete", NSUserName()])
        #expect(deleted.status == 0, "\(deleted.output)")
        fprintd.finger.present(["whorl"])
        #expect(try await vault.get("bound-again").errorCode == "item-invalidated")
        try await Self.enroll(fprintd, "whorl")
        try await Self.enroll(fprintd, "arch", finger: "left-thumb")
        fprintd.finger.present(["whorl"])
        let stillGone = try await vault.get("bound-again")
        #expect(stillGone.status == 8)
        #expect(stillGone.errorCode == "item-invalidated")

        // Each change touchgate saw is in the audit trail.
        let trail = try await vault.run(["audit", "export"]).stdout
        #expect(trail.contains("*@fprintd:Virtual image device for debugging"), "\(trail)")
    }

    @Test func importCopiesFprintdsPrintsSealedAndTheyMatchOnTheReaderDirectly() async throws {
        let fprintd = try await FprintdRig()
        defer { fprintd.stop() }
        let vault = try Self.vaultRig(fprintd)
        defer { vault.home.remove() }
        try await Self.enroll(fprintd, "whorl")
        try await Self.enroll(fprintd, "arch", finger: "left-thumb")
        await fprintd.stopFprintd()
        try await vault.initAndUnlock()
        let stored = try FileManager.default.subpathsOfDirectory(atPath: fprintd.stateDirectory)
        // fprintd's layout: <user>/<driver>/<device id>/<finger number in hex>: 7 right index, 1 left thumb.
        #expect(stored.contains("\(NSUserName())/virtual_image/0/7") && stored.contains("\(NSUserName())/virtual_image/0/1"),
                "\(stored)")

        let dryRun = try await vault.run(["import", "fprintd", "--from", fprintd.stateDirectory, "--dry-run", "--json"])
        #expect(dryRun.status == 0, "\(dryRun.stderrLines)")
        #expect((dryRun.json?["imported"] as? [Any])?.count == 2)
        #expect((try await vault.run(["prints", "list", "--json"]).json?["prints"] as? [Any])?.isEmpty == true,
                "a dry run writes nothing")

        let imported = try await vault.withPassphrase(["import", "fprintd", "--from", fprintd.stateDirectory, "--json",
                                                       "--yes"])
        #expect(imported.status == 0, "\(imported.stderrLines)")
        let prints = try #require(imported.json?["imported"] as? [[String: Any]])
        #expect(Set(prints.compactMap { $0["finger"] as? String }) == ["right-index", "left-thumb"])
        #expect(prints.allSatisfy { $0["driver"] as? String == "virtual_image" && $0["device-id"] as? String == "0" })
        let list = try await vault.run(["prints", "list", "--json"])
        #expect((list.json?["prints"] as? [Any])?.count == 2)
        #expect(try await vault.sql("SELECT count(*) FROM print") == "2")
        #expect(try await vault.sql("SELECT count(*) FROM print WHERE instr(template, 'FP3') > 0") == "0",
                "templates are sealed, not stored as fprintd wrote them")
        let trail = try await vault.auditTrail()
        #expect(trail.matching(["event": "finger.enroll"]).count == 2, "each print is an audited enrollment")

        let again = try await vault.withPassphrase(["import", "fprintd", "--from", fprintd.stateDirectory, "--json"])
        #expect(again.status == 0)
        #expect((again.json?["imported"] as? [Any])?.isEmpty == true)
        let skipped = try #require(again.json?["skipped"] as? [[String: Any]])
        #expect(skipped.count == 2)
        #expect(skipped.allSatisfy { ($0["reason"] as? String ?? "").contains("already enrolled") })

        // fprintd is gone from the bus, so touchgate opens the reader itself.
        #expect(try await vault.status()["reader-backend"] as? String == "libfprint")
        for (print, finger) in [("whorl", "right-index"), ("arch", "left-thumb")] {
            let match = try await vault.run(["verify", "--json"], presenting: [print])
            #expect(match.status == 0, "\(print): \(match.stderrLines)")
            #expect(match.json?["finger"] as? String == finger)
        }
        #expect(try await vault.run(["verify", "--json"], presenting: ["tented_arch"]).status == 1)
    }

    @Test func importRefusesADamagedStoreAndWritesNothing() async throws {
        let fprintd = try await FprintdRig()
        defer { fprintd.stop() }
        let vault = try Self.vaultRig(fprintd)
        defer { vault.home.remove() }
        try await Self.enroll(fprintd, "whorl")
        try await Self.enroll(fprintd, "arch", finger: "left-thumb")
        await fprintd.stopFprintd()

        let copy = vault.home.path("fprint-copy")
        try FileManager.default.copyItem(atPath: fprintd.stateDirectory, toPath: copy)
        let file = "\(copy)/\(NSUserName())/virtual_image/0/7"
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: file))
        let damaged = try await vault.run(["import", "fprintd", "--from", copy, "--json"])
        #expect(damaged.status == 6, "\(damaged.stderrLines)")
        #expect(damaged.errorCode == "data-error")
        let message = damaged.json?["message"] as? String ?? ""
        #expect(message.contains(file) && message.contains("nothing was imported"), "\(message)")
        #expect((try await vault.run(["prints", "list", "--json"]).json?["prints"] as? [Any])?.isEmpty == true,
                "the good print was not imported alone")

        try whole.write(to: URL(fileURLWithPath: file))
        try Data("FP3".utf8).write(to: URL(fileURLWithPath: "\(copy)/\(NSUserName())/virtual_image/0/notes"))
        let foreign = try await vault.run(["import", "fprintd", "--from", copy, "--json"])
        #expect(foreign.status == 6)
        #expect(Self.message(foreign).contains("not named like a print"))

        let nobody = try await vault.run(["import", "fprintd", "--from", copy, "--user", "nobody-here", "--json"])
        #expect(nobody.status == 10)
        #expect(Self.message(nobody).contains("no prints of nobody-here"))
        #expect((try await vault.run(["prints", "list", "--json"]).json?["prints"] as? [Any])?.isEmpty == true)
    }

    /// The `message` of a JSON result, or "".
    static func message(_ result: CLIResult) -> String {
        (result.json?["message"] as? String) ?? ""
    }
}
