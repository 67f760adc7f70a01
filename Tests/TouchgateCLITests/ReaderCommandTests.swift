import Foundation
import Testing
import TouchgateImageIO
import TouchgateTestSupport

/// The reader commands through the built binary on libfprint's virtual_image driver.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ReaderCommandTests {
    @Test func devicesListsTheVirtualReaderAsJSON() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        let result = try await rig.run(["devices", "--json"])
        #expect(result.status == 0)
        let devices = try #require(result.json?["devices"] as? [[String: Any]])
        #expect(devices.count == 1)
        #expect(devices.first?["driver"] as? String == "virtual_image")
        #expect((devices.first?["features"] as? [String])?.contains("identify") == true)
        #expect(devices.first?["backend"] as? String == "libfprint")
        #expect(devices.first?["temperature"] as? String == "cold", "libfprint's estimate, from cold in a new process")
    }

    @Test func noReaderIsExitTwoWithAMessage() async throws {
        let rig = try CLIRig(drivers: "no_such_driver")
        defer { rig.home.remove() }
        let result = try await rig.run(["devices"])
        #expect(result.status == 0, "no reader is an empty list, not an error")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.joined().contains("no fingerprint reader found"))
        let listed = try await rig.run(["devices", "--json"])
        #expect(listed.status == 0)
        #expect((listed.json?["devices"] as? [Any])?.isEmpty == true)
        let enroll = try await rig.run(["enroll", "--json"])
        #expect(enroll.status == 2)
        #expect(enroll.json?["error"] as? String == "no-reader")
        // Nothing is enrolled, so verify refuses before looking for a reader at all.
        let verify = try await rig.run(["verify", "--json"])
        #expect(verify.status == 3)
        #expect(verify.json?["error"] as? String == "nothing-enrolled")
    }

    @Test func enrollPromptsOncePerStageThenVerifyMatchesOnlyTheSameFinger() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        let enroll = try await rig.enroll("whorl")
        #expect(enroll.status == 0, "\(enroll.stderrLines)")
        #expect(enroll.json?["result"] as? String == "enrolled")
        #expect(enroll.json?["user"] as? String == NSUserName())
        // Exactly one prompt each time the reader waits, each followed by its stage.
        let flow = enroll.eventNames.filter { $0 == "finger-needed" || $0 == "enroll-stage" }
        #expect(flow == Array(repeating: ["finger-needed", "enroll-stage"], count: 5).flatMap { $0 })
        let stages = enroll.events.filter { $0["event"] as? String == "finger-needed" }.compactMap { $0["stage"] as? Int }
        #expect(stages == [1, 2, 3, 4, 5])
        #expect(rig.finger.prompts == 5)

        let match = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(match.status == 0)
        #expect(match.json?["match"] as? Bool == true)
        #expect(match.json?["finger"] as? String == "right-index")
        #expect(match.eventNames.filter { $0 == "finger-needed" }.count == 1)
        // Two wrong fingers: counted, one left before the lockout (default threshold 3).
        for (other, left) in [("arch", 2), ("loop-right", 1)] {
            let result = try await rig.run(["verify", "--json"], presenting: [other])
            #expect(result.status == 1, "\(other) must not match")
            #expect(result.json?["result"] as? String == "no-match")
            #expect(result.json?["attempts-left"] as? Int == left)
        }
        // Standard output holds only the result.
        let text = try await rig.run(["verify"], presenting: ["whorl"])
        #expect(text.stdout == "match: right-index of \(NSUserName())\n")
    }

    @Test func enrollRefusesAnEnrolledFingerUnlessReplace() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        try await rig.enroll("whorl")
        let again = try await rig.enroll("arch")
        #expect(again.status == 9)
        #expect(again.json?["error"] as? String == "already-enrolled")
        #expect(rig.finger.prompts == 0, "refused before asking for a finger")
        let replaced = try await rig.enroll("arch", extra: ["--replace"])
        #expect(replaced.status == 0)
        #expect(try await rig.run(["verify"], presenting: ["arch"]).status == 0)
        #expect(try await rig.run(["verify"], presenting: ["whorl"]).status == 1)
    }

    @Test func identifyNamesUserAndFinger() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        try await rig.enroll("whorl", finger: "right-index")
        try await rig.enroll("arch", finger: "left-thumb")
        try await rig.enroll("loop-right", finger: "right-middle")
        for (print, finger) in [("arch", "left-thumb"), ("loop-right", "right-middle"), ("whorl", "right-index")] {
            let result = try await rig.run(["identify", "--json"], presenting: [print])
            #expect(result.status == 0)
            #expect(result.json?["finger"] as? String == finger)
            #expect(result.json?["user"] as? String == NSUserName())
        }
        let none = try await rig.run(["identify", "--json"], presenting: ["tented_arch"])
        #expect(none.status == 1)
        // verify --finger narrows to one finger.
        #expect(try await rig.run(["verify", "--finger", "left-thumb"], presenting: ["whorl"]).status == 1)
        #expect(try await rig.run(["verify", "--finger", "left-thumb"], presenting: ["arch"]).status == 0)
    }

    @Test func printsListAndDelete() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        #expect(try await rig.run(["verify"]).status == 3, "nothing enrolled")
        try await rig.enroll("whorl")
        let list = try await rig.run(["prints", "list", "--json"])
        let prints = try #require(list.json?["prints"] as? [[String: Any]])
        #expect(prints.count == 1)
        #expect(prints.first?["finger"] as? String == "right-index")
        #expect(!list.stdout.contains("FP3"), "templates never leave the store")
        let delete = try await rig.run(["prints", "delete", "--finger", "right-index", "--json"])
        #expect(delete.status == 0)
        #expect(try await rig.run(["verify", "--json"]).status == 3)
        #expect(try await rig.run(["prints", "delete", "--finger", "right-index"]).status == 3)
    }

    @Test func filesArePrivate() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        try await rig.enroll("whorl")
        let attributes = try FileManager.default.attributesOfItem(atPath: rig.dataDirectory)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        for file in try FileManager.default.contentsOfDirectory(atPath: rig.dataDirectory) {
            let mode = try FileManager.default.attributesOfItem(atPath: rig.dataDirectory + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
        // A store that others can read is refused, and left as it was.
        chmod(rig.dataDirectory, 0o755)
        let refused = try await rig.run(["prints", "list"])
        #expect(refused.status == 6)
        #expect(refused.stderrLines.joined().contains("chmod 700"))
    }

    @Test func ctrlCDuringVerifyReleasesTheReader() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        try await rig.enroll("whorl")
        let started = Date()
        let result = try await rig.process.run(["verify", "--json"]) { line, process in
            if line.contains("finger-needed") { kill(process.processIdentifier, SIGINT) }
        }
        #expect(result.status == 130)
        #expect(result.json?["error"] as? String == "cancelled")
        #expect(Date().timeIntervalSince(started) < 5)
        // The next process gets the reader as usual.
        #expect(try await rig.run(["verify"], presenting: ["whorl"]).status == 0)
    }

    @Test func unplugDuringVerifyIsDisconnected() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        try await rig.enroll("whorl")
        rig.finger.present([])
        let finger = rig.finger
        let result = try await rig.process.run(["verify", "--json"]) { line, _ in
            if line.contains("finger-needed") { try? finger.unplug() }
        }
        #expect(result.status == 4)
        #expect(result.json?["error"] as? String == "disconnected")
    }

    @Test func captureWritesPGMAndPNGOfTheScannedImage() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        let expected = try Fixtures.print("whorl")
        for name in ["scan.pgm", "scan.png"] {
            let path = rig.home.path(name)
            let result = try await rig.run(["capture", "--output", path, "--json"], presenting: ["whorl"])
            #expect(result.status == 0, "\(result.stderrLines)")
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            let image = name.hasSuffix(".png") ? try GreyImage(png: data) : try GreyImage(pgm: data)
            #expect(image == expected)
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
        #expect(try await rig.run(["capture", "--output", rig.home.path("scan.jpg")]).status == 64)
    }
}
