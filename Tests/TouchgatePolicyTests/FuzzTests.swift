import Foundation
import Subprocess
// FilePath, which swift-subprocess takes.
import SystemPackage
import Testing

/// A short `make fuzz`: every libFuzzer target (the socket protocol decoder and receive
/// buffer, the policy string parser, the stored policy-state and reader-ledger decoders,
/// the audit records' cleaning and encoding, the thin front's JSON and the PAM module's C
/// reader against Foundation's, the SSH agent protocol's messages, the security-key
/// provider's C reader, the TPM shim's blob reader, the fleet log's notes, checkpoints,
/// entries and proofs; see fuzz/) is built with
/// `swiftc -sanitize=fuzzer,address` and runs its seed corpus plus a few thousand
/// mutations. Fails when a target crashes, breaks a round trip, or cannot be built.
@Suite("Fuzzing", .serialized, .timeLimit(.minutes(15)))
struct FuzzTests {
    static let runs = 20_000
    static let targets = ["protocol", "policy", "stored-state", "frame-buffer", "reader-ledger", "audit", "front-json", "pam-reader",
                          "ssh-agent", "sk-reader", "tpm-blob", "fleet-formats", "ctap"]
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("a short run of every fuzz target finds no crash")
    func shortFuzzRunFindsNothing() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/make"),
                     "this test needs make: apt-get install make")
        let (status, output) = try await Self.run("/usr/bin/timeout", ["840", "make", "-C", Self.packageRoot.path, "fuzz",
                                                                       "FUZZ_RUNS=\(Self.runs)"], timeout: 870)
        if status != 0 && !output.contains("fuzz: ") && output.contains("libclang_rt") {
            Issue.record("""
                swiftc could not build the fuzz targets with -sanitize=fuzzer,address: the Swift \
                toolchain's libFuzzer and ASan runtimes (lib/swift/clang/lib/linux/libclang_rt.fuzzer-*.a, \
                libclang_rt.asan-*.a) are missing; install the swift.org toolchain for Linux, \
                which ships them. Output:
                \(output)
                """)
        }
        #expect(status == 0, "make fuzz failed (a crash input is kept in .build-fuzz/crash-*):\n\(output)")
        for target in Self.targets {
            #expect(output.contains("fuzz: \(target): \(Self.runs) executions"),
                    "\(target) did not report \(Self.runs) executions:\n\(output)")
        }
    }

    /// Runs a program to its end, standard error after standard output, killed (status
    /// 128 + 9) after `timeout` seconds.
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval) async throws -> (Int32, String) {
        let result = try await Subprocess.run(.path(FilePath(executable)), arguments: Arguments(arguments),
                                              input: .none, output: .string(limit: 1 << 26),
                                              error: .sequence) { execution in
            let pid = execution.processIdentifier.value
            let killer = Task {
                guard (try? await Task.sleep(for: .seconds(timeout))) != nil else { return }
                kill(pid, SIGKILL)
            }
            defer { killer.cancel() }
            var errors = ""
            for try await line in execution.standardError.strings(separatedBy: .unicodeScalarSequence(["\n"]),
                                                                  bufferingPolicy: .unbounded) {
                errors += line + "\n"
            }
            return errors
        }
        let status: Int32 = switch result.terminationStatus {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
        return (status, result.standardOutput + result.closureResult)
    }
}
