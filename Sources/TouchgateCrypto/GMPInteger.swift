public import CNettle
public import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// A GMP integer, wiped and cleared when the last reference goes. GMP frees limbs without
/// wiping them, so ``deinit`` zeroes the final limb array first (a value built by
/// ``init(bytes:)`` is imported into one allocation of its final size; intermediate results
/// of GMP's own arithmetic may still leave copies in freed memory).
public final class GMPInteger {
    public var value = __mpz_struct()

    public init() {
        __gmpz_init(&value)
    }

    /// From big-endian bytes, read in place (a secret scalar is copied nowhere else).
    public convenience init(bytes: UnsafeRawBufferPointer) {
        self.init()
        // count, most significant word first (1), one-byte words, big-endian (1), no nails
        if let base = bytes.baseAddress { __gmpz_import(&value, bytes.count, 1, 1, 1, 0, base) }
    }

    /// From big-endian bytes (public values: a point's coordinates, a signature's halves).
    public convenience init(bytes: some Collection<UInt8>) {
        self.init(bytes: UnsafeRawBufferPointer(start: nil, count: 0))
        Array(bytes).withUnsafeBytes { buffer in
            if let base = buffer.baseAddress { __gmpz_import(&value, buffer.count, 1, 1, 1, 0, base) }
        }
    }

    deinit {
        if let limbs = value._mp_d, value._mp_alloc > 0 {
            explicit_bzero(limbs, Int(value._mp_alloc) * MemoryLayout<mp_limb_t>.size)
        }
        __gmpz_clear(&value)
    }

    /// Its big-endian bytes, without leading zeros (empty for zero).
    public var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: (Int(__gmpz_sizeinbase(&value, 2)) + 7) / 8)
        var written = 0
        out.withUnsafeMutableBytes { buffer in _ = __gmpz_export(buffer.baseAddress, &written, 1, 1, 1, 0, &value) }
        return Array(out.prefix(written))
    }

    /// Its big-endian bytes left-padded with zeros to `width`, written straight into secret
    /// memory (for a secret value: no array copy of it is left behind); nil when it needs more.
    public func secretBytes(width: Int) -> SecretBytes? {
        let size = (Int(__gmpz_sizeinbase(&value, 2)) + 7) / 8
        guard size <= width else { return nil }
        return SecretBytes.make(count: width) { out in
            out.initializeMemory(as: UInt8.self, repeating: 0)
            var written = 0
            if let base = out.baseAddress { _ = __gmpz_export(base + (width - size), &written, 1, 1, 1, 0, &value) }
        }
    }

    /// Its big-endian bytes left-padded with zeros to `width`; nil when it needs more.
    public func bytes(width: Int) -> [UInt8]? {
        let raw = bytes
        guard raw.count <= width else { return nil }
        return [UInt8](repeating: 0, count: width - raw.count) + raw
    }
}

/// Fills `count` bytes from the system's random source (`SystemRandomNumberGenerator`:
/// getrandom on Linux).
func randomBytes(into base: UnsafeMutableRawPointer, count: Int) {
    var generator = SystemRandomNumberGenerator()
    for offset in 0..<count { base.storeBytes(of: UInt8.random(in: .min ... .max, using: &generator), toByteOffset: offset, as: UInt8.self) }
}

/// Nettle's random callback, over ``randomBytes(into:count:)``.
let nettleRandom: @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<UInt8>?) -> Void = { _, count, destination in
    if let destination { randomBytes(into: destination, count: count) }
}
