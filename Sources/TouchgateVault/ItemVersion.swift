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

    /// Parses the hex form written by ``description``; `nil` for anything else.
    public init?(_ description: String) {
        let digits = Array(description.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// Lowercase hex.
    public var description: String { AuditMAC.hex(bytes) }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
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
