import CSodium
import CTouchgateSys
import Foundation
import Testing
import TouchgateBasics
@testable import TouchgateVault

#if canImport(Glibc)
import Glibc
#endif

/// The secret-region registry and the fatal-signal handler that wipes it.
///
/// The handler ends the process, so each handler test forks a child that registers a
/// region of a `MAP_SHARED` page, installs the handler and is signalled: the parent then
/// sees what the handler left in that page, on standard error and in the exit status.
/// The child runs only system calls and the C registry (no Swift runtime work) between
/// `fork` and its end. Serialized: one test fills the registry, which others check.
@Suite("Fatal-signal wipe of secret memory", .serialized, .timeLimit(.minutes(2)))
struct SecretWipeTests {
    /// What a forked child does once the handler is installed.
    enum Trigger: Sendable, CustomStringConvertible {
        /// `kill(getpid(), signal)`, as `kill -SEGV` from outside.
        case kill(Int32)
        /// A write through a null pointer: a real SIGSEGV.
        case nullWrite
        /// `abort()`, as a failed assertion in C would.
        case abort

        var signal: Int32 {
            switch self {
            case .kill(let signal): signal
            case .nullWrite: SIGSEGV
            case .abort: SIGABRT
            }
        }

        var description: String {
            switch self {
            case .kill(let signal): "kill \(signal)"
            case .nullWrite: "null write"
            case .abort: "abort()"
            }
        }
    }

    /// What the parent observed.
    struct ChildOutcome {
        /// The exit status, if the child exited (rather than being killed by a signal).
        var exitStatus: Int32?
        /// The signal that killed the child, if any.
        var killedBy: Int32?
        /// Everything the child wrote to standard error.
        var stderr: String
        /// The registered region after the child ended.
        var secret: [UInt8]
        /// The unregistered bytes right after it, on the same page.
        var neighbour: [UInt8]
    }

    static let pattern: [UInt8] = Array("correct horse battery staple 0123456789".utf8)

    /// Forks a child that registers a secret in shared memory (read-only if asked),
    /// installs the handler and fires `trigger`.
    func runChild(_ trigger: Trigger, readOnly: Bool = false) throws -> ChildOutcome {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let mapping = mmap(nil, pageSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
        guard let mapping, mapping != MAP_FAILED else { throw POSIXError(.ENOMEM) }
        defer { munmap(mapping, pageSize) }
        let length = Self.pattern.count
        let secret = mapping + 128
        let neighbour = secret + length
        Self.pattern.withUnsafeBytes { source in
            secret.copyMemory(from: source.baseAddress!, byteCount: length)
            neighbour.copyMemory(from: source.baseAddress!, byteCount: length)
        }

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        // Processes other tests start must not hold the write end open.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)

        let pid = fork()
        if pid == 0 {
            Self.child(trigger, secret: secret, length: length, page: mapping, pageSize: pageSize,
                       readOnly: readOnly, stderr: writeEnd)
        }
        close(writeEnd)
        try #require(pid > 0, "fork failed: errno \(errno)")

        // Wait at most 20 s: a child that hangs is a failure, not a stuck test run.
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(20)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                Issue.record("the child did not end within 20 s after \(trigger)")
                break
            }
            usleep(5_000)
        }

        // The child is gone, so all it wrote is in the pipe: read without blocking.
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count <= 0 { break }
            output += buffer[0..<count]
        }

        let signalled = status & 0x7f
        return ChildOutcome(
            exitStatus: signalled == 0 ? (status >> 8) & 0xff : nil,
            killedBy: signalled != 0 && signalled != 0x7f ? signalled : nil,
            stderr: String(decoding: output, as: UTF8.self),
            secret: Array(UnsafeRawBufferPointer(start: secret, count: length)),
            neighbour: Array(UnsafeRawBufferPointer(start: neighbour, count: length)))
    }

    /// The forked child: system calls and the C registry only; never returns.
    @inline(never)
    static func child(
        _ trigger: Trigger, secret: UnsafeMutableRawPointer, length: Int, page: UnsafeMutableRawPointer,
        pageSize: Int, readOnly: Bool, stderr: Int32
    ) -> Never {
        dup2(stderr, 2)
        if CTouchgateSys_secret_register(secret, length) < 0 { _exit(90) }
        if readOnly, mprotect(page, pageSize, PROT_READ) != 0 { _exit(91) }
        if CTouchgateSys_install_fatal_signal_handlers(nil) != 0 { _exit(92) }
        switch trigger {
        case .kill(let signal):
            kill(getpid(), signal)
        case .nullWrite:
            UnsafeMutablePointer<UInt8>(bitPattern: 8)!.pointee = 1
        case .abort:
            abort()
        }
        // Only reached if the handler let the process continue.
        _exit(93)
    }

    static let signalNames: [Int32: String] = [
        SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGFPE: "SIGFPE", SIGABRT: "SIGABRT",
        SIGTRAP: "SIGTRAP", SIGSYS: "SIGSYS", SIGQUIT: "SIGQUIT", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
    ]

    /// The one line the handler writes for `signal`.
    static func line(for signal: Int32) -> String {
        "touchgate: stopped by fatal signal \(signal) (\(signalNames[signal]!)); memory wiped, nothing further released\n"
    }

    @Test(
        "every fatal signal wipes the registered region, prints one line and exits 128 + N",
        arguments: [
            Trigger.kill(SIGSEGV), .kill(SIGBUS), .kill(SIGILL), .kill(SIGFPE), .kill(SIGABRT), .kill(SIGTRAP),
            .kill(SIGSYS), .kill(SIGQUIT), .kill(SIGXCPU), .kill(SIGXFSZ), .nullWrite, .abort,
        ])
    func handlerWipes(trigger: Trigger) throws {
        let outcome = try runChild(trigger)
        #expect(outcome.exitStatus == 128 + trigger.signal, "killed by \(outcome.killedBy.map(String.init) ?? "-")")
        #expect(outcome.stderr == Self.line(for: trigger.signal))
        #expect(outcome.secret.allSatisfy { $0 == 0 }, "the registered bytes were zeroed")
        #expect(outcome.neighbour == Self.pattern, "bytes outside the region were left alone")
    }

    @Test("a region made read-only (as AuditKey does) is still wiped")
    func readOnlyRegion() throws {
        let outcome = try runChild(.kill(SIGSEGV), readOnly: true)
        #expect(outcome.exitStatus == 128 + SIGSEGV)
        #expect(outcome.stderr == Self.line(for: SIGSEGV))
        #expect(outcome.secret.allSatisfy { $0 == 0 })
        #expect(outcome.neighbour == Self.pattern)
    }

    @Test("register and unregister pair up; a wrong slot or pointer is refused")
    func registryBookkeeping() throws {
        let region = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
        defer { region.deallocate() }
        let other = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16)
        defer { other.deallocate() }
        #expect(CTouchgateSys_secret_register(region, 0) == -1, "an empty region is not recorded")
        #expect(CTouchgateSys_secret_register(nil, 16) == -1)

        let slot = CTouchgateSys_secret_register(region, 16)
        try #require(slot >= 0)
        #expect(CTouchgateSys_secret_unregister(slot, other) == -1, "another pointer does not free the slot")
        #expect(CTouchgateSys_secret_unregister(-1, region) == -1)
        #expect(CTouchgateSys_secret_unregister(Int(CTOUCHGATESYS_SECRET_REGION_SLOTS), region) == -1)
        #expect(CTouchgateSys_secret_unregister(slot, region) == 0)
        #expect(CTouchgateSys_secret_unregister(slot, region) == -1, "a slot is freed once")
    }

    @Test("SecretBytes and the vault's keys are registered from the start")
    func secureBytesRegistered() throws {
        let bytes = SecretBytes.random(count: 32)
        #expect(bytes.registrySlot >= 0)
        #expect(SecretBytes(copying: Array("hunter2".utf8)).registrySlot >= 0)
        #expect(SecretBytes(copying: []).registrySlot >= 0, "even an empty value holds one guarded byte")
        let fixture = try VaultFixture()
        #expect(fixture.key.bytes.registrySlot >= 0)
    }

    @Test("many concurrent SecretBytes, beyond the registry's size, all work and release cleanly")
    func concurrentAndFull() async throws {
        let capacity = Int(CTOUCHGATESYS_SECRET_REGION_SLOTS)
        do {
            // 8 tasks make 2 × capacity values; all stay alive until the end of this scope.
            let made = await withTaskGroup(of: [(SecretBytes, [UInt8])].self) { group in
                for task in 0..<8 {
                    group.addTask {
                        (0..<(capacity / 4)).map { index in
                            let value = Array("secret \(task)-\(index)".utf8)
                            return (SecretBytes(copying: value), value)
                        }
                    }
                }
                var all: [(SecretBytes, [UInt8])] = []
                for await batch in group { all += batch }
                return all
            }
            #expect(made.count == 2 * capacity)
            #expect(made.allSatisfy { bytes, value in bytes.withUnsafeBytes { Array($0) } == value },
                    "every value reads back intact, registered or not")
            let unregistered = made.filter { $0.0.registrySlot < 0 }.count
            #expect(unregistered >= capacity, "the table filled up and the rest fell back")
            let slots = made.map(\.0.registrySlot).filter { $0 >= 0 }
            #expect(Set(slots).count == slots.count, "no slot was handed out twice")
        }
        // Every value was released with its scope and gave its slot back.
        let after = (0..<16).map { _ in SecretBytes.random(count: 8) }
        #expect(after.allSatisfy { $0.registrySlot >= 0 })
    }
}
