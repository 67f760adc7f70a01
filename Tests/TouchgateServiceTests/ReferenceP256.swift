import Foundation
import Subprocess
import Testing

/// P-256 ECDSA by an implementation independent of ours: OpenSSL's, through Python's
/// `cryptography` (Debian's python3-cryptography, installed by scripts/setup.sh). Keys made
/// here are test keys; the scalar goes on the helper's standard input all the same.
enum ReferenceP256 {
    private static let script = """
    import sys
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
    mode = sys.argv[1]
    if mode == "new":
        key = ec.generate_private_key(ec.SECP256R1())
        print(key.private_numbers().private_value.to_bytes(32, "big").hex())
        print(key.public_key().public_bytes(serialization.Encoding.X962,
                                            serialization.PublicFormat.UncompressedPoint).hex())
    elif mode == "sign":
        key = ec.derive_private_key(int(sys.stdin.readline().strip(), 16), ec.SECP256R1())
        r, s = decode_dss_signature(key.sign(bytes.fromhex(sys.argv[2]), ec.ECDSA(hashes.SHA256())))
        print((r.to_bytes(32, "big") + s.to_bytes(32, "big")).hex())
    elif mode == "verify":
        point, message, signature = (bytes.fromhex(a) for a in sys.argv[2:5])
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            key.verify(der, message, ec.ECDSA(hashes.SHA256()))
            print("valid")
        except Exception:
            print("invalid")
    """

    /// A new key: its 32-byte scalar and 65-byte uncompressed point.
    static func generate() async throws -> (scalar: [UInt8], point: [UInt8]) {
        let lines = try await run(["new"])
        try #require(lines.count == 2)
        return (try hex(lines[0]), try hex(lines[1]))
    }

    /// `r ‖ s` of a signature over SHA-256 of `message` by `scalar`.
    static func sign(_ message: [UInt8], scalar: [UInt8]) async throws -> [UInt8] {
        try hex(try await run(["sign", hexText(message)], input: hexText(scalar) + "\n").first ?? "")
    }

    /// Whether `signature` (`r ‖ s`) over `message` is `point`'s.
    static func verify(_ signature: [UInt8], of message: [UInt8], point: [UInt8]) async throws -> Bool {
        let answer = try await run(["verify", hexText(point), hexText(message), hexText(signature)])
        try #require(answer == ["valid"] || answer == ["invalid"], "\(answer)")
        return answer == ["valid"]
    }

    private static func run(_ arguments: [String], input: String = "") async throws -> [String] {
        let result = try await Subprocess.run(.name("python3"), arguments: Arguments(["-c", script] + arguments),
                                              input: .string(input), output: .string(limit: 1 << 20),
                                              error: .string(limit: 1 << 20))
        try #require(result.terminationStatus.isSuccess,
                     "python3 with cryptography failed (apt-get install python3-cryptography): \(result.standardError)")
        return result.standardOutput.split(separator: "\n").map(String.init)
    }

    private static func hexText(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private static func hex(_ text: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(try #require(UInt8(text[index..<next], radix: 16)))
            index = next
        }
        return bytes
    }
}
