import Foundation
import Testing

/// A short `make fuzz`: every libFuzzer target (the socket protocol decoder and receive
/// buffer, the policy string parser, the stored policy-state and reader-ledger decoders,
/// the audit records' cleaning and encoding, the thin front's JSON and the PAM module's C
/// reader against Foundation's; see fuzz/) is built with
/// `swiftc -sanitize=fuzzer,address` and runs its seed corpus plus a few thousand
/// mutations. Fails when a target crashes, breaks a round trip, or cannot be built.
@Suite("Fuzzing", .serialized, .timeLimit(.minutes(15)))
struct FuzzTests {
    static let runs = 20_000
    static let targets = ["protocol", "policy", "stored-state", "frame-buffer", "reader-ledger", "audit", "front-json", "pam-reader"]
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("a short run of every fuzz target finds no crash")
    func shortFuzzRunFindsNothing() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/make"),
                     "this test needs make: apt-get install make")
        let (status, output) = try await Self.offThePool {
            try Self.run("/usr/bin/timeout", ["840", "make", "-C", Self.packageRoot.path, "fuzz", "FUZZ_RUNS=\(Self.runs)"],
                         timeout: 870)
        }
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

    /// Runs blocking `work` on a thread of its own: waiting for make must not hold one of the
    /// cooperative pool's few threads, which the other tests' timers need.
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Runs a program to completion (killed after `timeout` seconds), output through a
    /// file so a chatty program cannot block on a full pipe.
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval) throws -> (Int32, String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-fuzz-\(UUID().uuidString).log")
        try Data().write(to: log)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let pid = process.processIdentifier
        let killer = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        process.waitUntilExit()
        killer.cancel()
        try handle.close()
        return (process.terminationStatus, try String(contentsOf: log, encoding: .utf8))
    }
}
