import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real gnome-keyring-daemon (secrets component) for one user, on a private session bus,
/// with a login keyring created under `password` and then locked: what a desktop session
/// has before its keyring is unlocked at login.
final class GnomeKeyringRig: @unchecked Sendable {
    // @unchecked Sendable: `processes` is only touched under `lock`.
    let uid: UInt32
    /// `XDG_RUNTIME_DIR`: the bus and the keyring's control socket.
    let runtime: String
    let environment: [String: String]
    private let lock = NSLock()
    private var processes: [BackgroundProcess] = []

    static let pamModules = ["/lib/x86_64-linux-gnu/security/pam_gnome_keyring.so",
                             "/usr/lib/x86_64-linux-gnu/security/pam_gnome_keyring.so"]

    /// Starts the bus and the keyring daemon as `uid`, with `home` (0700, theirs) for the
    /// keyrings, and makes the login keyring under `password`.
    init(in directory: TemporaryDirectory, uid: UInt32, password: String) async throws {
        for (tool, package) in [("/usr/bin/gnome-keyring-daemon", "gnome-keyring"), ("/usr/bin/dbus-daemon", "dbus-daemon"),
                                ("/usr/bin/gdbus", "libglib2.0-bin")] {
            try #require(FileManager.default.isExecutableFile(atPath: tool),
                         "this test needs \(tool): apt-get install \(package) (scripts/setup.sh does)")
        }
        try #require(Self.pamModules.contains { FileManager.default.fileExists(atPath: $0) },
                     "this test needs pam_gnome_keyring.so: apt-get install libpam-gnome-keyring")
        self.uid = uid
        let home = directory.path("keyring-home")
        runtime = directory.path("keyring-run")
        for owned in [home, runtime] {
            try FileManager.default.createDirectory(atPath: owned, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            chown(owned, uid, uid)
        }
        environment = ["HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
                       "XDG_RUNTIME_DIR": runtime, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime)/bus",
                       "PATH": "/usr/bin:/bin"]
        _ = try await start("/usr/bin/dbus-daemon", ["--session", "--address=unix:path=\(runtime)/bus", "--nofork"])
        try await waitFor(runtime + "/bus")
        // `--unlock` reads the password from standard input and creates the login keyring
        // with it; a second daemon, without it, finds that keyring locked.
        let creating = try await start("/usr/bin/gnome-keyring-daemon", ["--unlock", "--components=secrets", "--foreground"],
                                 stdin: password)
        try await waitFor(home + "/data/keyrings/login.keyring")
        try await waitFor(runtime + "/keyring/control")
        try await Task.sleep(for: .milliseconds(300))
        stop(creating)
        _ = try await start("/usr/bin/gnome-keyring-daemon", ["--components=secrets", "--foreground"])
        try await waitFor(runtime + "/keyring/control")
    }

    deinit { stopAll() }

    /// Whether the login keyring is locked, asked over D-Bus (the Secret Service API).
    func loginKeyringLocked() async throws -> Bool? {
        let environment = environment
        let uid = uid
        let answer = try await runProgram("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--",
                                                               "/usr/bin/gdbus", "call", "--session", "--dest",
                                                               "org.freedesktop.secrets", "--object-path",
                                                               "/org/freedesktop/secrets/collection/login", "--method",
                                                               "org.freedesktop.DBus.Properties.Get",
                                                               "org.freedesktop.Secret.Collection", "Locked"],
                                          environment: environment, inheriting: false)
        if answer.stdout.contains("<true>") { return true }
        if answer.stdout.contains("<false>") { return false }
        Issue.record("gdbus: \(answer.stdout) \(answer.stderr)")
        return nil
    }

    func stopAll() {
        for process in lock.withLock({ processes }).reversed() { stop(process) }
    }

    /// Starts `program` as the user, `stdin` (if any) on its standard input, then its end.
    private func start(_ program: String, _ arguments: [String], stdin: String? = nil) async throws -> BackgroundProcess {
        let process = try await BackgroundProcess.start(
            "/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", program] + arguments,
            environment: environment, holdingInputOpen: true)
        lock.withLock { processes.append(process) }
        if let stdin { try process.write(stdin) }
        process.closeInput()
        return process
    }

    /// A short wait (at most 2 s, on the caller's thread): these end within milliseconds of SIGTERM.
    private func stop(_ process: BackgroundProcess) {
        process.stop(signal: SIGTERM, seconds: 2)
    }

    private func waitFor(_ path: String) async throws {
        for _ in 0..<250 {
            if FileManager.default.fileExists(atPath: path) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("\(path) did not appear within 5 s")
        throw POSIXError(.ETIMEDOUT)
    }
}
