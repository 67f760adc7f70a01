import CFPrint

/// Whether fprintd can be reached on the system bus.
public enum FprintdPresence: Sendable, Equatable {
    /// `net.reactivated.Fprint` is owned now.
    case running
    /// Not running, but the bus can start it on the first call (D-Bus activation).
    case activatable
    /// Neither: fprintd is not installed (or there is no system bus).
    case absent
}

/// A reader as fprintd shows it.
public struct FprintdDevice: Sendable, Hashable {
    /// The device's D-Bus object path (`/net/reactivated/Fprint/Device/0`).
    public let objectPath: String
    /// The reader as Touchgate reports readers: driver `fprintd`, the device id and name are
    /// fprintd's device name (fprintd does not publish libfprint's driver or device id),
    /// features `verify`.
    public let info: ReaderInfo
}

/// A client of fprintd (`net.reactivated.Fprint`) on the system bus, over GDBus.
///
/// fprintd owns the readers while it runs and keeps each user's enrolled prints; through it
/// a program verifies a finger without opening the reader itself. The client has its own
/// bus connection (`DBUS_SYSTEM_BUS_ADDRESS` when set, else the system bus); every call
/// and signal runs on FingerprintKit's GLib thread. ``close()`` it when done: closing the
/// connection also makes fprintd drop any claim left behind.
public final class FprintdClient: Sendable {
    static let service = "net.reactivated.Fprint"
    static let managerPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"

    let bus: DBusConnection

    private init(bus: DBusConnection) { self.bus = bus }

    /// Connects to the system bus (`address`: a bus of its own, as tests run fprintd on; nil:
    /// `DBUS_SYSTEM_BUS_ADDRESS` when set, else the standard socket).
    /// - Throws: ``FprintdError/notRunning(detail:)`` when there is no system bus.
    public static func connect(address: String? = nil) async throws -> FprintdClient {
        FprintdClient(bus: try await DBusConnection.system(address: address))
    }

    /// Closes the bus connection.
    public func close() async {
        await bus.close()
    }

    /// Whether fprintd runs or can be started, without starting it.
    public func presence() async -> FprintdPresence {
        let owned = try? await bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "NameHasOwner", [.string(Self.service)]) { reply in
            Variant.child(reply, 0) == .bool(true)
        }
        if owned == true { return .running }
        let activatable = try? await bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                              "ListActivatableNames") { reply in
            Variant.strings(reply, 0).contains(Self.service)
        }
        return activatable == true ? .activatable : .absent
    }

    /// The readers fprintd handles (starting fprintd if the bus can), default reader first.
    public func devices() async throws -> [FprintdDevice] {
        let paths = try await bus.call(Self.service, Self.managerPath, Self.managerInterface, "GetDevices") { reply in
            Variant.strings(reply, 0)
        }
        let first = try? await bus.call(Self.service, Self.managerPath, Self.managerInterface, "GetDefaultDevice") {
            reply -> String? in
            if case .string(let path) = Variant.child(reply, 0) { return path }
            return nil
        }
        var devices: [FprintdDevice] = []
        for path in paths {
            let properties = try await bus.call(Self.service, path, "org.freedesktop.DBus.Properties", "GetAll",
                                                [.string(Self.deviceInterface)]) { reply in
                Variant.dictionary(reply, 0)
            }
            devices.append(FprintdDevice(objectPath: path, info: ReaderInfo(fprintdProperties: properties)))
        }
        if let first, let index = devices.firstIndex(where: { $0.objectPath == first }) {
            devices.insert(devices.remove(at: index), at: 0)
        }
        return devices
    }

    /// The fingers of `user` enrolled in fprintd on `device`, in fprintd's names
    /// (`right-index-finger`); empty when none is.
    /// - Throws: ``FprintdError/permissionDenied(detail:)`` when polkit refuses.
    public func enrolledFingers(user: String, on device: FprintdDevice) async throws -> [String] {
        do {
            return try await bus.call(Self.service, device.objectPath, Self.deviceInterface, "ListEnrolledFingers",
                                      [.string(user)], user: user) { reply in
                Variant.strings(reply, 0)
            }
        } catch FprintdError.noEnrolledPrints {
            return []
        }
    }

    /// Claims `device` for `user`: until ``FprintdClaim/release()`` nobody else can use it
    /// through fprintd.
    /// - Throws: ``FprintdError/busy`` when another program holds it.
    public func claim(_ device: FprintdDevice, user: String) async throws -> FprintdClaim {
        // Signals come from fprintd's unique name: subscribe to that, so no other peer can forge them.
        let owner = try await bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "GetNameOwner", [.string(Self.service)]) { reply -> String in
            guard case .string(let name) = Variant.child(reply, 0) else { throw FprintdError.notRunning(detail: "no owner") }
            return name
        }
        try await bus.call(Self.service, device.objectPath, Self.deviceInterface, "Claim", [.string(user)],
                           user: user) { _ in () }
        return FprintdClaim(client: self, device: device, owner: owner, user: user)
    }
}

extension ReaderInfo {
    /// The report of an fprintd device, from its D-Bus properties.
    init(fprintdProperties properties: [String: Variant.Value]) {
        if case .string(let name)? = properties["name"] { self.name = name } else { self.name = "fprintd reader" }
        driver = "fprintd"
        deviceID = name
        scanType = properties["scan-type"] == .string("swipe") ? .swipe : .press
        if case .int(let stages)? = properties["num-enroll-stages"] { enrollStages = stages } else { enrollStages = 0 }
        features = [.verify]
    }
}
