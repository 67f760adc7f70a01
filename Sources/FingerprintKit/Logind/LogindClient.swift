import CFPrint
#if canImport(Glibc)
import Glibc
#endif

/// A failure reaching systemd-logind (`org.freedesktop.login1`) on the system bus.
public struct LogindError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong and what to do about it.
    public let description: String
    /// Whether logind is not there at all (no system bus, or nobody owns its name), as on a
    /// system without systemd; otherwise logind answered, with an error.
    public let isAbsent: Bool

    init(_ error: any Error) {
        switch error {
        case FprintdError.notRunning(let detail):
            description = "systemd-logind is not on the system bus (\(detail))"
            isAbsent = true
        case FprintdError.failed(let name, let detail):
            description = "systemd-logind refused (\(name)" + (detail.isEmpty ? "" : ": \(detail)") + ")"
            isAbsent = false
        default:
            description = "systemd-logind: \(error)"
            isAbsent = false
        }
    }

    init(description: String) {
        self.description = description
        isAbsent = false
    }
}

/// A logind inhibitor lock: the system waits (for a delay lock: at most `InhibitDelayMaxSec`)
/// while this descriptor is open. ``release()`` closes it.
public final class SleepInhibitor: Sendable {
    private let descriptor: Int32
    private let released = AtomicFlag()

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { release() }

    /// Closes the lock's descriptor (once): logind may go ahead.
    public func release() {
        if released.setOnce() { close(descriptor) }
    }
}

/// A client of systemd-logind's manager object for what a daemon holding devices needs:
/// a delay inhibitor on sleep, the `PrepareForSleep` signal, and the session a process
/// belongs to (``session(ofProcess:)``).
///
/// Its own bus connection (`DBUS_SYSTEM_BUS_ADDRESS` when set, else the system bus); calls
/// and signals run on FingerprintKit's GLib thread. ``close()`` it when done.
public final class LogindClient: Sendable {
    static let service = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"

    let bus: DBusConnection
    private let subscription = SubscriptionBox()

    private init(bus: DBusConnection) { self.bus = bus }

    /// Connects to the system bus.
    /// - Throws: ``LogindError`` when there is no system bus.
    public static func connect() async throws(LogindError) -> LogindClient {
        do {
            return LogindClient(bus: try await DBusConnection.system())
        } catch {
            throw LogindError(error)
        }
    }

    /// Ends the signal stream and closes the bus connection (which also releases every
    /// inhibitor logind counts for this connection's descriptors once they are closed).
    public func close() async {
        let bus = self.bus
        let subscription = self.subscription
        await GLibLoop.shared.run {
            if let id = subscription.id { g_dbus_connection_signal_unsubscribe(bus.connection.pointer, id) }
            subscription.id = nil
        }
        await bus.close()
    }

    /// `PrepareForSleep(start)` as logind sends it: true before sleep, false after resume.
    /// Call once; subscribe before taking an inhibitor so no signal is missed.
    public func prepareForSleep() async -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self)
        let bus = self.bus
        let subscription = self.subscription
        await GLibLoop.shared.run {
            let callback: GDBusSignalCallback = { _, _, _, _, _, parameters, data in
                guard let data, let parameters else { return }
                let box = Unmanaged<ContinuationBox>.fromOpaque(data).takeUnretainedValue()
                if case .bool(let start) = Variant.child(parameters, 0) { box.continuation.yield(start) }
            }
            let box = Unmanaged.passRetained(ContinuationBox(continuation)).toOpaque()
            subscription.id = g_dbus_connection_signal_subscribe(
                bus.connection.pointer, Self.service, Self.managerInterface, "PrepareForSleep", Self.managerPath, nil,
                G_DBUS_SIGNAL_FLAGS_NONE, callback, box,
                { data in
                    guard let data else { return }
                    let box = Unmanaged<ContinuationBox>.fromOpaque(data).takeRetainedValue()
                    box.continuation.finish()
                })
        }
        return stream
    }

    /// Takes a delay inhibitor on sleep (`Inhibit("sleep", who, why, "delay")`).
    /// - Throws: ``LogindError`` when logind is absent or refuses.
    public func delaySleep(who: String, why: String) async throws(LogindError) -> SleepInhibitor {
        do {
            let descriptor = try await bus.callReturningDescriptor(
                Self.service, Self.managerPath, Self.managerInterface, "Inhibit",
                [.string("sleep"), .string(who), .string(why), .string("delay")])
            return SleepInhibitor(descriptor: descriptor)
        } catch let error as LogindError {
            throw error
        } catch {
            throw LogindError(error)
        }
    }
}

/// The signal subscription's id. GLib thread only.
///
/// `@unchecked Sendable`: `id` is read and written inside `GLibLoop` only.
private final class SubscriptionBox: @unchecked Sendable {
    var id: guint?
}

/// The stream a subscription feeds, as its `user_data`.
private final class ContinuationBox {
    let continuation: AsyncStream<Bool>.Continuation
    init(_ continuation: AsyncStream<Bool>.Continuation) { self.continuation = continuation }
}

/// A thread-safe one-shot flag.
final class AtomicFlag: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private var lock = pthread_mutex_t()
    private var value = false

    init() { pthread_mutex_init(&lock, nil) }
    deinit { pthread_mutex_destroy(&lock) }

    /// Sets the flag; true the first time only.
    func setOnce() -> Bool {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        if value { return false }
        value = true
        return true
    }
}

extension DBusConnection {
    /// Calls `method`, whose reply is one Unix descriptor (`h`), and returns that descriptor,
    /// now owned by the caller.
    func callReturningDescriptor(_ destination: String, _ path: String, _ interface: String, _ method: String,
                                 _ arguments: [Argument]) async throws -> Int32 {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            GLibLoop.shared.perform { [self] in
                var children: [OpaquePointer?] = arguments.map(\.variant)
                let parameters = children.withUnsafeMutableBufferPointer {
                    g_variant_new_tuple($0.baseAddress, gsize($0.count))
                }
                let pending = DescriptorCall(connection: connection.pointer, continuation: continuation)
                g_dbus_connection_call_with_unix_fd_list(
                    connection.pointer, destination, path, interface, method, parameters, Variant.type("(h)"),
                    G_DBUS_CALL_FLAGS_NONE, -1, nil, nil, asyncReadyCallback, pending.retainedPointer())
            }
        }
    }
}

/// `g_dbus_connection_call_with_unix_fd_list` in flight.
///
/// `@unchecked Sendable`: created and completed on the GLib thread only.
private final class DescriptorCall: PendingCall, @unchecked Sendable {
    private let connection: OpaquePointer
    private let continuation: CheckedContinuation<Int32, any Error>

    init(connection: OpaquePointer, continuation: CheckedContinuation<Int32, any Error>) {
        self.connection = connection
        self.continuation = continuation
    }

    override func complete(_ result: OpaquePointer) {
        var list: UnsafeMutablePointer<GUnixFDList>?
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_with_unix_fd_list_finish(connection, &list, result, &error)
        defer {
            if let reply { g_variant_unref(reply) }
            // The list closes its own copies; the one handed out below is a dup.
            if let list { g_object_unref(list) }
        }
        if let error { return continuation.resume(throwing: DBusErrorFunnel.consume(error)) }
        guard let reply, let list else {
            return continuation.resume(throwing: LogindError(description: "systemd-logind answered without a descriptor"))
        }
        let handle = g_variant_get_child_value(reply, 0)!
        let index = g_variant_get_handle(handle)
        g_variant_unref(handle)
        var getError: UnsafeMutablePointer<GError>?
        let descriptor = g_unix_fd_list_get(list, index, &getError)
        if let getError { return continuation.resume(throwing: DBusErrorFunnel.consume(getError)) }
        continuation.resume(returning: descriptor)
    }
}
