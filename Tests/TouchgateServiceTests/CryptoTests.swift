import Testing
import TouchgateAPI
import TouchgateCrypto
import TouchgatePolicy

/// The primitives over Nettle against published vectors, and P-256 against OpenSSL.
@Suite("Nettle's primitives")
struct CryptoTests {
    private static func bytes(_ text: String) -> [UInt8] { Hex.decode(text)! }
    private static func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { Hex.encode($0) } }

    @Test("HKDF-SHA256 gives RFC 5869's test cases 1 and 3 (the Secret Service's: no salt, no info)")
    func hkdf() {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let one = ikm.withUnsafeBytes {
            HKDFSHA256.derive(secret: $0, salt: Self.bytes("000102030405060708090a0b0c"), info: Self.bytes("f0f1f2f3f4f5f6f7f8f9"), count: 42)
        }
        #expect(Self.text(one) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let three = ikm.withUnsafeBytes { HKDFSHA256.derive(secret: $0, count: 42) }
        #expect(Self.text(three) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test("AES-128-CBC gives NIST SP 800-38A's F.2.1 blocks, pads with PKCS#7, and refuses bad padding or length")
    func aesCBC() {
        let key = SecretBytes(copying: Self.bytes("2b7e151628aed2a6abf7158809cf4f3c"))
        let iv = Self.bytes("000102030405060708090a0b0c0d0e0f")
        let plain = Self.bytes("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                               + "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
        let sealed = plain.withUnsafeBytes { AES128CBC.encrypt($0, key: key, iv: iv) }
        #expect(sealed.count == 80)   // a whole block of padding after 64 bytes
        #expect(Hex.encode(sealed.prefix(64)) == "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
                + "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7")
        #expect(AES128CBC.decrypt(sealed, key: key, iv: iv).map(Self.text) == Hex.encode(plain))
        for length in [0, 1, 15, 16, 17, 31] {
            let value = [UInt8](repeating: 0xA5, count: length)
            let round = value.withUnsafeBytes { AES128CBC.encrypt($0, key: key, iv: iv) }
            #expect(round.count == (length / 16 + 1) * 16)
            #expect(AES128CBC.decrypt(round, key: key, iv: iv).map(Self.text) == Hex.encode(value))
        }
        // The last 64 bytes' chain with its last block altered: the padding no longer reads.
        var broken = sealed
        broken[79] ^= 0xFF
        #expect(AES128CBC.decrypt(broken, key: key, iv: iv) == nil)
        #expect(AES128CBC.decrypt(Array(sealed.prefix(70)), key: key, iv: iv) == nil)
        #expect(AES128CBC.decrypt([], key: key, iv: iv) == nil)
    }

    @Test("P-256: our signatures verify under OpenSSL, OpenSSL's under ours, and nothing else does")
    func p256() async throws {
        let scalar = P256.generate()
        let point = try #require(P256.publicKey(scalar: scalar))
        #expect(point.count == 65 && point[0] == 4)
        let message = Array("a message to sign".utf8)
        let ours = try #require(P256.sign(message, scalar: scalar))
        #expect(try await ReferenceP256.verify(ours, of: message, point: point))
        #expect(P256.verify(ours, of: message, publicKey: point))

        let theirs = try await ReferenceP256.generate()
        #expect(P256.publicKey(scalar: SecretBytes(copying: theirs.scalar)) == theirs.point)
        let signed = try await ReferenceP256.sign(message, scalar: theirs.scalar)
        #expect(P256.verify(signed, of: message, publicKey: theirs.point))
        #expect(!P256.verify(signed, of: message + [0], publicKey: theirs.point))
        #expect(!P256.verify(signed, of: message, publicKey: point))
        var flipped = signed
        flipped[5] ^= 1
        #expect(!P256.verify(flipped, of: message, publicKey: theirs.point))
        // r = 0, s = 0, a point off the curve, the wrong sizes.
        #expect(!P256.verify([UInt8](repeating: 0, count: 64), of: message, publicKey: theirs.point))
        var offCurve = theirs.point
        offCurve[64] ^= 1
        #expect(!P256.verify(signed, of: message, publicKey: offCurve))
        #expect(!P256.verify(Array(signed.prefix(63)), of: message, publicKey: theirs.point))
        // Scalars outside 1 … n−1, or not 32 bytes, are no key.
        #expect(P256.publicKey(scalar: SecretBytes(copying: [UInt8](repeating: 0, count: 32))) == nil)
        #expect(P256.publicKey(scalar: SecretBytes(copying: [UInt8](repeating: 0xFF, count: 32))) == nil)
        #expect(P256.sign(message, scalar: SecretBytes(copying: [UInt8](repeating: 1, count: 31))) == nil)
    }

    @Test("SHA-256 of the empty string and of 'abc' are FIPS 180-2's")
    func sha256() {
        #expect(Hex.encode(SHA256.digest([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hex.encode(SHA256.digest(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
