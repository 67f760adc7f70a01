import Foundation
import Testing
import TouchgateTestSupport

/// The way every end-to-end test runs a program (``ProgramRun``) survives what the programs
/// under test do on purpose: end before reading their input.
@Suite struct ProgramRunTests {
    @Test func aProgramThatEndsBeforeReadingItsInputEndsTheRunNotTheTests() async throws {
        // head reads a line and exits, its end of the pipe closed under 700 KB still to
        // write: swift-subprocess's own writer then ended the whole test process.
        let input = Data((0..<100_000).map { "line-\($0)" }.joined(separator: "\n").utf8)
        for _ in 0..<3 {
            let result = try await ProgramRun.run("/usr/bin/head", ["-n", "1"], environment: [:], stdin: input)
            #expect(result.status == 0 && result.stdout == "line-0\n", "\(result.status) \(result.stdout)")
        }
        let refused = try await ProgramRun.run("/bin/sh", ["-c", "exit 3"], environment: [:], stdin: input)
        #expect(refused.status == 3)
    }
}
