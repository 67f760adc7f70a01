import TouchgatePolicy

/// Which stored state of an item a write expects to replace: the item's current nonce,
/// which every write of the item renews, taken as an opaque token.
///
/// Read it from ``VaultItemInfo/version`` and pass it back in ``ItemExpectation/version(_:)``
/// so that a write based on an earlier read fails with ``ConflictError/itemChanged(name:)``
/// instead of overwriting a change made meanwhile by another process. Not secret. Its
/// ``description`` is lowercase hex and ``init(_:)`` parses it back, so it can cross a
/// process boundary (the daemon's wire types).
public struct ItemVersion: Sendable, Hashable, LosslessStringConvertible {
    /// The item's nonce as stored.
    let bytes: [UInt8]

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// A version that matches no stored item (for ``VaultItemInfo`` values built by hand).
    static let unknown = ItemVersion(bytes: [])

    /// Parses the hex form written by ``description``; `nil` for anything else (empty
    /// text, upper-case digits: only the exact text ``description`` writes).
    public init?(_ description: String) {
        guard let bytes = Hex.decode(description), !bytes.isEmpty, Hex.encode(bytes) == description else {
            return nil
        }
        self.bytes = bytes
    }

    /// Lowercase hex (``Hex/encode(_:)``).
    public var description: String { Hex.encode(bytes) }
}

/// What a write of an item expects to find (compare-and-swap).
public enum ItemExpectation: Sendable, Hashable {
    /// Write whatever is stored (the behaviour of a plain ``Vault/setItem(named:value:policy:freshTouch:enrollmentDigest:key:expecting:)``).
    case any
    /// The item must not exist yet.
    case absent
    /// The item must still be exactly the one read earlier.
    case version(ItemVersion)

    /// Throws ``ConflictError/itemChanged(name:)`` unless `current` (the stored nonce, or
    /// `nil` when there is no such item) is what this expects.
    func check(current: [UInt8]?, name: String) throws {
        switch self {
        case .any:
            return
        case .absent:
            guard current == nil else { throw ConflictError.itemChanged(name: name) }
        case let .version(version):
            guard let current, AuditMAC.equal(current, version.bytes) else { throw ConflictError.itemChanged(name: name) }
        }
    }
}

/// A compare-and-swap write found something other than what it expected.
///
/// Nothing was written. Read again and decide again; never retry blindly with the new
/// version, which would overwrite the other change.
public enum ConflictError: Error, Equatable, CustomStringConvertible {
    /// The item was created, changed or deleted since it was read.
    case itemChanged(name: String)

    /// A one-line message saying what to do (never holds a value).
    public var description: String {
        switch self {
        case let .itemChanged(name):
            return "item \"\(name)\" was created, changed or deleted by another process since it was read; nothing was written: read it again and retry"
        }
    }
}
