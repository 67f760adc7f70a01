import Foundation

/// A desktop's notification server as python3-dbusmock's `notification_daemon` template
/// plays it, on a private session bus (`dbus-daemon`, configured as ``FprintdRig``'s). The
/// template logs every call (`-l`): ``calls(_:)`` reads them back. Point clients at the bus
/// with ``environment``; ``stop()`` ends both processes and removes the folder.
public final class NotificationRig: Sendable {
    /// The rig's private folder.
    public let directory: TemporaryDirectory
    /// `unix:path=…` of the private bus.
    public let busAddress: String
    private let bus: BackgroundProcess
    private let server: BackgroundProcess

    /// What a client needs to use the bus.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": busAddress] }

    /// Starts the bus and the notification server, and waits until it answers.
    /// - Throws: ``FprintdRigError`` naming the packages to install when a program is missing.
    public init() async throws {
        let missing = LogindRig.programs.filter { !FileManager.default.isExecutableFile(atPath: $0.path) }.map(\.package)
        guard missing.isEmpty else {
            throw FprintdRigError(description: "the notification tests run a notification server on a private bus and "
                                  + "need \(missing.sorted().joined(separator: ", ")): install with: "
                                  + "sudo apt-get install python3-dbusmock dbus-daemon libglib2.0-bin")
        }
        let directory = try TemporaryDirectory("touchgate-notifications")
        self.directory = directory
        let socket = directory.path("session-bus.socket")
        busAddress = "unix:path=\(socket)"
        try FprintdRig.busConfiguration(socket: socket)
            .write(toFile: directory.path("bus.conf"), atomically: true, encoding: .utf8)
        bus = try await FprintdRig.launch("/usr/bin/dbus-daemon", ["--config-file=\(directory.path("bus.conf"))", "--nofork"],
                                          environment: [:], log: directory.path("dbus-daemon.log"))
        do {
            try await FprintdRig.waitFor("the private bus at \(socket)") { FileManager.default.fileExists(atPath: socket) }
            server = try await FprintdRig.launch(
                "/usr/bin/python3", ["-m", "dbusmock", "--session", "--template", "notification_daemon",
                                     "-l", directory.path("calls.log")],
                environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress], log: directory.path("server.log"))
        } catch {
            bus.stop()
            directory.remove()
            throw error
        }
        let address = busAddress
        do {
            try await FprintdRig.waitFor("python3-dbusmock's notification server on the bus") {
                await FprintdRig.gdbus(["call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path",
                                        "/org/freedesktop/Notifications", "--method",
                                        "org.freedesktop.Notifications.GetServerInformation"],
                                       environment: ["DBUS_SESSION_BUS_ADDRESS": address]) != nil
            }
        } catch {
            stop()
            throw error
        }
    }

    /// The logged calls of `method` (`Notify`, `CloseNotification`), one line each with its
    /// arguments, oldest first.
    public func calls(_ method: String) -> [String] {
        let log = (try? String(contentsOfFile: directory.path("calls.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").map(String.init).filter { $0.contains(" \(method) ") || $0.hasSuffix(" \(method)") }
    }

    public func stop() {
        server.stop()
        bus.stop()
        directory.remove()
    }
}
