public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// systemd-logind as python3-dbusmock's `logind` template plays it, on a private system bus
/// (`dbus-daemon` with the same everyone-may-do-everything configuration as ``FprintdRig``).
///
/// The template's `Inhibit` hands out the write end of a pipe and lists the inhibitor in
/// `ListInhibitors` until every copy of that descriptor is closed, as logind does;
/// ``prepareForSleep(_:)`` makes it send `PrepareForSleep`. The template has sessions
/// (``addSession(_:uid:user:remote:)``) but no `GetSessionByPID`: the rig adds one that
/// looks the process up by its command name (`/proc/PID/comm`) in the sessions
/// ``placeProcesses(named:inSession:)`` set, and answers `NoSessionForPID` for any other
/// process, as logind does for a process outside every login. Point the daemon at the bus
/// with ``environment``; ``stop()`` ends both processes and removes the folder.
public final class LogindRig: @unchecked Sendable {
    // @unchecked Sendable: every property but `lidAdded` (under `lock`) is set in init and never changes.
    /// The rig's private folder.
    public let directory: TemporaryDirectory
    /// `unix:path=…` of the private bus.
    public let busAddress: String
    /// The bus this rig started (nil: it joined another rig's).
    private let bus: BackgroundProcess?
    private let logind: BackgroundProcess?
    /// Whether the lid's properties were added to the manager; under `lock`.
    private var lidAdded = false
    private let lock = NSLock()

    static let programs: [(path: String, package: String)] = [
        ("/usr/bin/dbus-daemon", "dbus-daemon"), ("/usr/bin/gdbus", "libglib2.0-bin"),
        ("/usr/bin/python3", "python3-dbusmock"),
    ]

    /// Starts the bus and (unless `logind` is false: a bus where nobody owns
    /// `org.freedesktop.login1`) the logind stand-in, and waits until it answers.
    /// - Throws: ``FprintdRigError`` naming the packages to install when a program is missing.
    /// With `joining`, the stand-in joins that bus (another rig's, such as ``FprintdRig``'s)
    /// instead of starting one.
    public init(logind withLogind: Bool = true, joining existing: String? = nil) async throws {
        var missing = Self.programs.filter { !FileManager.default.isExecutableFile(atPath: $0.path) }.map(\.package)
        if !missing.contains("python3-dbusmock"),
           await FprintdRig.gdbusLikeRun("/usr/bin/python3", ["-c", "import dbusmock"], environment: [:]) == nil {
            missing.append("python3-dbusmock")
        }
        guard missing.isEmpty else {
            throw FprintdRigError(description: "the sleep tests run logind's stand-in on a private bus and need "
                                  + "\(Array(Set(missing)).sorted().joined(separator: ", ")): install with: "
                                  + "sudo apt-get install python3-dbusmock dbus-daemon libglib2.0-bin")
        }
        directory = try TemporaryDirectory("touchgate-logind")
        // The daemon may run as another user (uid 1): the socket's folder must let it in.
        chmod(directory.url.path, 0o755)
        let socket = directory.path("system-bus.socket")
        busAddress = existing ?? "unix:path=\(socket)"
        if existing == nil {
            try FprintdRig.busConfiguration(socket: socket)
                .write(toFile: directory.path("bus.conf"), atomically: true, encoding: .utf8)
            bus = try await FprintdRig.launch("/usr/bin/dbus-daemon", ["--config-file=\(directory.path("bus.conf"))", "--nofork"],
                                              environment: [:], log: directory.path("dbus-daemon.log"))
        } else {
            bus = nil
        }
        do {
            if existing == nil {
                try await FprintdRig.waitFor("the private bus at \(socket)") { FileManager.default.fileExists(atPath: socket) }
                chmod(socket, 0o666)
            }
            logind = !withLogind ? nil : try await FprintdRig.launch("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", "logind"],
                                           environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress],
                                           log: directory.path("logind.log"))
        } catch {
            bus?.stop()
            directory.remove()
            throw error
        }
        do {
            guard withLogind else { return }
            try await FprintdRig.waitFor("python3-dbusmock's logind template on the bus") { await inhibitorList() != nil }
            try "".write(toFile: directory.path("places"), atomically: true, encoding: .utf8)
            try await mock("manager.AddMethod('org.freedesktop.login1.Manager', 'GetSessionByPID', 'u', 'o', sys.argv[1], "
                     + "dbus_interface=mock)", [Self.sessionByPID(places: directory.path("places"))])
        } catch {
            stop()
            throw error
        }
    }

    /// What a client needs to use the private bus.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    /// `ListInhibitors` as gdbus prints it, or nil when logind's stand-in does not answer.
    func inhibitorList() async -> String? {
        await FprintdRig.gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1",
                          "--method", "org.freedesktop.login1.Manager.ListInhibitors"], environment: environment)
    }

    /// The inhibitors held now, each as "what who why mode".
    public func inhibitors() async -> [String] {
        guard let list = await inhibitorList() else { return [] }
        // ([('sleep', 'touchgated', 'why', 'delay', uint32 1000, uint32 123456)],), or (@a(ssssuu) [],)
        return list.components(separatedBy: "('").dropFirst().map { entry in
            entry.split(separator: ",").prefix(4)
                .map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "'")) }
                .joined(separator: " ")
        }
    }

    /// Waits up to `timeout` seconds until `condition` holds for the inhibitors held.
    public func waitForInhibitors(timeout: TimeInterval = 10, _ condition: ([String]) -> Bool) async -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = await inhibitors()
        while !condition(seen), Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            seen = await inhibitors()
        }
        return seen
    }

    /// Sends `PrepareForSleep(start)` from logind's name: true before sleep, false after resume.
    public func prepareForSleep(_ start: Bool) async throws {
        let sent = await FprintdRig.gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path",
                                     "/org/freedesktop/login1", "--method", "org.freedesktop.DBus.Mock.EmitSignal",
                                     "org.freedesktop.login1.Manager", "PrepareForSleep", "b", "[<\(start)>]"],
                                    environment: environment)
        guard sent != nil else {
            throw FprintdRigError(description: "python3-dbusmock did not emit PrepareForSleep (see \(directory.path("logind.log")))")
        }
    }

    /// `GetSessionByPID` as the stand-in runs it (python, with `args` and `dbus` at hand): the
    /// session of the command named in `places` ("comm session-path" lines), read on each call.
    static func sessionByPID(places: String) -> String {
        """
        session = None
        try:
            comm = open('/proc/%d/comm' % args[0]).read().strip()
        except OSError:
            comm = ''
        for line in open('\(places)').read().splitlines():
            name, _, path = line.partition(' ')
            if name == comm:
                session = path
        if session is None:
            raise dbus.exceptions.DBusException('PID %d does not belong to any known session' % args[0],
                                                name='org.freedesktop.login1.NoSessionForPID')
        ret = dbus.ObjectPath(session)
        """
    }

    /// Runs `statement` in python3 with `manager` (logind's stand-in), `mock` (dbusmock's
    /// interface name) and `sys.argv[1…]` = `arguments`.
    private func mock(_ statement: String, _ arguments: [String] = []) async throws {
        let script = "import sys, dbus\nmock = 'org.freedesktop.DBus.Mock'\n"
            + "manager = dbus.SystemBus().get_object('org.freedesktop.login1', '/org/freedesktop/login1')\n"
            + statement + "\n"
        guard await FprintdRig.gdbusLikeRun("/usr/bin/python3", ["-c", script] + arguments, environment: environment) != nil else {
            throw FprintdRigError(description: "python3-dbusmock's logind did not take \(statement) "
                                  + "(see \(directory.path("logind.log")))")
        }
    }

    /// Adds login session `id` of `user` (uid) on seat0 (or, `seated` false, on no seat, as
    /// logind says it: `("", "/")`), remote (with a remote host) or local; returns its
    /// object path.
    @discardableResult
    public func addSession(_ id: String, uid: UInt32, user: String, remote: Bool, seated: Bool = true) async throws -> String {
        try await mock("manager.AddSession(sys.argv[1], 'seat0', dbus.UInt32(int(sys.argv[2])), sys.argv[3], True, "
                 + "dbus_interface=mock)", [id, String(uid), user])
        let path = "/org/freedesktop/login1/session/\(id)"
        if !seated {
            // Set, not the mock's UpdateProperties: that one cannot wrap a struct.
            try await mock("dbus.SystemBus().get_object('org.freedesktop.login1', sys.argv[1]).Set("
                     + "'org.freedesktop.login1.Session', 'Seat', dbus.Struct(('', dbus.ObjectPath('/')), signature='so'), "
                     + "dbus_interface='org.freedesktop.DBus.Properties')", [path])
        }
        if remote {
            try await mock("dbus.SystemBus().get_object('org.freedesktop.login1', sys.argv[1]).UpdateProperties("
                     + "'org.freedesktop.login1.Session', {'Remote': True, 'RemoteHost': 'far.example.org'}, "
                     + "dbus_interface=mock)", [path])
        }
        return path
    }

    /// Ends login session `id` (the template has no call for it: its object is removed, so
    /// `ListSessions` no longer lists it).
    public func removeSession(_ id: String) async throws {
        try await mock("manager.RemoveObject('/org/freedesktop/login1/session/' + sys.argv[1], dbus_interface=mock)", [id])
    }

    /// Gives logind's manager a lid (`LidClosed`, `Docked`, which the template lacks) in
    /// this state, or changes it.
    public func setLid(closed: Bool, docked: Bool = false) async throws {
        let verb = lock.withLock {
            defer { lidAdded = true }
            return lidAdded ? "UpdateProperties" : "AddProperties"
        }
        try await mock("manager.\(verb)('org.freedesktop.login1.Manager', {'LidClosed': sys.argv[1] == 'yes', "
                       + "'Docked': sys.argv[2] == 'yes'}, dbus_interface=mock)",
                       [closed ? "yes" : "no", docked ? "yes" : "no"])
    }

    /// From now on `GetSessionByPID` answers session `id` for every process whose command
    /// name is `command` (nil: no process is in any session).
    public func placeProcesses(named command: String?, inSession id: String?) throws {
        let line = command.flatMap { command in id.map { "\(command) /org/freedesktop/login1/session/\($0)\n" } } ?? ""
        try line.write(toFile: directory.path("places"), atomically: true, encoding: .utf8)
        chmod(directory.path("places"), 0o644)
    }

    /// What the logind stand-in logged.
    public var log: String { (try? String(contentsOfFile: directory.path("logind.log"), encoding: .utf8)) ?? "" }

    /// Ends logind's stand-in and the bus, and removes the folder.
    public func stop() {
        logind?.stop()
        bus?.stop()
        directory.remove()
    }
}
