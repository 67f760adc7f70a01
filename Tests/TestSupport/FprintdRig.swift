public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why the fprintd rig could not run.
public struct FprintdRigError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    public let description: String
}

/// The real fprintd from the distribution on a private system bus, with libfprint's
/// virtual_image reader behind it, as fprintd's own test suite runs it (tests/fprintd.py):
/// - `dbus-daemon --config-file=<ours>`: a system-type bus on a socket in a temporary
///   folder where everyone may own and call everything;
/// - python3-dbusmock's `polkitd` template standing in for polkit, told to allow every action;
/// - `/usr/libexec/fprintd -t` with `FP_VIRTUAL_IMAGE` (its reader), `FP_DRIVERS_WHITELIST`
///   (no real reader), `STATE_DIRECTORY` (its store: `<state>/<user>/<driver>/<device>/<finger>`),
///   and `RUNTIME_DIRECTORY`. Not `G_DEBUG=fatal-criticals`, as fprintd's own suite sets: the
///   finger answers each prompt from another process, so an image can reach the virtual
///   driver just after fprintd stopped the scan it was meant for (after `verify-retry-scan`,
///   fprintd restarts the scan and touchgate restarts it again). libfprint then logs a
///   critical and drops the image, where a fatal critical aborted fprintd mid-test. A real
///   reader only captures inside a scan.
///
/// ``finger`` plays the finger: it watches fprintd's `finger-needed` property on the bus
/// (`gdbus monitor`) and sends the next image each time fprintd's reader waits, whoever
/// asked (fprintd-enroll, fprintd-verify or touchgate). Point a client at the bus with
/// ``environment``. ``stop()`` ends every process the rig started and removes its folder.
public final class FprintdRig: @unchecked Sendable {
    // @unchecked Sendable: the processes are started in init and by startFprintd/stopFprintd,
    // which the (serialized) tests call one at a time; `lock` guards `fprintd`.
    /// The rig's private folder.
    public let directory: TemporaryDirectory
    /// `unix:path=…` of the private bus.
    public let busAddress: String
    /// fprintd's store (`STATE_DIRECTORY`).
    public let stateDirectory: String
    /// The virtual_image socket fprintd's reader listens on.
    public let imageSocket: String
    /// Plays the finger on fprintd's reader.
    public let finger: FprintdFinger

    private let bus: BackgroundProcess
    private let polkit: BackgroundProcess
    private var fprintd: BackgroundProcess?
    private let lock = NSLock()

    /// The programs the rig runs, and the Debian packages that hold them.
    static let programs: [(path: String, package: String)] = [
        ("/usr/libexec/fprintd", "fprintd"), ("/usr/bin/fprintd-enroll", "fprintd"),
        ("/usr/bin/dbus-daemon", "dbus-daemon"), ("/usr/bin/gdbus", "libglib2.0-bin"),
        ("/usr/bin/python3", "python3-dbusmock"),
    ]

    /// Starts the bus, the polkit stand-in and fprintd, and waits until fprintd shows its reader.
    /// - Throws: ``FprintdRigError`` naming the packages to install when a program is missing.
    public init() async throws {
        try await Self.requirePrograms()
        directory = try TemporaryDirectory("touchgate-fprintd")
        stateDirectory = directory.path("state")
        imageSocket = directory.path("virtual-image.socket")
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.path("run"), withIntermediateDirectories: true)
        let socket = directory.path("system-bus.socket")
        busAddress = "unix:path=\(socket)"
        try Self.busConfiguration(socket: socket).write(toFile: directory.path("bus.conf"), atomically: true, encoding: .utf8)

        var started: [BackgroundProcess] = []
        do {
            bus = try await Self.launch("/usr/bin/dbus-daemon", ["--config-file=\(directory.path("bus.conf"))", "--nofork"],
                                        environment: [:], log: directory.path("dbus-daemon.log"))
            started.append(bus)
            try await Self.waitFor("the private bus at \(socket)") { FileManager.default.fileExists(atPath: socket) }
            let busEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": busAddress]
            polkit = try await Self.launch("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", "polkitd"],
                                           environment: busEnvironment, log: directory.path("polkitd.log"))
            started.append(polkit)
            // The template refuses every action until told otherwise.
            try await Self.waitFor("python3-dbusmock's polkitd template on the bus") {
                await Self.gdbus(["call", "--system", "--dest", "org.freedesktop.PolicyKit1", "--object-path",
                            "/org/freedesktop/PolicyKit1/Authority", "--method", "org.freedesktop.DBus.Mock.AllowUnknown",
                            "true"], environment: busEnvironment) != nil
            }
            finger = FprintdFinger(socketPath: imageSocket)
        } catch {
            for process in started { process.stop() }
            directory.remove()
            throw error
        }
        do {
            try await finger.watch(environment: environment, log: directory.path("gdbus-monitor.log"))
            try await startFprintd()
        } catch {
            stop()
            throw error
        }
    }

    /// What a client needs to use the private bus.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": busAddress] }

    /// Starts fprintd (again) and waits until it shows its reader.
    public func startFprintd() async throws {
        let process = try await Self.launch("/usr/libexec/fprintd", ["-t"], environment: environment.merging([
            "FP_VIRTUAL_IMAGE": imageSocket, "FP_DRIVERS_WHITELIST": "virtual_image",
            "STATE_DIRECTORY": stateDirectory, "RUNTIME_DIRECTORY": directory.path("run"),
        ]) { $1 }, log: directory.path("fprintd.log"))
        lock.withLock { fprintd = process }
        try await Self.waitFor("fprintd on the private bus with its virtual_image reader (see \(directory.path("fprintd.log")))") {
            let devices = await Self.gdbus(["call", "--system", "--dest", "net.reactivated.Fprint", "--object-path",
                                      "/net/reactivated/Fprint/Manager", "--method",
                                      "net.reactivated.Fprint.Manager.GetDevices"], environment: environment)
            return devices?.contains("/net/reactivated/Fprint/Device/") == true
        }
    }

    /// Stops fprintd and waits until it has left the bus.
    public func stopFprintd() async {
        guard let process = lock.withLock({ () -> BackgroundProcess? in defer { fprintd = nil }; return fprintd }) else {
            return
        }
        process.stop()
        try? await Self.waitFor("fprintd to leave the bus") {
            await Self.gdbus(["call", "--system", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                        "--method", "org.freedesktop.DBus.NameHasOwner", "net.reactivated.Fprint"],
                       environment: environment)?.contains("false") == true
        }
    }

    /// Runs one of fprintd's tools (`fprintd-enroll`, `fprintd-verify`, …) on the private bus,
    /// with the finger presenting `prints`.
    /// - Returns: its exit status and standard output.
    public func tool(_ arguments: [String], presenting prints: [String] = [],
                     timeout: TimeInterval = 60) async throws -> (status: Int32, output: String) {
        finger.present(prints)
        let output = LineCollector()
        let process = try await BackgroundProcess.start(
            "/usr/bin/" + arguments[0], Array(arguments.dropFirst()),
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: .lines { output.append($0) }, error: .sameAsOutput)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { await process.terminate() }
        let status = await process.ended()
        return (status, output.lines.map { $0 + "\n" }.joined())
    }

    /// Ends fprintd, the finger's monitor, polkit and the bus, and removes the folder.
    /// Usable in a `defer`: it waits for nothing on the bus.
    public func stop() {
        lock.withLock { () -> BackgroundProcess? in defer { fprintd = nil }; return fprintd }?.stop()
        finger.stop()
        polkit.stop()
        bus.stop()
        directory.remove()
    }

    // MARK: Helpers

    static func requirePrograms() async throws {
        var missing = programs.filter { !FileManager.default.isExecutableFile(atPath: $0.path) }.map(\.package)
        if !missing.contains("python3-dbusmock"),
           await gdbusLikeRun("/usr/bin/python3", ["-c", "import dbusmock"], environment: [:]) == nil {
            missing.append("python3-dbusmock")
        }
        guard missing.isEmpty else {
            throw FprintdRigError(description: "the fprintd tests run the real fprintd on a private bus and need "
                                  + "\(Array(Set(missing)).sorted().joined(separator: ", ")): install with: "
                                  + "sudo apt-get install fprintd python3-dbusmock dbus-daemon libglib2.0-bin")
        }
    }

    /// A bus where everyone may own every name and send everything (the test's own bus).
    /// A private bus at `socket` that lets everyone own and call anything; `type` `session`
    /// with `activation` also starts services from the session service directories
    /// (`$XDG_DATA_HOME/dbus-1/services` and `$XDG_DATA_DIRS`), which no other bus here does.
    public static func busConfiguration(socket: String, type: String = "system", activation: Bool = false) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>\(type)</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>\(activation ? "\n  <standard_session_servicedirs/>" : "")
          <policy context="default">
            <allow user="*"/>
            <allow own="*"/>
            <allow send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_type="method_return"/>
            <allow send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="signal"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
          </policy>
        </busconfig>
        """
    }

    /// Starts `path` with this process's environment plus `environment`, output to `log`.
    /// Starts `path` with this process's environment (less any virtual reader) plus
    /// `environment`, output to `log`. Each is ended with SIGKILL: nothing the rig runs needs a
    /// graceful end (fprintd writes each print as it is enrolled).
    static func launch(_ path: String, _ arguments: [String], environment: [String: String],
                       log: String) async throws -> BackgroundProcess {
        var full = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        for virtual in ["FP_VIRTUAL_IMAGE", "FP_VIRTUAL_DEVICE"] where environment[virtual] == nil {
            full.removeValue(forKey: virtual)
        }
        return try await BackgroundProcess.start(path, arguments, environment: full, output: .file(log), error: .file(log))
    }

    /// Polls `condition` for up to a minute (a backstop for a loaded machine; it returns as soon as the condition holds).
    static func waitFor(_ what: String, _ condition: () async -> Bool) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FprintdRigError(description: "timed out waiting for \(what)")
    }

    /// `gdbus ARGS`: its output when it succeeded, else nil.
    static func gdbus(_ arguments: [String], environment: [String: String]) async -> String? {
        await gdbusLikeRun("/usr/bin/gdbus", arguments, environment: environment)
    }

    /// `path ARGS` with this process's environment plus `environment`: its standard output
    /// when it succeeded, else nil.
    static func gdbusLikeRun(_ path: String, _ arguments: [String], environment: [String: String]) async -> String? {
        guard let result = try? await runProgram(path, arguments, environment: environment), result.status == 0 else {
            return nil
        }
        return result.stdout
    }
}

/// The finger on fprintd's virtual_image reader: each time fprintd publishes
/// `finger-needed: true` it sends the next of the presented images (`retry` sends a poor
/// scan instead, once). fprintd opens the reader for each claim, and the driver listens anew each
/// time, so a connection the driver has closed is replaced by a new one.
public final class FprintdFinger: @unchecked Sendable {
    // @unchecked Sendable: `queue`, `client`, `prompts` and `monitor` are touched under `lock` only.
    /// The driver's socket.
    public let socketPath: String
    private let lock = NSLock()
    private var queue: [String] = []
    private var client: VirtualImageClient?
    private var clientFD: Int32 = -1
    private var monitor: BackgroundProcess?
    /// How many times fprintd's reader waited for a finger since the last ``present(_:)``.
    public private(set) var prompts = 0

    init(socketPath: String) { self.socketPath = socketPath }

    /// Present these images, one per wait (the last one repeats); empty presents nothing.
    public func present(_ names: [String]) {
        lock.withLock {
            queue = names
            prompts = 0
        }
    }

    /// Waits until fprintd's reader has waited for a finger `count` times since ``present(_:)``.
    public func waitForPrompts(_ count: Int, timeout: TimeInterval = 60) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if lock.withLock({ prompts >= count }) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    func watch(environment: [String: String], log: String) async throws {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let logHandle = FileHandle(forWritingAtPath: log)
        let process = try await BackgroundProcess.start(
            "/usr/bin/gdbus", ["monitor", "--system", "--dest", "net.reactivated.Fprint"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: .lines { [self] line in
                logHandle?.write(Data((line + "\n").utf8))
                if line.contains("'finger-needed': <true>") { fingerNeeded() }
            })
        lock.withLock { monitor = process }
    }

    func stop() {
        lock.withLock { () -> BackgroundProcess? in defer { monitor = nil }; return monitor }?.stop()
        lock.withLock { client = nil }
    }

    private func fingerNeeded() {
        lock.lock()
        defer { lock.unlock() }
        prompts += 1
        guard !queue.isEmpty else { return }
        // The last image repeats, but not a poor scan: fprintd starts the next scan by itself.
        let name = queue.count > 1 || queue[0] == "retry" ? queue.removeFirst() : queue[0]
        do {
            if client == nil || isClosed(clientFD) {
                client = nil
                client = try VirtualImageClient(socketPath: socketPath)
                clientFD = client!.descriptor
            }
            if name == "retry" {
                try client?.sendRetry(0)
            } else {
                try client?.send(image: try Fixtures.print(name))
            }
        } catch {
            FileHandle.standardError.write(Data("fprintd finger: \(error)\n".utf8))
        }
    }

    /// Whether the driver has closed the connection (it does when fprintd closes the reader).
    private func isClosed(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return false }
        if entry.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }
}
