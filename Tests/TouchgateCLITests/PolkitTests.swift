import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// polkit's administrator prompts through `pam_touchgate.so mode=either`: Debian's own polkitd,
/// pkexec, pkttyagent and polkit-agent-helper-1, none of them mocked, on a system bus of the
/// test's own. See ``PolkitRig`` for how; the stack is Debian's `/usr/lib/pam.d/polkit-1`
/// (`@include common-auth`) with common-auth as `pam-auth-update --enable touchgate` writes it.
///
/// pkexec runs as `nobody` from the terminal recipe docs/INTEGRATIONS.md gives (pkttyagent
/// registered for the shell first: polkit 122's pkexec cannot be its own agent, see there).
@Suite("polkit: pkexec through polkitd and pkttyagent", .serialized, .timeLimit(.minutes(6)))
struct PolkitTests {
    static let password = "a login password"
    static let rootPassword = "root's own password"

    @Test("a member of sudo: pkexec takes a touch of their own finger, or their password; a wrong finger is refused")
    func ownFingerOrPassword() async throws {
        let (pam, polkit) = try await Self.rig()
        defer { polkit.stop() }
        try polkit.setAdministrators(["nobody"])

        // A touch: the prompt ends by itself (the module puts the Enter into pkttyagent's read).
        let touched = try await polkit.pkexec()
        #expect(try await touched.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") },
                "\(touched.output)\n\(polkit.logs)")
        #expect(touched.output.contains("Authenticating as: nobody"), "\(touched.output)")
        PAMEitherTests.touch(pam, "whorl")
        #expect(await touched.finish(timeout: 30) == 0, "\(touched.output)\n\(pam.rig.daemonLog)\n\(polkit.logs)")
        #expect(Self.ranAsRoot(touched.output), "pkexec ran id as root: \(touched.output)")
        #expect(touched.output.contains("AUTHENTICATION COMPLETE"), "\(touched.output)")
        // In nobody's trail (the user authenticated), naming polkit's helper as the program that
        // asked: the daemon names a process by the kernel's 15-character `comm`.
        let audit = try await pam.rig.run(["audit", "show", "--json", "--event", "auth.attempt"], as: DaemonRig.otherUID)
        let reasons = ((audit.json?["records"] as? [[String: Any]]) ?? []).compactMap { $0["reason"] as? String }
        #expect(reasons.last?.contains("fingerprint matched") == true && reasons.last?.contains("(polkit-agent-he)") == true,
                "\(reasons)\n\(audit.stderrLines)")

        // The password at the same prompt: pam_unix takes it (try_first_pass), no second prompt.
        let typed = try await polkit.pkexec()
        #expect(try await typed.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(typed.output)")
        typed.type(Self.password + "\n")
        #expect(await typed.finish(timeout: 30) == 0, "\(typed.output)\n\(pam.rig.daemonLog)\n\(polkit.logs)")
        #expect(Self.ranAsRoot(typed.output), "\(typed.output)")
        #expect(typed.output.components(separatedBy: "Password").count == 2, "one prompt: \(typed.output)")

        // A wrong finger: said under the prompt, which stays up; a wrong password then fails,
        // and pkexec runs nothing.
        let wrong = try await polkit.pkexec()
        #expect(try await wrong.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(wrong.output)")
        PAMEitherTests.touch(pam, "arch")
        #expect(try await wrong.waitForLine(timeout: 20) { $0.contains("Fingerprint: no match (2 more before a lockout).") },
                "\(wrong.output)\n\(pam.rig.daemonLog)")
        wrong.type("not the password\n")
        let refused = await wrong.finish(timeout: 30)
        #expect(refused == 127, "pkexec's status when not authorized: \(wrong.output)")
        #expect(!Self.ranAsRoot(wrong.output) && wrong.output.contains("Not authorized"), "\(wrong.output)")

        // Why the recipe starts pkttyagent: polkit 122's pkexec, its own agent, fails after a
        // right password (polkit issue 17, fixed in 125). Should this pass one day, the docs
        // are to be changed.
        let alone = try await polkit.pkexec(alone: true)
        #expect(try await alone.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(alone.output)")
        alone.type(Self.password + "\n")
        #expect(await alone.finish(timeout: 30) == 127, "\(alone.output)")
        #expect(alone.output.contains("No session for cookie") && !Self.ranAsRoot(alone.output), "\(alone.output)")
    }

    @Test("root as polkit's administrator: root's enrolled finger unlocks pkexec, the requester's own does not")
    func administratorsFinger() async throws {
        let (pam, polkit) = try await Self.rig()
        defer { polkit.stop() }
        try await Self.enrollRoot(pam)
        // Nobody is in sudo: polkit falls back to root (uid 0) as the administrator.
        try polkit.setAdministrators([])

        let session = try await polkit.pkexec()
        #expect(try await session.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") },
                "\(session.output)\n\(polkit.logs)")
        #expect(session.output.contains("Authenticating as: root"), "\(session.output)")
        // The requester's own enrolled finger is no administrator's.
        PAMEitherTests.touch(pam, "whorl")
        #expect(try await session.waitForLine(timeout: 20) { $0.contains("Fingerprint: no match (2 more before a lockout).") },
                "\(session.output)\n\(pam.rig.daemonLog)")
        #expect(!Self.ranAsRoot(session.output))
        // root's finger, at the prompt shown again.
        PAMEitherTests.touch(pam, "loop-right")
        #expect(await session.finish(timeout: 30) == 0, "\(session.output)\n\(pam.rig.daemonLog)\n\(polkit.logs)")
        #expect(Self.ranAsRoot(session.output), "\(session.output)")
        // Both touches are in root's trail: the no-match counts toward root's lockout.
        let attempts = try await pam.auditReasons(event: "auth.attempt").filter { $0.contains("(polkit-agent-he)") }
        #expect(attempts.count == 2 && attempts[0].contains("no match") && attempts[1].contains("fingerprint matched"),
                "\(attempts)")

        // root's password works too, and nobody's does not.
        let typed = try await polkit.pkexec()
        #expect(try await typed.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(typed.output)")
        typed.type(Self.password + "\n")
        #expect(await typed.finish(timeout: 30) == 127, "nobody's password is not root's: \(typed.output)")
        let rooted = try await polkit.pkexec()
        #expect(try await rooted.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(rooted.output)")
        rooted.type(Self.rootPassword + "\n")
        #expect(await rooted.finish(timeout: 30) == 0, "\(rooted.output)")
        #expect(Self.ranAsRoot(rooted.output), "\(rooted.output)")
    }

    @Test("with systemd-logind: for another user's finger, a pkexec in no login session gets the password only; in a local session at a seat, the touch")
    func anotherUsersFingerNeedsASession() async throws {
        let logind = try await LogindRig()
        defer { logind.stop() }
        let (pam, polkit) = try await Self.rig(logind: logind)
        defer { polkit.stop() }
        try await Self.enrollRoot(pam)
        try polkit.setAdministrators([])

        // The helper, started by nobody to ask for root's finger, is in no session logind
        // knows (as from a cron job or a user service): no touch is asked, the password is.
        let outside = try await polkit.pkexec()
        #expect(try await outside.waitForLine(timeout: 30) { $0.hasPrefix("Password:") }, "\(outside.output)\n\(pam.rig.daemonLog)")
        #expect(!outside.output.contains("touch the reader"), "\(outside.output)")
        outside.type(Self.rootPassword + "\n")
        #expect(await outside.finish(timeout: 30) == 0, "\(outside.output)")
        #expect(Self.ranAsRoot(outside.output), "\(outside.output)")
        #expect(pam.rig.daemonLog.contains("started by uid 65534, asks for another user's finger from no systemd-logind session; refused"),
                "\(pam.rig.daemonLog)")
        let denied = try await pam.auditReasons(event: "access.denied")
        #expect(denied.last?.contains("no login session") == true, "in root's trail: \(denied)")

        // In nobody's local session at seat0: the person asking is at the machine.
        try await logind.addSession("c1", uid: DaemonRig.otherUID, user: "nobody", remote: false)
        try logind.placeProcesses(named: "polkit-agent-he", inSession: "c1")
        let seated = try await polkit.pkexec()
        #expect(try await seated.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(seated.output)")
        PAMEitherTests.touch(pam, "loop-right")
        #expect(await seated.finish(timeout: 30) == 0, "\(seated.output)\n\(pam.rig.daemonLog)")
        #expect(Self.ranAsRoot(seated.output), "\(seated.output)")

        // For the requester's own finger (nobody in sudo), no session is needed, as before.
        try logind.placeProcesses(named: nil, inSession: nil)
        try polkit.setAdministrators(["nobody"])
        let own = try await polkit.pkexec()
        #expect(try await own.waitForLine(timeout: 30) { $0.contains("Password or touch the reader:") }, "\(own.output)")
        PAMEitherTests.touch(pam, "whorl")
        #expect(await own.finish(timeout: 30) == 0, "\(own.output)\n\(pam.rig.daemonLog)")
        #expect(Self.ranAsRoot(own.output), "\(own.output)")
    }

    /// root's vault, with loop-right enrolled (not nobody's whorl).
    static func enrollRoot(_ pam: PAMRig) async throws {
        let enrolled = try await pam.rig.run(["enroll", "--json", "--finger", "right-index"], presenting: ["loop-right"])
        #expect(enrolled.status == 0, "enroll: \(enrolled.stderrLines)\n\(pam.rig.daemonLog)")
        let made = try await pam.rig.withPassphrase(["init", "--kdf", "minimum"])
        #expect(made.status == 0, "init: \(made.stderrLines)")
    }

    @Test("mode=touch: pkttyagent shows the daemon's request to touch, and the touch alone ends it")
    func touchOnly() async throws {
        let (pam, polkit) = try await Self.rig()
        defer { polkit.stop() }
        try polkit.setAdministrators(["nobody"])
        try polkit.commonAuth(["auth\tsufficient\t\(pam.module) socket=\(pam.socket) timeout=20",
                               "auth\trequired\tpam_unix.so nullok try_first_pass"])
        let session = try await polkit.pkexec()
        // The daemon's words for the virtual reader (a swipe sensor), as pkttyagent shows an info message.
        #expect(try await session.waitForLine(timeout: 30) { $0.hasPrefix("Info: Swipe your right index finger") },
                "\(session.output)\n\(polkit.logs)")
        PAMEitherTests.touch(pam, "whorl")
        #expect(await session.finish(timeout: 30) == 0, "\(session.output)\n\(pam.rig.daemonLog)")
        #expect(Self.ranAsRoot(session.output) && !session.output.contains("Password"), "\(session.output)")
    }

    /// Whether `id -u` printed 0: a line of its own, once pkttyagent's colours are taken out.
    static func ranAsRoot(_ output: String) -> Bool {
        output.replacing(/\u{1B}\[[0-9;]*m/, with: "").split(separator: "\n")
            .contains { $0.trimmingCharacters(in: .whitespaces) == "0" }
    }

    /// A daemon (on the bus of `logind`'s stand-in, if given) with nobody's whorl enrolled,
    /// and polkit on a private bus in front of it.
    static func rig(logind: LogindRig? = nil) async throws -> (PAMRig, PolkitRig) {
        try DaemonAttackTests.requireRoot()
        let pam = try await PAMRig()
        if let logind { pam.rig.daemonEnvironment = logind.environment }
        try await pam.rig.start()
        try await pam.rig.initialize(as: DaemonRig.otherUID)
        let polkit = try await PolkitRig(pam: pam, passwords: ["nobody": password, "root": rootPassword])
        return (pam, polkit)
    }
}

/// Debian's polkitd on a system bus of the test's own, in a mount namespace of the test's own
/// (the machine's files and buses are left alone). `/etc` there is a copy of the machine's,
/// bound over it whole: a bind mount over /etc/shadow or /etc/group alone vanished as soon
/// as a test running beside this one made or removed a user (useradd renames a new file over
/// them, and a mount on a path renamed over is taken away), and pam_unix then read the
/// machine's passwords. In that copy:
/// - `/etc/pam.d` is with common-auth as the `touchgate` pam-auth-update profile makes
///   it (the rig's module and socket); polkit-1 itself is Debian's, from /usr/lib/pam.d.
/// - `/etc/group` is a copy whose `sudo` line names the test's administrators (Debian's polkit
///   rule: the administrators are group sudo; none there, root), `/etc/shadow` a copy with
///   the test's passwords (pam_unix in the setuid helper reads it).
/// - `/run/dbus` is an empty tmpfs where `dbus-daemon --system` (the machine's system-bus
///   configuration, polkit's bus policy included) listens. It has to be that path:
///   polkit-agent-helper-1 and pkexec are setuid root and clear their environment, and GLib
///   ignores `DBUS_SYSTEM_BUS_ADDRESS` in a setuid process.
/// A process holds the namespace (`sleep infinity`); the bus, polkitd and each pkexec enter
/// it with nsenter.
final class PolkitRig: Sendable {
    let directory: String
    private let holder: BackgroundProcess
    private let bus: BackgroundProcess
    private let polkitd: BackgroundProcess

    static let programs: [(path: String, package: String)] = [
        ("/usr/lib/polkit-1/polkitd", "polkitd"), ("/usr/lib/polkit-1/polkit-agent-helper-1", "polkitd"),
        ("/usr/bin/pkttyagent", "polkitd"), ("/usr/bin/pkexec", "pkexec"), ("/usr/bin/dbus-daemon", "dbus-daemon"),
        ("/usr/bin/gdbus", "libglib2.0-bin"), ("/usr/bin/nsenter", "util-linux"), ("/usr/bin/unshare", "util-linux"),
        ("/usr/bin/openssl", "openssl"), ("/usr/bin/script", "bsdutils"),
    ]

    /// The terminal recipe of the README ("pkexec and the desktop's administrator prompts") and
    /// docs/INTEGRATIONS.md ("polkit"), as written there.
    static let recipe = #"bash -c 'coproc pkttyagent --process $$ --notify-fd 3 3>&1 >/dev/null; read -u "${COPROC[0]}"; pkexec /usr/bin/id -u; s=$?; kill "$COPROC_PID"; exit $s'"#

    init(pam: PAMRig, passwords: [String: String]) async throws {
        for (path, package) in Self.programs { try HelperRig.require(path, package: package) }
        let documented = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/INTEGRATIONS.md"), encoding: .utf8)
        #expect(documented.contains(Self.recipe), "the recipe this test runs is the one docs/INTEGRATIONS.md gives")
        let readme = try Readme.shellBlocks(inSection: "Every day", subsection: "pkexec and the desktop's administrator prompts")
        #expect(readme.contains { $0.contains(Self.recipe) }, "and the README's: \(readme)")

        directory = pam.rig.home.path("polkit")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        let etc = directory + "/etc", confdir = etc + "/pam.d"
        // A file that vanishes while it is copied (the lock files of a useradd running beside
        // this test) is no loss: only such refusals are let through.
        let copied = try await runProgram("/bin/cp", ["-a", "/etc", etc])
        let refusals = copied.stderr.split(separator: "\n").filter { !$0.contains("No such file or directory") }
        try #require(copied.status == 0 || (refusals.isEmpty && FileManager.default.fileExists(atPath: etc + "/passwd")),
                     "cp -a /etc: \(copied.stderr)")
        // What `pam-auth-update --enable touchgate` writes (debian/pam-configs/touchgate, its
        // `success=end` counted out), with the rig's module and daemon.
        try Self.commonAuth(in: etc, [
            "auth\t[success=2 default=ignore]\t\(pam.module) mode=either socket=\(pam.socket) timeout=20",
            "auth\t[success=1 default=ignore]\tpam_unix.so nullok try_first_pass",
            "auth\trequisite\t\t\tpam_deny.so",
            "auth\trequired\t\t\tpam_permit.so",
        ])
        try? FileManager.default.removeItem(atPath: confdir + "/polkit-1")  // Debian's, from /usr/lib/pam.d

        var shadow = try String(contentsOfFile: "/etc/shadow", encoding: .utf8).split(separator: "\n").map(String.init)
        for (user, password) in passwords {
            let hashed = try await runProgram("/usr/bin/openssl", ["passwd", "-6", "-salt", "touchgatetests", password])
            try #require(hashed.status == 0, "openssl passwd: \(hashed.stderr)")
            let entry = "\(user):\(hashed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)):19000:0:99999:7:::"
            shadow.removeAll { $0.hasPrefix(user + ":") }
            shadow.append(entry)
        }
        try (shadow.joined(separator: "\n") + "\n").write(toFile: etc + "/shadow", atomically: true, encoding: .utf8)
        chmod(etc + "/shadow", 0o600)
        for (name, script) in [("recipe.sh", Self.recipe), ("alone.sh", "pkexec /usr/bin/id -u")] {
            try script.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
            chmod(directory + "/" + name, 0o644)
        }

        let environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        let mounted = directory + "/mounted"
        let setup = "set -e; mount --bind \(etc) /etc; [ -d /run/dbus ] || mkdir /run/dbus; "
            + "mount -t tmpfs -o mode=0755 touchgate-test-bus /run/dbus; touch \(mounted); exec sleep infinity"
        holder = try await BackgroundProcess.start("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", setup],
                                                   environment: environment, output: .file(directory + "/holder.log"),
                                                   error: .file(directory + "/holder.log"))
        var started = [holder]
        do {
            try await Self.wait("the mount namespace", log: directory + "/holder.log") {
                FileManager.default.fileExists(atPath: mounted)
            }
            let enter = ["--target", String(holder.processIdentifier), "--mount", "--"]
            let bus = try await BackgroundProcess.start("/usr/bin/nsenter", enter + ["dbus-daemon", "--system", "--nofork", "--nopidfile", "--nosyslog"],
                                                        environment: environment, output: .file(directory + "/dbus-daemon.log"),
                                                        error: .file(directory + "/dbus-daemon.log"))
            started.append(bus)
            self.bus = bus
            // /proc/PID/root: the holder's view of the file system, its mounts included.
            let socket = "/proc/\(holder.processIdentifier)/root/run/dbus/system_bus_socket"
            try await Self.wait("dbus-daemon --system", log: directory + "/dbus-daemon.log") {
                FileManager.default.fileExists(atPath: socket)
            }
            let polkitd = try await BackgroundProcess.start("/usr/bin/nsenter", enter + ["/usr/lib/polkit-1/polkitd", "--no-debug"],
                                                            environment: environment, output: .file(directory + "/polkitd.log"),
                                                            error: .file(directory + "/polkitd.log"))
            started.append(polkitd)
            self.polkitd = polkitd
            try await Self.wait("polkitd on the bus", log: directory + "/polkitd.log") {
                let owned = try? await runProgram("/usr/bin/nsenter", enter + [
                    "gdbus", "call", "--system", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                    "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.PolicyKit1"], environment: environment)
                return owned?.stdout.contains("true") == true
            }
        } catch {
            for process in started.reversed() { process.stop() }
            throw error
        }
    }

    /// Makes `lines` the namespace's /etc/pam.d/common-auth (the directory is bind-mounted: a
    /// file replaced in it is seen at once).
    func commonAuth(_ lines: [String]) throws {
        try Self.commonAuth(in: directory + "/etc", lines)
    }

    private static func commonAuth(in directory: String, _ lines: [String]) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/pam.d/common-auth", atomically: true,
                                                         encoding: .utf8)
        chmod(directory + "/pam.d/common-auth", 0o644)
    }

    /// Makes `users` the members of group sudo, in the namespace's copy of /etc.
    func setAdministrators(_ users: [String]) throws {
        let path = directory + "/etc/group"
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line -> String in
            guard line.hasPrefix("sudo:") else { return String(line) }
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            return fields.prefix(3).joined(separator: ":") + ":" + users.joined(separator: ",")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8))
    }

    /// The documented recipe (`alone`: pkexec without pkttyagent), as `nobody`, on a new
    /// terminal in the namespace.
    func pkexec(alone: Bool = false) async throws -> TerminalSession {
        let command = "exec nsenter --target \(holder.processIdentifier) --mount -- setpriv --reuid=\(DaemonRig.otherUID) "
            + "--regid=\(DaemonRig.otherUID) --clear-groups -- /bin/sh \(directory)/\(alone ? "alone" : "recipe").sh"
        return try await TerminalSession(command, directory: "/", environment: [
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/", "TERM": "xterm",
        ])
    }

    /// What the bus and polkitd logged.
    var logs: String {
        ["dbus-daemon.log", "polkitd.log"].map { name in
            "\(name):\n" + ((try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }

    func stop() {
        polkitd.stop()
        bus.stop()
        holder.stop()
    }

    private static func wait(_ what: String, log: String, _ condition: () async -> Bool) async throws {
        for _ in 0..<600 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        Issue.record("\(what) did not start within 30 s; its log:\n\(logged)")
        throw POSIXError(.ETIMEDOUT)
    }
}
