import Testing
import TouchgateBasics
import TouchgateCrypto

/// PIN/UV auth protocol 2's authenticator side, checked against itself as a platform would
/// use it: both ends of an ECDH agree, and what one encrypts and authenticates the other reads.
@Suite struct PinUvProtocolTwoTests {
    @Test func bothEndsAgreeOnTheSharedSecret() throws {
        let authenticator = PinUvProtocolTwo(), platform = PinUvProtocolTwo()
        #expect(authenticator.publicPoint.count == 65)
        let a = try #require(authenticator.sharedSecret(x: Array(platform.publicPoint[1...32]), y: Array(platform.publicPoint[33...64])))
        let b = try #require(platform.sharedSecret(x: Array(authenticator.publicPoint[1...32]), y: Array(authenticator.publicPoint[33...64])))
        #expect(a.count == 64)
        #expect(a.withUnsafeBytes { Array($0) } == b.withUnsafeBytes { Array($0) })
    }

    @Test func aPointOffTheCurveIsRefused() {
        let authenticator = PinUvProtocolTwo()
        #expect(authenticator.sharedSecret(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32)) == nil)
        #expect(authenticator.sharedSecret(x: [1], y: [2]) == nil)
    }

    @Test func encryptedTokenDecryptsAndAuthenticates() throws {
        let authenticator = PinUvProtocolTwo(), platform = PinUvProtocolTwo()
        let shared = try #require(authenticator.sharedSecret(x: Array(platform.publicPoint[1...32]), y: Array(platform.publicPoint[33...64])))
        let token = SecretBytes(copying: [UInt8](0..<32))
        let iv = [UInt8](repeating: 7, count: 16)
        let sealed = try #require(PinUvProtocolTwo.encrypt(token, sharedSecret: shared, iv: iv))
        #expect(sealed.count == 48 && Array(sealed.prefix(16)) == iv)
        let opened = try #require(PinUvProtocolTwo.decrypt(sealed, sharedSecret: shared))
        #expect(opened.withUnsafeBytes { Array($0) } == [UInt8](0..<32))
        let mac = token.withUnsafeBytes { PinUvProtocolTwo.authenticate(key: $0, [1, 2, 3]) }
        #expect(token.withUnsafeBytes { PinUvProtocolTwo.verify(key: $0, [1, 2, 3], mac: mac) })
        #expect(!token.withUnsafeBytes { PinUvProtocolTwo.verify(key: $0, [1, 2, 4], mac: mac) })
        #expect(!token.withUnsafeBytes { PinUvProtocolTwo.verify(key: $0, [1, 2, 3], mac: Array(mac.prefix(16))) })
    }

    /// RFC 4231 test case 2: HMAC-SHA256 with key "Jefe".
    @Test func hmacMatchesRFC4231() {
        let key = Array("Jefe".utf8)
        let mac = key.withUnsafeBytes { PinUvProtocolTwo.authenticate(key: $0, Array("what do ya want for nothing?".utf8)) }
        #expect(mac.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
