import FoundationEssentials
public import TouchgateAPI
import TouchgateBasics

/// Reads every item of the Secret Service provider running on a bus (gnome-keyring,
/// KWallet, KeePassXC), as a client: for `touchgate import secret-service`.
///
/// The values travel in a `plain` session: the bus is the user's own and the reader and
/// provider are the user's processes, the case the specification allows it for; they go
/// straight into guarded memory here.
public enum SecretServiceReader {
    /// What was read: each item's details, and the values packed (``PackedValues``) in the
    /// same order. With `values` false, only the details (and an empty secret).
    /// - Throws: ``ServiceError``: no provider on the bus, a locked collection (named, with
    ///   how to unlock it), more items or bigger values than an import takes.
    public static func read(address: String, values: Bool) throws(ServiceError) -> (details: [ItemDetails], values: SecretBytes) {
        let bus: BusConnection
        do {
            bus = try BusConnection(address: address, prefix: "/com/touchgate/reader-takes-no-calls",
                                    onCall: { _ in }, onSignal: { _, _ in })
        } catch {
            throw ServiceError(.error, "cannot reach the session bus: \(error)")
        }
        defer { bus.close() }
        let name = "org.freedesktop.secrets", root = "/org/freedesktop/secrets"
        func call(_ path: String, _ interface: String, _ member: String, _ arguments: [BusValue]) throws(ServiceError)
            -> [BusValue] {
            do {
                return try bus.call(name, path, interface, member, arguments, timeout: .seconds(25))
            } catch {
                throw ServiceError(.notFound, "no Secret Service answers on this bus (is gnome-keyring running?): \(error)")
            }
        }
        func property(_ path: String, _ interface: String, _ property: String) throws(ServiceError) -> BusValue? {
            guard case .variant(let value)? = try call(path, "org.freedesktop.DBus.Properties", "Get",
                                                       [.string(interface), .string(property)]).first else { return nil }
            return value
        }
        let collections = try property(root, "org.freedesktop.Secret.Service", "Collections")?.paths ?? []
        var details: [ItemDetails] = [], paths: [String] = []
        for collection in collections {
            let collectionName = String(collection.split(separator: "/").last ?? "login")
            let items = try property(collection, "org.freedesktop.Secret.Collection", "Items")?.paths ?? []
            if items.isEmpty { continue }
            if case .boolean(true)? = try property(collection, "org.freedesktop.Secret.Collection", "Locked") {
                throw ServiceError(.vaultLocked, "the keyring '\(StoredText.escaped(collectionName))' is locked: unlock it "
                                   + "(log in to the desktop, or open it in Passwords and Keys), then import again; nothing "
                                   + "was imported")
            }
            for item in items {
                guard details.count < 10_000 else {
                    throw ServiceError(.usage, "more than 10000 items: import takes at most that many; nothing was imported")
                }
                let label = try property(item, "org.freedesktop.Secret.Item", "Label")?.text ?? ""
                let attributes = (try property(item, "org.freedesktop.Secret.Item", "Attributes")?.stringPairs ?? [])
                    .map { SecretAttribute($0.0, $0.1) }
                details.append(ItemDetails(collection: collectionName, label: label, attributes: attributes,
                                           contentType: "text/plain"))
                paths.append(item)
            }
        }
        guard values, !paths.isEmpty else { return (details, SecretBytes(copying: [UInt8]())) }
        guard let session = try call(root, "org.freedesktop.Secret.Service", "OpenSession",
                                     [.string("plain"), .variant(.string(""))]).last?.text else {
            throw ServiceError(.error, "the Secret Service opened no session")
        }
        defer { _ = try? call(session, "org.freedesktop.Secret.Session", "Close", []) }
        guard case .dictionary(_, _, let entries)? = try call(root, "org.freedesktop.Secret.Service", "GetSecrets",
                                                              [.pathArray(paths), .objectPath(session)]).first else {
            throw ServiceError(.error, "the Secret Service gave no secrets")
        }
        var byPath: [String: (SecretBytes, String)] = [:]
        for (path, secret) in entries {
            guard let path = path.text, case .tuple(let members) = secret, members.count == 4,
                  case .bytes(let value) = members[2] else { continue }
            guard value.count <= PackedValues.maximumValueBytes else {
                throw ServiceError(.usage, "an item's value is over \(PackedValues.maximumValueBytes) bytes; nothing was imported")
            }
            byPath[path] = (SecretBytes(copying: value), members[3].text ?? "text/plain")
        }
        var ordered: [SecretBytes] = []
        for (index, path) in paths.enumerated() {
            guard let (value, contentType) = byPath[path] else {
                throw ServiceError(.error, "the Secret Service did not give the value of '\(StoredText.escaped(details[index].label))' "
                                   + "(still locked?); nothing was imported")
            }
            details[index].contentType = contentType
            ordered.append(value)
        }
        return (details, PackedValues.pack(ordered))
    }
}

/// The session bus itself.
public enum SessionBus {
    /// Asks the bus at `address` to read its configuration and service files again, so that
    /// a D-Bus service file written or removed now counts at once (dbus-daemon watches only
    /// the service directories that existed when it started).
    /// - Returns: whether the bus did.
    public static func reloadConfiguration(address: String) -> Bool {
        guard let bus = try? BusConnection(address: address, prefix: "/com/touchgate/reload-takes-no-calls",
                                           onCall: { _ in }, onSignal: { _, _ in }) else { return false }
        defer { bus.close() }
        return (try? bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ReloadConfig", [],
                              timeout: .seconds(5))) != nil
    }
}
