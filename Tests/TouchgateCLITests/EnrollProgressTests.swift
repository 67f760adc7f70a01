import Foundation
import Testing
import TouchgateTestSupport

/// Enrollment at a terminal shows one line redrawn per scan, a bar and the prompt, where it
/// printed two lines per scan; a pipe still gets every line.
@Suite(.timeLimit(.minutes(2)))
struct EnrollProgressTests {
    @Test("at a terminal, enrollment redraws one bar line per scan and ends it once")
    func aTerminalGetsABar() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
                     "this test needs script from bsdutils: apt-get install bsdutils")
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "this test needs python3")
        let home = try TemporaryDirectory("enroll-progress")
        defer { home.remove() }
        let directory = home.url.path
        for name in ["home", "data", "run"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + name, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        // virtual_device takes scans ahead of its waits: a sender plays five, one every 0.3 s,
        // without reading any prompt (the prompts are redrawn in place, not lines).
        let sender = directory + "/sender.py"
        try Data("""
            import socket, sys, time
            sent = 0
            # Past the enrollment the reader is closed: the scans left over are not waited for.
            deadline = time.time() + 30
            while sent < int(sys.argv[2]) and time.time() < deadline:
                try:
                    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                except OSError:
                    time.sleep(0.05); continue
                s.sendall(b"SCAN whorl"); s.shutdown(socket.SHUT_WR)
                while s.recv(64): pass
                s.close(); sent += 1; time.sleep(0.3)
            """.utf8).write(to: URL(fileURLWithPath: sender))
        let touchgate = CLIProcess.binary
        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory + "/home", "XDG_DATA_HOME": directory + "/data",
                           "XDG_RUNTIME_DIR": directory + "/run", "TERM": "xterm", "TOUCHGATE_SOCKET": "",
                           "FP_VIRTUAL_DEVICE": directory + "/device.sock", "FP_DRIVERS_WHITELIST": "virtual_device"]
        let script = """
            printf 'progress bar passphrase\\n' | "$1" init --kdf minimum --passphrase-fd 0 >/dev/null 2>&1 || exit 90
            /usr/bin/python3 "$2" "$3" 12 &
            printf 'progress bar passphrase\\n' | /usr/bin/script -q -e -c "\\"$1\\" enroll --finger right-index --passphrase-fd 0" /dev/null
            """
        let result = try await runProgram("/bin/sh", ["-c", script, "sh", touchgate, sender, directory + "/device.sock"],
                                          environment: environment)
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let shown = result.stdout
        let erase = "\r\u{1B}[2K"
        #expect(shown.contains(erase + "[--------------------] Swipe your right index finger across the reader (scan 1 of 5)"),
                "\(shown.debugDescription)")
        #expect(shown.contains(erase + "[####################] scan 5 of 5 done\r\n"), "\(shown.debugDescription)")
        #expect(!shown.contains("  scan 1 of 5 done\r\n"), "the per-scan lines are gone: \(shown.debugDescription)")
        // The terminal echoes the passphrase line piped in (--passphrase-fd reads it from there).
        let lines = shown.components(separatedBy: "\r\n").filter { !$0.isEmpty && $0 != "progress bar passphrase" }
        #expect(lines.count == 3 && lines.last?.hasPrefix("Enrolled right-index") == true, "\(lines)")

        // Through a pipe (no terminal): every event on a line of its own, as before.
        let piped = try await runProgram("/bin/sh", ["-c", """
            /usr/bin/python3 "$2" "$3" 12 &
            printf 'progress bar passphrase\\n' | "$1" enroll --finger left-index --passphrase-fd 0
            """, "sh", touchgate, sender, directory + "/device.sock"], environment: environment)
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stderr.contains("  scan 5 of 5 done\n") && !piped.stderr.contains("\u{1B}"), "\(piped.stderr)")
    }
}
