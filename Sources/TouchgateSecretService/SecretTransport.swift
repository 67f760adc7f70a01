import CNettle
import TouchgateBasics
import TouchgateCrypto
#if canImport(Glibc)
import Glibc
#endif

/// How secrets travel between this door and one client over the bus: the Secret
/// Service's session algorithms.
///
/// - `plain`: the value as is (the bus is the user's own, but any program that can read
///   the bus's memory or a `dbus-monitor` run as the user sees it).
/// - `dh-ietf1024-sha256-aes128-cbc-pkcs7`: a Diffie-Hellman exchange in the 1024-bit MODP
///   group of RFC 2409 (generator 2), the shared value left-padded to 128 bytes, HKDF-SHA256
///   with no salt and no info to a 16-byte AES key, then AES-128-CBC with PKCS#7 padding and
///   a fresh IV per secret. What the specification fixes; libsecret offers it first.
///
/// The exponentiation is GMP's (`mpz_powm_sec`, constant time in the exponent: BigInt's
/// pure Swift took 30 ms of each lookup, measured in bench/secret-service.sh); HKDF and
/// AES-CBC are Nettle's (``HKDFSHA256``, ``AES128CBC``).
enum SecretTransport: Sendable {
    case plain
    /// The AES-128 key, in guarded memory.
    case aes(SecretBytes)

    static let plainName = "plain"
    static let dhName = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// The 1024-bit MODP group's prime (RFC 2409, section 6.2), big-endian.
    static let prime: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC9, 0x0F, 0xDA, 0xA2, 0x21, 0x68, 0xC2, 0x34,
        0xC4, 0xC6, 0x62, 0x8B, 0x80, 0xDC, 0x1C, 0xD1, 0x29, 0x02, 0x4E, 0x08, 0x8A, 0x67, 0xCC, 0x74,
        0x02, 0x0B, 0xBE, 0xA6, 0x3B, 0x13, 0x9B, 0x22, 0x51, 0x4A, 0x08, 0x79, 0x8E, 0x34, 0x04, 0xDD,
        0xEF, 0x95, 0x19, 0xB3, 0xCD, 0x3A, 0x43, 0x1B, 0x30, 0x2B, 0x0A, 0x6D, 0xF2, 0x5F, 0x14, 0x37,
        0x4F, 0xE1, 0x35, 0x6D, 0x6D, 0x51, 0xC2, 0x45, 0xE4, 0x85, 0xB5, 0x76, 0x62, 0x5E, 0x7E, 0xC6,
        0xF4, 0x4C, 0x42, 0xE9, 0xA6, 0x37, 0xED, 0x6B, 0x0B, 0xFF, 0x5C, 0xB6, 0xF4, 0x06, 0xB7, 0xED,
        0xEE, 0x38, 0x6B, 0xFB, 0x5A, 0x89, 0x9F, 0xA5, 0xAE, 0x9F, 0x24, 0x11, 0x7C, 0x4B, 0x1F, 0xE6,
        0x49, 0x28, 0x66, 0x51, 0xEC, 0xE6, 0x53, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]
    static let primeBytes = 128
    /// The private exponent's size.
    static let exponentBytes = 32

    /// Opens a session with `algorithm` for the client's `input`; what to answer, and the session.
    /// - Throws: ``SecretServiceError`` `NotSupported` for another algorithm, `InvalidArgs`
    ///   for an input of the wrong type or a public key outside the group.
    static func negotiate(_ algorithm: String, input: BusValue) throws(SecretServiceError) -> (BusValue, SecretTransport) {
        switch algorithm {
        case plainName:
            return (.variant(.string("")), .plain)
        case dhName:
            guard case .variant(.bytes(let theirs)) = input, theirs.count <= primeBytes else {
                throw .invalidArguments("\(dhName) needs the client's public key as bytes (ay) of at most 128")
            }
            let prime = GMPInteger(bytes: Self.prime), their = GMPInteger(bytes: theirs)
            let primeLessOne = GMPInteger()
            __gmpz_sub_ui(&primeLessOne.value, &prime.value, 1)
            // 1 < y < p - 1: anything else gives a shared value an eavesdropper knows.
            guard __gmpz_cmp_ui(&their.value, 1) > 0, __gmpz_cmp(&their.value, &primeLessOne.value) < 0 else {
                throw .invalidArguments("the client's public key is not in the group")
            }
            // A 256-bit exponent: more than twice the group's strength (about 80 bits for 1024-bit MODP),
            // as NIST SP 800-56A asks; a full-size one costs four times as much for nothing.
            var privateBytes = [UInt8](repeating: 0, count: Self.exponentBytes)
            var generator = SystemRandomNumberGenerator()
            for index in privateBytes.indices { privateBytes[index] = generator.next() }
            privateBytes[0] |= 1   // never zero
            let mine = privateBytes.withUnsafeBytes { GMPInteger(bytes: $0) }
            privateBytes.withUnsafeMutableBytes { wipe($0) }
            let two = GMPInteger(), ours = GMPInteger(), common = GMPInteger()
            __gmpz_set_ui(&two.value, 2)
            __gmpz_powm_sec(&ours.value, &two.value, &mine.value, &prime.value)
            __gmpz_powm_sec(&common.value, &their.value, &mine.value, &prime.value)
            var shared = common.bytes
            shared = [UInt8](repeating: 0, count: primeBytes - shared.count) + shared
            defer { shared.withUnsafeMutableBytes { wipe($0) } }
            let key = shared.withUnsafeBytes { HKDFSHA256.derive(secret: $0, count: AES128CBC.keyBytes) }
            return (.variant(.bytes(ours.bytes)), .aes(key.withUnsafeBytes { SecretBytes(copying: $0) }))
        default:
            throw .notSupported("the session algorithm '\(algorithm)' is not supported; use \(plainName) or \(dhName)")
        }
    }

    /// The value a client sent (`parameters`, `value` of its secret struct).
    /// - Throws: ``SecretServiceError`` `InvalidArgs` when it does not decrypt.
    func open(parameters: [UInt8], value: [UInt8]) throws(SecretServiceError) -> SecretBytes {
        switch self {
        case .plain:
            return SecretBytes(copying: value)
        case .aes(let key):
            guard parameters.count == AES128CBC.blockBytes,
                  let plain = AES128CBC.decrypt(value, key: key, iv: parameters) else {
                throw .invalidArguments("the secret does not decrypt with this session's key")
            }
            return plain
        }
    }

    /// `secret` as a secret struct's `parameters` and `value`.
    func seal(_ secret: SecretBytes) throws(SecretServiceError) -> (parameters: [UInt8], value: [UInt8]) {
        switch self {
        case .plain:
            return ([], secret.withUnsafeBytes { [UInt8]($0) })
        case .aes(let key):
            var generator = SystemRandomNumberGenerator()
            let iv = (0..<AES128CBC.blockBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            return (iv, secret.withUnsafeBytes { AES128CBC.encrypt($0, key: key, iv: iv) })
        }
    }
}

/// Overwrites `buffer` with zeros (explicit_bzero: the optimiser keeps it).
func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress else { return }
    explicit_bzero(base, buffer.count)
}
