/// CBOR (RFC 8949) as CTAP 2.1 uses it: definite lengths only, integers up to 64 bits, byte
/// and text strings, arrays, maps, booleans and null.
///
/// Hand-written: the only input it reads comes from any process that can open the
/// authenticator, so the reader bounds everything it is given (``CBORLimits``) before it
/// allocates, and the writer emits CTAP2's canonical form (RFC 7049 §3.9: map keys sorted
/// by their encoded length, then by their bytes), which python-fido2 checks byte for byte.
/// No CBOR library in Debian or among the project's Swift packages does both.
public indirect enum CBOR: Equatable, Sendable {
    case unsigned(UInt64)
    /// A negative integer: the value is −1 − n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// Pairs in the order read (or given); encoding sorts them.
    case map([(CBOR, CBOR)])
    case bool(Bool)
    case null

    public static func int(_ value: Int) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    public static func == (lhs: CBOR, rhs: CBOR) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)), (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    // MARK: Reading values

    /// The value as an `Int`, when it is an integer that fits.
    public var int: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value < UInt64(Int.max) ? -Int(value) - 1 : nil
        default: nil
        }
    }

    public var byteString: [UInt8]? { if case .bytes(let value) = self { value } else { nil } }
    public var textString: String? { if case .text(let value) = self { value } else { nil } }
    public var boolean: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var arrayValue: [CBOR]? { if case .array(let value) = self { value } else { nil } }
    public var mapValue: [(CBOR, CBOR)]? { if case .map(let value) = self { value } else { nil } }

    /// The value under `key` in a map.
    public subscript(key: CBOR) -> CBOR? {
        mapValue?.first { $0.0 == key }?.1
    }

    public subscript(key: Int) -> CBOR? { self[.int(key)] }
    public subscript(key: String) -> CBOR? { self[.text(key)] }
}

/// How much a reader accepts before it allocates: a CTAPHID message is at most 7,609 bytes,
/// so no honest request comes near these.
public struct CBORLimits: Sendable {
    /// Nesting of arrays and maps (CTAP 2.1 §8 asks authenticators to accept 4).
    public var depth = 8
    /// Items in all arrays and maps of one value, counted as read.
    public var items = 1_024

    public init() {}
}

public enum CBORError: Error, Equatable, Sendable {
    /// The bytes end inside a value.
    case truncated
    /// Something CTAP's CBOR does not use: indefinite lengths, tags, floats, simple values
    /// other than false, true and null, or a reserved encoding.
    case unsupported(String)
    /// Deeper or larger than ``CBORLimits`` allows.
    case tooLarge(String)
    /// A text string that is not UTF-8, or a map with the same key twice.
    case invalid(String)
    /// Bytes left after the value.
    case trailingBytes
}

extension CBOR {
    /// Reads exactly one value from `bytes`.
    public static func decode(_ bytes: some Collection<UInt8>, limits: CBORLimits = CBORLimits()) throws(CBORError) -> CBOR {
        var reader = CBORReader(bytes: Array(bytes), limits: limits)
        let value = try reader.value(depth: 0)
        guard reader.offset == reader.bytes.count else { throw .trailingBytes }
        return value
    }

    /// Reads one value from the start of `bytes`, and how many bytes it took.
    public static func decodePrefix(_ bytes: [UInt8], limits: CBORLimits = CBORLimits()) throws(CBORError) -> (CBOR, Int) {
        var reader = CBORReader(bytes: bytes, limits: limits)
        let value = try reader.value(depth: 0)
        return (value, reader.offset)
    }

    /// The canonical encoding.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, into: &out)
        case .negative(let value): Self.head(1, value, into: &out)
        case .bytes(let value):
            Self.head(2, UInt64(value.count), into: &out)
            out += value
        case .text(let value):
            Self.head(3, UInt64(value.utf8.count), into: &out)
            out += value.utf8
        case .array(let values):
            Self.head(4, UInt64(values.count), into: &out)
            for value in values { value.encode(into: &out) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), into: &out)
            let sorted = pairs.map { ($0.0.encoded, $0.1) }.sorted { a, b in
                a.0.count != b.0.count ? a.0.count < b.0.count : a.0.lexicographicallyPrecedes(b.0)
            }
            for (key, value) in sorted {
                out += key
                value.encode(into: &out)
            }
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        }
    }

    /// A major type and its argument, in the shortest form.
    private static func head(_ major: UInt8, _ value: UInt64, into out: inout [UInt8]) {
        let type = major << 5
        switch value {
        case ..<24: out.append(type | UInt8(value))
        case ...0xFF: out += [type | 24, UInt8(value)]
        case ...0xFFFF: out += [type | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case ...0xFFFF_FFFF: out += [type | 26] + (0..<4).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) }
        default: out += [type | 27] + (0..<8).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) }
        }
    }
}

private struct CBORReader {
    let bytes: [UInt8]
    let limits: CBORLimits
    var offset = 0
    var items = 0

    init(bytes: [UInt8], limits: CBORLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func byte() throws(CBORError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
        switch info {
        case ..<24: return UInt64(info)
        case 24...27:
            let width = 1 << Int(info - 24)
            guard bytes.count - offset >= width else { throw .truncated }
            var value: UInt64 = 0
            for _ in 0..<width { value = value << 8 | UInt64(try byte()) }
            return value
        case 31: throw .unsupported("an indefinite length")
        default: throw .unsupported("a reserved length encoding")
        }
    }

    /// A length that must fit in what is left of the input (each item takes at least a byte).
    mutating func length(_ info: UInt8) throws(CBORError) -> Int {
        let value = try argument(info)
        guard value <= UInt64(bytes.count - offset) else { throw .truncated }
        return Int(value)
    }

    mutating func count(_ added: Int) throws(CBORError) {
        items += added
        guard items <= limits.items else { throw .tooLarge("more than \(limits.items) items") }
    }

    mutating func value(depth: Int) throws(CBORError) -> CBOR {
        let initial = try byte()
        let major = initial >> 5, info = initial & 0x1F
        switch major {
        case 0: return .unsigned(try argument(info))
        case 1: return .negative(try argument(info))
        case 2:
            let count = try length(info)
            defer { offset += count }
            return .bytes(Array(bytes[offset..<offset + count]))
        case 3:
            let count = try length(info)
            guard let text = String(validating: bytes[offset..<offset + count], as: UTF8.self) else {
                throw .invalid("a text string that is not UTF-8")
            }
            offset += count
            return .text(text)
        case 4, 5:
            guard depth < limits.depth else { throw .tooLarge("nested deeper than \(limits.depth)") }
            let count = try length(info)
            try self.count(major == 5 ? count * 2 : count)
            if major == 4 {
                var values: [CBOR] = []
                values.reserveCapacity(count)
                for _ in 0..<count { values.append(try value(depth: depth + 1)) }
                return .array(values)
            }
            var pairs: [(CBOR, CBOR)] = []
            pairs.reserveCapacity(count)
            for _ in 0..<count {
                let key = try value(depth: depth + 1)
                if pairs.contains(where: { $0.0 == key }) { throw .invalid("a map with the same key twice") }
                pairs.append((key, try value(depth: depth + 1)))
            }
            return .map(pairs)
        case 6: throw .unsupported("a tag")
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            default: throw .unsupported("a float or simple value")
            }
        }
    }
}
