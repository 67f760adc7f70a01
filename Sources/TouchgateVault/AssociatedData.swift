/// Builds the associated data an AEAD seal is bound to, unambiguously.
///
/// Every field is written as a 4-byte big-endian length then its bytes, after a
/// domain label, so no two different field lists give the same bytes and a value
/// sealed for one purpose cannot be opened as another.
struct AssociatedData {
    private(set) var bytes: [UInt8] = []

    /// Starts with `domain`, e.g. `touchgate/item/v1`.
    init(domain: String) {
        append(domain)
    }

    mutating func append(_ field: some Collection<UInt8>) {
        let length = UInt32(field.count)
        bytes += [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
        bytes += field
    }

    mutating func append(_ field: String) {
        append(Array(field.utf8))
    }

    mutating func append(_ flag: Bool) {
        append([flag ? 1 : 0] as [UInt8])
    }

    mutating func append(_ number: UInt64) {
        append((0..<8).map { UInt8(number >> (56 - 8 * $0) & 0xff) })
    }

    /// An optional field: a presence byte, then the field when present.
    mutating func append(optional field: [UInt8]?) {
        append(field != nil)
        if let field { append(field) }
    }
}
