import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// systemd-logind as python3-dbusmock's `logind` template plays it, on a private system bus
/// (`dbus-daemon` with the same everyone-may-do-everything configuration as ``FprintdRig``).
///
/// The template's `Inhibit` hands out the write end of a pipe and lists the inhibitor in
/// `ListInhibitors` until every copy of that descriptor is closed, as logind does;
/// ``prepareForSleep(_:)`` makes it send `PrepareForSleep`. Point the daemon at the bus with
/// ``environment``; ``stop()`` ends both processes and removes the folder.
public final class LogindRig: @unchecked Sendable {
    // @unchecked Sendable: every property is set in init and never changes.
    /// The rig's private folder.
    public let directory: TemporaryDirectory
    /// `unix:path=…` of the private bus.
    public let busAddress: String
    private let bus: Process
    private let logind: Process?

    static let programs: [(path: String, package: String)] = [
        ("/usr/bin/dbus-daemon", "dbus-daemon"), ("/usr/bin/gdbus", "libglib2.0-bin"),
        ("/usr/bin/python3", "python3-dbusmock"),
    ]

    /// Starts the bus and (unless `logind` is false: a bus where nobody owns
    /// `org.freedesktop.login1`) the logind stand-in, and waits until it answers.
    /// - Throws: ``FprintdRigError`` naming the packages to install when a program is missing.
    public init(logind withLogind: Bool = true) throws {
        var missing = Self.programs.filter { !FileManager.default.isExecutableFile(atPath: $0.path) }.map(\.package)
        if !missing.contains("python3-dbusmock"),
           FprintdRig.gdbusLikeRun("/usr/bin/python3", ["-c", "import dbusmock"], environment: [:]) == nil {
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
        busAddress = "unix:path=\(socket)"
        try FprintdRig.busConfiguration(socket: socket)
            .write(toFile: directory.path("bus.conf"), atomically: true, encoding: .utf8)
        bus = try FprintdRig.launch("/usr/bin/dbus-daemon", ["--config-file=\(directory.path("bus.conf"))", "--nofork"],
                                    environment: [:], log: directory.path("dbus-daemon.log"))
        do {
            try FprintdRig.waitFor("the private bus at \(socket)") { FileManager.default.fileExists(atPath: socket) }
            chmod(socket, 0o666)
            logind = !withLogind ? nil : try FprintdRig.launch("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", "logind"],
                                           environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress],
                                           log: directory.path("logind.log"))
        } catch {
            FprintdRig.end(bus)
            directory.remove()
            throw error
        }
        do {
            guard withLogind else { return }
            try FprintdRig.waitFor("python3-dbusmock's logind template on the bus") { inhibitorList() != nil }
        } catch {
            stop()
            throw error
        }
    }

    /// What a client needs to use the private bus.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    /// `ListInhibitors` as gdbus prints it, or nil when logind's stand-in does not answer.
    func inhibitorList() -> String? {
        FprintdRig.gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1",
                          "--method", "org.freedesktop.login1.Manager.ListInhibitors"], environment: environment)
    }

    /// The inhibitors held now, each as "what who why mode".
    public func inhibitors() -> [String] {
        guard let list = inhibitorList() else { return [] }
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
        var seen = inhibitors()
        while !condition(seen), Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            seen = inhibitors()
        }
        return seen
    }

    /// Sends `PrepareForSleep(start)` from logind's name: true before sleep, false after resume.
    public func prepareForSleep(_ start: Bool) throws {
        let sent = FprintdRig.gdbus(["call", "--system", "--dest", "org.freedesktop.login1", "--object-path",
                                     "/org/freedesktop/login1", "--method", "org.freedesktop.DBus.Mock.EmitSignal",
                                     "org.freedesktop.login1.Manager", "PrepareForSleep", "b", "[<\(start)>]"],
                                    environment: environment)
        guard sent != nil else {
            throw FprintdRigError(description: "python3-dbusmock did not emit PrepareForSleep (see \(directory.path("logind.log")))")
        }
    }

    /// What the logind stand-in logged.
    public var log: String { (try? String(contentsOfFile: directory.path("logind.log"), encoding: .utf8)) ?? "" }

    /// Ends logind's stand-in and the bus, and removes the folder.
    public func stop() {
        if let logind { FprintdRig.end(logind) }
        FprintdRig.end(bus)
        directory.remove()
    }
}
