import CGio
import FoundationEssentials

/// A D-Bus value as this door reads and writes it: the types the Secret Service uses, and
/// nothing GLib-owned, so a value can cross tasks. ``gvariant()`` and ``init(_:)`` convert.
indirect enum BusValue: Sendable, Equatable {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    case byte(UInt8)
    case uint32(UInt32)
    case int32(Int32)
    case uint64(UInt64)
    case int64(Int64)
    case bytes([UInt8])
    /// An array of `elementType` (a D-Bus signature), which an empty array still needs.
    case array(elementType: String, [BusValue])
    /// `a{…}`: the key's and the value's types, then the entries.
    case dictionary(keyType: String, valueType: String, [(BusValue, BusValue)])
    case tuple([BusValue])
    case variant(BusValue)
    /// A type this door does not read (a double, a file descriptor…): kept only as its signature.
    case unsupported(String)

    static func == (lhs: BusValue, rhs: BusValue) -> Bool {
        switch (lhs, rhs) {
        case let (.string(a), .string(b)), let (.objectPath(a), .objectPath(b)): a == b
        case let (.boolean(a), .boolean(b)): a == b
        case let (.byte(a), .byte(b)): a == b
        case let (.uint32(a), .uint32(b)): a == b
        case let (.int32(a), .int32(b)): a == b
        case let (.uint64(a), .uint64(b)): a == b
        case let (.int64(a), .int64(b)): a == b
        case let (.bytes(a), .bytes(b)): a == b
        case let (.array(t, a), .array(u, b)): t == u && a == b
        case let (.dictionary(k, v, a), .dictionary(l, w, b)):
            k == l && v == w && a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.tuple(a), .tuple(b)): a == b
        case let (.variant(a), .variant(b)): a == b
        case let (.unsupported(a), .unsupported(b)): a == b
        default: false
        }
    }

    /// Its D-Bus signature.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .boolean: "b"
        case .byte: "y"
        case .uint32: "u"
        case .int32: "i"
        case .uint64: "t"
        case .int64: "x"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .tuple(let members): "(" + members.map(\.signature).joined() + ")"
        case .variant: "v"
        case .unsupported(let signature): signature
        }
    }

    // MARK: Reading what arrived

    /// The value of `variant` (not consumed).
    init(_ variant: OpaquePointer) {
        let type = String(cString: g_variant_get_type_string(variant))
        switch g_variant_classify(variant) {
        case G_VARIANT_CLASS_STRING: self = .string(String(cString: g_variant_get_string(variant, nil)))
        case G_VARIANT_CLASS_OBJECT_PATH: self = .objectPath(String(cString: g_variant_get_string(variant, nil)))
        case G_VARIANT_CLASS_SIGNATURE: self = .string(String(cString: g_variant_get_string(variant, nil)))
        case G_VARIANT_CLASS_BOOLEAN: self = .boolean(g_variant_get_boolean(variant) != 0)
        case G_VARIANT_CLASS_BYTE: self = .byte(g_variant_get_byte(variant))
        case G_VARIANT_CLASS_UINT32: self = .uint32(g_variant_get_uint32(variant))
        case G_VARIANT_CLASS_INT32: self = .int32(g_variant_get_int32(variant))
        case G_VARIANT_CLASS_UINT64: self = .uint64(UInt64(g_variant_get_uint64(variant)))
        case G_VARIANT_CLASS_INT64: self = .int64(Int64(g_variant_get_int64(variant)))
        case G_VARIANT_CLASS_VARIANT:
            let inner = g_variant_get_variant(variant)!
            defer { g_variant_unref(inner) }
            self = .variant(BusValue(inner))
        case G_VARIANT_CLASS_ARRAY where type == "ay":
            var count: gsize = 0
            if let start = g_variant_get_fixed_array(variant, &count, 1), count > 0 {
                self = .bytes(Array(UnsafeRawBufferPointer(start: start, count: Int(count))))
            } else {
                self = .bytes([])
            }
        case G_VARIANT_CLASS_ARRAY:
            let element = String(type.dropFirst())
            let children = Self.children(of: variant)
            if element.hasPrefix("{") {
                let inner = element.dropFirst().dropLast()
                let keyType = String(inner.prefix(1))
                self = .dictionary(keyType: keyType, valueType: String(inner.dropFirst()), children.map { entry in
                    guard case .tuple(let pair) = entry, pair.count == 2 else { return (.unsupported("?"), .unsupported("?")) }
                    return (pair[0], pair[1])
                })
            } else {
                self = .array(elementType: element, children)
            }
        case G_VARIANT_CLASS_TUPLE, G_VARIANT_CLASS_DICT_ENTRY:
            self = .tuple(Self.children(of: variant))
        default:
            self = .unsupported(type)
        }
    }

    private static func children(of variant: OpaquePointer) -> [BusValue] {
        (0..<g_variant_n_children(variant)).map { index in
            let child = g_variant_get_child_value(variant, index)!
            defer { g_variant_unref(child) }
            return BusValue(child)
        }
    }

    // MARK: Writing a reply

    /// A new floating GVariant of this value.
    func gvariant() -> OpaquePointer {
        switch self {
        case .string(let text): return g_variant_new_string(Self.valid(text))
        case .objectPath(let path): return g_variant_new_object_path(path)
        case .boolean(let flag): return g_variant_new_boolean(flag ? 1 : 0)
        case .byte(let byte): return g_variant_new_byte(byte)
        case .uint32(let number): return g_variant_new_uint32(number)
        case .int32(let number): return g_variant_new_int32(number)
        case .uint64(let number): return g_variant_new_uint64(guint64(number))
        case .int64(let number): return g_variant_new_int64(gint64(number))
        case .bytes(let bytes):
            let type = g_variant_type_new("y")
            defer { g_variant_type_free(type) }
            return bytes.withUnsafeBytes { buffer in
                g_variant_new_fixed_array(type, buffer.baseAddress, gsize(buffer.count), 1)
            }
        case .array(let element, let members):
            return Self.array(of: element, members.map { $0.gvariant() })
        case .dictionary(let keyType, let valueType, let entries):
            return Self.array(of: "{" + keyType + valueType + "}", entries.map { key, value in
                g_variant_new_dict_entry(key.gvariant(), value.gvariant())
            })
        case .tuple(let members):
            var children: [OpaquePointer?] = members.map { $0.gvariant() }
            return children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
        case .variant(let inner):
            return g_variant_new_variant(inner.gvariant())
        case .unsupported:
            // Never sent: replies are built from the supported cases only.
            return g_variant_new_tuple(nil, 0)
        }
    }

    private static func array(of element: String, _ children: [OpaquePointer]) -> OpaquePointer {
        let type = g_variant_type_new(element)
        defer { g_variant_type_free(type) }
        var pointers: [OpaquePointer?] = children
        return pointers.withUnsafeMutableBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
    }

    /// GVariant strings must be UTF-8 without NUL: Swift strings are UTF-8, so only NULs go.
    private static func valid(_ text: String) -> String {
        text.contains("\0") ? text.replacing("\0", with: "") : text
    }
}

extension BusValue {
    /// The string inside (a string, an object path, or either inside a variant).
    var text: String? {
        switch self {
        case .string(let text), .objectPath(let text): text
        case .variant(let inner): inner.text
        default: nil
        }
    }

    var paths: [String]? {
        guard case .array(let element, let members) = self, element == "o" else { return nil }
        return members.compactMap(\.text)
    }

    /// An `a{ss}` as pairs (nil for another type; a variant's inside is read).
    var stringPairs: [(String, String)]? {
        switch self {
        case .variant(let inner): return inner.stringPairs
        case .dictionary(let key, let value, let entries) where key == "s" && value == "s":
            return entries.compactMap { key, value in key.text.flatMap { k in value.text.map { (k, $0) } } }
        default: return nil
        }
    }

    /// An `a{sv}` as a lookup by key.
    var properties: [String: BusValue]? {
        guard case .dictionary(let key, let value, let entries) = self, key == "s", value == "v" else { return nil }
        var result: [String: BusValue] = [:]
        for (key, value) in entries {
            if let name = key.text, case .variant(let inner) = value { result[name] = inner }
        }
        return result
    }

    static func stringDictionary(_ pairs: [(String, String)]) -> BusValue {
        .dictionary(keyType: "s", valueType: "s", pairs.map { (.string($0.0), .string($0.1)) })
    }

    static func pathArray(_ paths: [String]) -> BusValue {
        .array(elementType: "o", paths.map { .objectPath($0) })
    }
}
