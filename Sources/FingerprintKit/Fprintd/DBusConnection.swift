import CFPrint

/// A private GDBus connection to the system bus, used on the GLib thread only.
///
/// A connection of its own (not GIO's shared singleton) so that closing it ends every claim
/// this process holds, and so that `DBUS_SYSTEM_BUS_ADDRESS` is read when it is made.
/// Method replies and subscribed signals are dispatched on the global default main
/// context, which `GLibLoop` iterates: every callback below runs on the GLib thread.
///
/// `@unchecked Sendable`: `connection` never changes after init and is used only inside
/// `GLibLoop.perform` (including the final close and unref in ``close()``).
final class DBusConnection: @unchecked Sendable {
    let connection: GObjectRef<OpaquePointer>

    private init(connection: OpaquePointer) {
        self.connection = GObjectRef(pointer: connection)
    }

    /// Connects to the system bus at `given`, or else `DBUS_SYSTEM_BUS_ADDRESS` when set, else
    /// the standard socket.
    /// - Throws: ``FprintdError/notRunning(detail:)`` when there is no system bus.
    static func system(address given: String? = nil) async throws -> DBusConnection {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DBusConnection, any Error>) in
            GLibLoop.shared.perform {
                do {
                    let address: UnsafeMutablePointer<gchar>? = try given.map { g_strdup($0) }
                        ?? DBusErrorFunnel.check { g_dbus_address_get_for_bus_sync(G_BUS_TYPE_SYSTEM, nil, $0) }
                    guard let address else { throw FprintdError.notRunning(detail: "no system bus address") }
                    defer { g_free(address) }
                    let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                                                     | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
                    let pending = ConnectCall(continuation: continuation)
                    g_dbus_connection_new_for_address(address, flags, nil, nil, asyncReadyCallback, pending.retainedPointer())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Closes the connection (the bus then tells fprintd this client is gone) and drops it.
    func close() async {
        let connection = self.connection
        await GLibLoop.shared.run {
            g_dbus_connection_close(connection.pointer, nil, nil, nil)
            g_object_unref(UnsafeMutableRawPointer(connection.pointer))
        }
    }

    /// A method call's argument.
    enum Argument: Sendable {
        case string(String)
        case uint32(UInt32)

        /// A new floating GVariant for the argument. GLib thread only.
        var variant: OpaquePointer {
            switch self {
            case .string(let value): return g_variant_new_string(value)
            case .uint32(let value): return g_variant_new_uint32(value)
            }
        }
    }

    /// Calls `method` and hands the reply (valid only during `completion`) or the error to
    /// `completion`, on the GLib thread. GLib thread only.
    func call(_ destination: String, _ path: String, _ interface: String, _ method: String,
              _ arguments: [Argument] = [], user: String = "",
              completion: @escaping (Result<OpaquePointer, any Error>) -> Void) {
        var children: [OpaquePointer?] = arguments.map(\.variant)
        let parameters = children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
        let pending = MethodCall(connection: connection.pointer, user: user, completion: completion)
        g_dbus_connection_call(connection.pointer, destination, path, interface, method, parameters, nil,
                               G_DBUS_CALL_FLAGS_NONE, -1, nil, asyncReadyCallback, pending.retainedPointer())
    }

    /// Calls `method` and returns what `parse` reads from the reply (on the GLib thread).
    func call<T: Sendable>(_ destination: String, _ path: String, _ interface: String, _ method: String,
                           _ arguments: [Argument] = [], user: String = "",
                           parse: @escaping @Sendable (OpaquePointer) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            GLibLoop.shared.perform { [self] in
                call(destination, path, interface, method, arguments, user: user) { result in
                    continuation.resume(with: Result { try parse(try result.get()) })
                }
            }
        }
    }
}

/// `g_dbus_connection_new_for_address` in flight.
///
/// `@unchecked Sendable`: completed once, on the GLib thread.
private final class ConnectCall: PendingCall, @unchecked Sendable {
    private let continuation: CheckedContinuation<DBusConnection, any Error>
    init(continuation: CheckedContinuation<DBusConnection, any Error>) { self.continuation = continuation }

    override func complete(_ result: OpaquePointer) {
        do {
            let connection = try DBusErrorFunnel.check { g_dbus_connection_new_for_address_finish(result, $0) }
            guard let connection else { throw FprintdError.notRunning(detail: "no connection") }
            // Our code closes it; a bus that goes away must not end the process.
            g_dbus_connection_set_exit_on_close(connection, 0)
            continuation.resume(returning: DBusConnection.wrap(connection))
        } catch {
            continuation.resume(throwing: error)
        }
    }
}

extension DBusConnection {
    fileprivate static func wrap(_ connection: OpaquePointer) -> DBusConnection { DBusConnection(connection: connection) }
}

/// `g_dbus_connection_call` in flight.
///
/// `@unchecked Sendable`: created and completed on the GLib thread only.
private final class MethodCall: PendingCall, @unchecked Sendable {
    private let connection: OpaquePointer
    private let user: String
    private let completion: (Result<OpaquePointer, any Error>) -> Void

    init(connection: OpaquePointer, user: String, completion: @escaping (Result<OpaquePointer, any Error>) -> Void) {
        self.connection = connection
        self.user = user
        self.completion = completion
    }

    override func complete(_ result: OpaquePointer) {
        var error: UnsafeMutablePointer<GError>?
        let reply = g_dbus_connection_call_finish(connection, result, &error)
        if let error {
            completion(.failure(DBusErrorFunnel.consume(error, user: user)))
        } else if let reply {
            defer { g_variant_unref(reply) }
            completion(.success(reply))
        } else {
            completion(.failure(FprintdError.failed(name: "no reply", detail: "")))
        }
    }
}

/// Reading GVariant values. GLib thread only (the values are borrowed from a reply).
enum Variant {
    /// A property value as read from an `a{sv}` or a `v`.
    enum Value: Sendable, Equatable {
        case string(String)
        case bool(Bool)
        case int(Int)
        case other
    }

    /// `G_VARIANT_TYPE (text)`: the macro is a cast of a static string.
    static func type(_ text: StaticString) -> OpaquePointer { OpaquePointer(text.utf8Start) }

    static func isOfType(_ value: OpaquePointer, _ text: StaticString) -> Bool {
        g_variant_is_of_type(value, type(text)) != 0
    }

    /// Child `index` of a tuple, read as a ``Value``.
    static func child(_ value: OpaquePointer, _ index: Int) -> Value {
        guard g_variant_is_container(value) != 0, index < Int(g_variant_n_children(value)) else { return .other }
        let item = g_variant_get_child_value(value, gsize(index))!
        defer { g_variant_unref(item) }
        return read(item)
    }

    /// Child `index` of a tuple as strings (`as`, `ao`).
    static func strings(_ value: OpaquePointer, _ index: Int) -> [String] {
        guard g_variant_is_container(value) != 0, index < Int(g_variant_n_children(value)) else { return [] }
        let array = g_variant_get_child_value(value, gsize(index))!
        defer { g_variant_unref(array) }
        guard isOfType(array, "as") || isOfType(array, "ao") else { return [] }
        return (0..<Int(g_variant_n_children(array))).compactMap { item in
            if case .string(let text) = child(array, item) { return text }
            return nil
        }
    }

    /// Child `index` of a tuple as an `a{sv}` dictionary.
    static func dictionary(_ value: OpaquePointer, _ index: Int) -> [String: Value] {
        guard g_variant_is_container(value) != 0, index < Int(g_variant_n_children(value)) else { return [:] }
        let dictionary = g_variant_get_child_value(value, gsize(index))!
        defer { g_variant_unref(dictionary) }
        guard isOfType(dictionary, "a{sv}") else { return [:] }
        var result: [String: Value] = [:]
        for entry in 0..<Int(g_variant_n_children(dictionary)) {
            let pair = g_variant_get_child_value(dictionary, gsize(entry))!
            defer { g_variant_unref(pair) }
            if case .string(let key) = child(pair, 0) { result[key] = child(pair, 1) }
        }
        return result
    }

    /// Child `index` of a tuple as an array of tuples (`a(susso)`), each as its members.
    static func rows(_ value: OpaquePointer, _ index: Int) -> [[Value]] {
        guard g_variant_is_container(value) != 0, index < Int(g_variant_n_children(value)) else { return [] }
        let array = g_variant_get_child_value(value, gsize(index))!
        defer { g_variant_unref(array) }
        guard g_variant_is_container(array) != 0 else { return [] }
        return (0..<Int(g_variant_n_children(array))).map { item in
            let row = g_variant_get_child_value(array, gsize(item))!
            defer { g_variant_unref(row) }
            guard g_variant_is_container(row) != 0 else { return [] }
            return (0..<Int(g_variant_n_children(row))).map { child(row, $0) }
        }
    }

    /// A basic value, unboxing a `v` first.
    static func read(_ value: OpaquePointer) -> Value {
        if isOfType(value, "v") {
            let inner = g_variant_get_variant(value)!
            defer { g_variant_unref(inner) }
            return read(inner)
        }
        if isOfType(value, "s") || isOfType(value, "o") { return .string(String(cString: g_variant_get_string(value, nil))) }
        // logind's `Seat` of a session: its id and object path; the id is what is read.
        if isOfType(value, "(so)") { return child(value, 0) }
        // logind's `User` of a session: its uid and object path; the uid is what is read.
        if isOfType(value, "(uo)") { return child(value, 0) }
        if isOfType(value, "u") { return .int(Int(g_variant_get_uint32(value))) }
        if isOfType(value, "b") { return .bool(g_variant_get_boolean(value) != 0) }
        if isOfType(value, "i") { return .int(Int(g_variant_get_int32(value))) }
        return .other
    }
}
