// Base64 (RFC 4648 §4, the standard alphabet), encoding only. Hand-written because this
// module imports nothing but TouchgateBasics, so that any door (the static front included)
// and the fuzz target link it as it is; FoundationEssentials' encoder would add that
// library to all of them for the twenty lines below.

enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64, with `=` padding to a multiple of four characters or without it
    /// (as OpenSSH prints fingerprints).
    static func encode(_ bytes: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var group: UInt32 = 0
            for offset in 0..<3 {
                group = group << 8 | UInt32(offset < count ? bytes[index + offset] : 0)
            }
            // Three bytes make four six-bit digits; a short group makes count + 1 of them.
            for digit in 0..<(count + 1) {
                out.append(alphabet[Int(group >> UInt32(18 - 6 * digit) & 0x3F)])
            }
            if padded {
                out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 3 - count))
            }
            index += count
        }
        return String(decoding: out, as: UTF8.self)
    }
}
