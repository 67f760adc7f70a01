import Foundation
import Testing
import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// Issue 45: a door holds the process that connected by a pidfd, so what it reads of the pid
/// later is of that process or is not kept; and a pid whose process does not hold the
/// connection is never taken for the caller.
@Suite("The process behind a connection, held")
struct ProcessHandleTests {
    /// A python process connected to a fresh listening socket, and the accepted end.
    private static func connectedChild() throws -> (Process, Int32, Int32) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("handle-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 1) == 0)
        defer { close(listener); unlink(path) }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        child.arguments = ["-c", "import socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ntime.sleep(60)",
                           path]
        try child.run()
        let accepted = accept(listener, nil, nil)
        try #require(accepted >= 0)
        return (child, accepted, child.processIdentifier)
    }

    /// Ends `child` and waits for it. SIGKILL, not Process.terminate(): under the test runner
    /// that left the child to sleep its whole 60 s (measured: this suite took 60.1 s every
    /// time, 0.12 s with SIGKILL), while waitUntilExit held a thread of the shared pool; with
    /// both tests at it, on two cores, every other test of the run stalled for that minute
    /// (ReaderPresenceTests' one-second deadline took 61 s in CI).
    private static func end(_ child: Process) {
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
    }

    @Test("the connected process is held: its facts while it runs, nothing read of its pid once it exited")
    func theConnectedProcessIsHeld() throws {
        let (child, accepted, pid) = try Self.connectedChild()
        defer { close(accepted) }
        let handle = try #require(ProcessHandle.peer(of: accepted, pid: pid))
        #expect(handle.isRunning)
        #expect(handle.facts?.executablePath?.hasPrefix("/usr/bin/python3") == true, "\(String(describing: handle.facts))")
        var caller = Caller.connected(uid: getuid(), gid: getgid(), pid: pid, executable: nil, door: .daemon, handle: handle)
        #expect(!caller.hasExited && !caller.processChain.isEmpty)

        Self.end(child)
        #expect(!handle.isRunning && caller.hasExited)
        #expect(caller.processChain == ["(it exited before its parents were read)"])
        #expect(caller.session == nil)
        caller.handle = nil
        #expect(!caller.hasExited, "without a handle nothing says it exited")
    }

    @Test("by pid alone, a process that does not hold the connection's other end is not taken for the caller")
    func aPidThatDoesNotHoldTheConnectionIsRefused() throws {
        let (child, accepted, pid) = try Self.connectedChild()
        defer {
            close(accepted)
            Self.end(child)
        }
        #expect(ProcessHandle.opened(checking: accepted, pid: pid)?.pid == pid, "the connected process holds its end")
        #expect(ProcessHandle.opened(checking: accepted, pid: getpid()) == nil, "this process holds only the accepted end")
        #expect(ProcessHandle.opened(checking: accepted, pid: getppid()) == nil)
    }
}
