import CGio
import FoundationEssentials
import Synchronization

/// A D-Bus method call this door received, with what it needs to answer.
struct BusCall: Sendable {
    /// The caller's unique bus name (`:1.42`), from the bus itself.
    let sender: String
    let path: String
    /// Empty when the caller named none.
    let interface: String
    let member: String
    /// The arguments' signature as sent.
    let signature: String
    /// The arguments, as a tuple's members.
    let arguments: [BusValue]
    /// The message to answer (a strong reference, dropped by ``BusConnection/answer(_:with:)``).
    fileprivate let message: MessageReference
}

/// A strong reference to a GDBusMessage, released when the last copy goes.
///
/// `@unchecked Sendable`: the message is locked by GDBus before any filter sees it (it
/// can no longer change), and is only read or replied to, which GLib allows from any thread.
final class MessageReference: @unchecked Sendable {
    let pointer: OpaquePointer
    init(retaining pointer: OpaquePointer) {
        self.pointer = pointer
        g_object_ref(UnsafeMutableRawPointer(pointer))
    }
    deinit { g_object_unref(UnsafeMutableRawPointer(pointer)) }
}

/// What a method call is answered with.
enum BusReply: Sendable {
    case values([BusValue])
    case error(name: String, message: String)
}

/// A connection to the user's session bus that takes the method calls made on
/// `/org/freedesktop/secrets` and below and hands them to `handler`, answering each when
/// the handler returns.
///
/// Hand-written over a message filter rather than GDBus's object registration: the
/// registration dispatches on a GLib main context (a thread of its own to run it) and
/// validates arguments against introspection data this door would have to keep in two
/// places; the filter sees each call on GDBus's own worker thread, where it is only taken
/// and handed to a task, and every answer is sent from that task (sending is thread-safe).
///
/// `@unchecked Sendable`: `connection` never changes after init, GDBusConnection is
/// thread-safe for sending, emitting, calling and closing, and its last reference is dropped
/// only in `deinit`, when no task can use it any more.
final class BusConnection: @unchecked Sendable {
    let connection: OpaquePointer
    /// This connection's unique name.
    let uniqueName: String
    private let filterID: Mutex<guint> = Mutex(0)

    /// What the filter hands calls to; retained while the filter is installed.
    final class FilterBox: Sendable {
        let prefix: String
        let onCall: @Sendable (BusCall) -> Void
        let onSignal: @Sendable (_ member: String, _ arguments: [BusValue]) -> Void
        init(prefix: String, onCall: @escaping @Sendable (BusCall) -> Void,
             onSignal: @escaping @Sendable (String, [BusValue]) -> Void) {
            self.prefix = prefix
            self.onCall = onCall
            self.onSignal = onSignal
        }
    }

    /// Connects to the bus at `address`. Calls on `prefix` and below go to `onCall` (never
    /// on the caller's thread); the bus daemon's signals this connection subscribed to go to
    /// `onSignal`.
    init(address: String, prefix: String, onCall: @escaping @Sendable (BusCall) -> Void,
         onSignal: @escaping @Sendable (String, [BusValue]) -> Void) throws(BusError) {
        var error: UnsafeMutablePointer<GError>?
        let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                                         | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        guard let connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error) else {
            throw BusError.from(error, doing: "connect to the session bus")
        }
        self.connection = connection
        g_dbus_connection_set_exit_on_close(connection, 0)
        uniqueName = String(cString: g_dbus_connection_get_unique_name(connection))
        let box = Unmanaged.passRetained(FilterBox(prefix: prefix, onCall: onCall, onSignal: onSignal))
        // GDBus may still run the filter on its thread after it is removed: the box is released
        // by the destroy notification, once GDBus no longer needs it.
        let id = g_dbus_connection_add_filter(connection, { _, message, incoming, data in
            guard incoming != 0, let message, let data else { return message }
            let box = Unmanaged<FilterBox>.fromOpaque(data).takeUnretainedValue()
            return BusConnection.filter(message, box)
        }, box.toOpaque(), { data in
            if let data { Unmanaged<FilterBox>.fromOpaque(data).release() }
        })
        filterID.withLock { $0 = id }
    }

    /// Takes a method call on the prefix, or a signal from the bus daemon; lets all else through.
    private static func filter(_ message: OpaquePointer, _ box: FilterBox) -> OpaquePointer? {
        let type = g_dbus_message_get_message_type(message)
        let path = g_dbus_message_get_path(message).map { String(cString: $0) } ?? ""
        let member = g_dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        if type == G_DBUS_MESSAGE_TYPE_SIGNAL {
            let sender = g_dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
            if sender == "org.freedesktop.DBus" {
                box.onSignal(member, body(of: message))
            }
            return message
        }
        guard type == G_DBUS_MESSAGE_TYPE_METHOD_CALL,
              path == box.prefix || path.hasPrefix(box.prefix + "/") else { return message }
        let interface = g_dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
        // Peer (Ping, GetMachineId) is GDBus's own to answer.
        if interface == "org.freedesktop.DBus.Peer" { return message }
        let call = BusCall(sender: g_dbus_message_get_sender(message).map { String(cString: $0) } ?? "",
                           path: path, interface: interface, member: member,
                           signature: g_dbus_message_get_signature(message).map { String(cString: $0) } ?? "",
                           arguments: body(of: message), message: MessageReference(retaining: message))
        box.onCall(call)
        // Taken: the filter owned the reference it was given.
        g_object_unref(UnsafeMutableRawPointer(message))
        return nil
    }

    private static func body(of message: OpaquePointer) -> [BusValue] {
        guard let body = g_dbus_message_get_body(message), case .tuple(let members) = BusValue(body) else { return [] }
        return members
    }

    /// Sends the answer to `call`.
    func answer(_ call: BusCall, with reply: BusReply) {
        let message: OpaquePointer
        switch reply {
        case .values(let values):
            message = g_dbus_message_new_method_reply(call.message.pointer)
            if !values.isEmpty { g_dbus_message_set_body(message, BusValue.tuple(values).gvariant()) }
        case .error(let name, let text):
            message = g_dbus_message_new_method_error_literal(call.message.pointer, name, text)
        }
        g_dbus_connection_send_message(connection, message, G_DBUS_SEND_MESSAGE_FLAGS_NONE, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(message))
    }

    /// Emits `member` of `interface` from `path` to everyone listening.
    func emit(_ path: String, _ interface: String, _ member: String, _ values: [BusValue], to destination: String? = nil) {
        g_dbus_connection_emit_signal(connection, destination, path, interface, member,
                                      BusValue.tuple(values).gvariant(), nil)
    }

    /// Calls a method and waits at most `timeout` for the answer (blocks the calling thread:
    /// call it off the cooperative pool, or only where the bus answers at once).
    func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ values: [BusValue],
              timeout: Duration = .seconds(5)) throws(BusError) -> [BusValue] {
        var error: UnsafeMutablePointer<GError>?
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard let reply = g_dbus_connection_call_sync(connection, destination, path, interface, member,
                                                      BusValue.tuple(values).gvariant(), nil, G_DBUS_CALL_FLAGS_NONE,
                                                      milliseconds, nil, &error) else {
            throw BusError.from(error, doing: "call \(interface).\(member)")
        }
        defer { g_variant_unref(reply) }
        guard case .tuple(let members) = BusValue(reply) else { return [] }
        return members
    }

    /// Asks the bus for `name`, without queueing behind its owner.
    /// - Returns: false when another connection owns it.
    func requestName(_ name: String) throws(BusError) -> Bool {
        // DBUS_NAME_FLAG_DO_NOT_QUEUE = 4; replies: 1 primary owner, 4 already owner, 3 exists.
        let reply = try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                             [.string(name), .uint32(4)])
        guard case .uint32(let code)? = reply.first else { return false }
        return code == 1 || code == 4
    }

    /// Subscribes this connection to the bus daemon's `NameOwnerChanged` (clients leaving).
    func watchClientsLeaving() throws(BusError) {
        _ = try call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch",
                     [.string("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                              + "member='NameOwnerChanged'")])
    }

    /// Whether the bus went away (the connection is closed).
    var isClosed: Bool {
        filterID.withLock { $0 == 0 } || g_dbus_connection_is_closed(connection) != 0
    }

    /// Stops taking calls and closes the connection (the bus then frees the name). Answers
    /// still being made go nowhere; the connection object itself goes with the last reference.
    func close() {
        let id = filterID.withLock { id in defer { id = 0 }; return id }
        guard id != 0 else { return }
        g_dbus_connection_remove_filter(connection, id)
        g_dbus_connection_close_sync(connection, nil, nil)
    }

    deinit {
        close()
        g_object_unref(UnsafeMutableRawPointer(connection))
    }
}

/// A failure of the bus itself, with GLib's message.
struct BusError: Error, CustomStringConvertible {
    let description: String

    static func from(_ error: UnsafeMutablePointer<GError>?, doing what: String) -> BusError {
        defer { if let error { g_error_free(error) } }
        let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "unknown error"
        return BusError(description: "cannot \(what): \(message)")
    }
}
