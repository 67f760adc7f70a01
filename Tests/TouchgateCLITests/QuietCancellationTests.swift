import Foundation
import Testing
import TouchgateTestSupport

/// Ctrl-C at the finger wait ends the run with its own message only: no GLib warning on
/// either output. The race behind the `g_source_unref` critical showed in about 4 of 10
/// runs, so the test repeats the cancel many times.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct QuietCancellationTests {
    /// Lines that GLib's logging would print (`GLib-CRITICAL **`, `libfprint-WARNING **`, …).
    static func glibNoise(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init).filter {
            $0.contains("GLib") || $0.contains("CRITICAL") || $0.contains("WARNING") || $0.contains("**")
        }
    }

    @Test func ctrlCAtTheFingerWaitPrintsNoGLibWarning() async throws {
        let rig = try CLIRig()
        defer { rig.home.remove() }
        #expect(try await rig.enroll("whorl").status == 0)
        for run in 0..<30 {
            let json = run % 2 == 0
            let result = try await rig.process.run(["verify"] + (json ? ["--json"] : [])) { line, process in
                if VirtualImageFinger.isPrompt(line) { kill(process.processIdentifier, SIGINT) }
            }
            #expect(result.status == 130, "run \(run): \(result.stderrLines)")
            if json { #expect(result.json?["error"] as? String == "cancelled", "run \(run): \(result.stdout)") }
            let noise = Self.glibNoise(result.stdout) + result.stderrLines.flatMap(Self.glibNoise)
            #expect(noise.isEmpty, "run \(run) (\(json ? "--json" : "text")): \(noise)")
        }
    }
}
