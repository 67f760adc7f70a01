import CTouchgateSys
import Testing
@testable import TouchgateVault
import TouchgateBasics

@Suite("Secret bytes")
struct SecureBytesTests {
    @Test("contents round-trip and never show in descriptions or mirrors")
    func redacted() {
        let bytes = secret("hunter2")
        #expect(bytes.count == 7)
        #expect(string(bytes) == "hunter2")
        #expect("\(bytes)" == "SecretBytes(7 bytes)")
        #expect(!String(reflecting: bytes).contains("hunter2"))
        var dumped = ""
        dump(bytes, to: &dumped)
        #expect(!dumped.contains("hunter2") && !dumped.contains("104"))  // 104 = "h"
        #expect(Mirror(reflecting: bytes).children.isEmpty)
    }

    @Test("a vault key never shows its bytes")
    func vaultKeyRedacted() throws {
        let fixture = try VaultFixture()
        #expect("\(fixture.key)" == "VaultKey(redacted)")
        #expect(Mirror(reflecting: fixture.key.bytes).children.isEmpty)
    }

    @Test("comparison is by content; random bytes differ")
    func equality() {
        #expect(secret("abc").constantTimeEquals(secret("abc")))
        #expect(!secret("abc").constantTimeEquals(secret("abd")))
        #expect(!secret("abc").constantTimeEquals(secret("abcd")))
        #expect(!SecretBytes.random(count: 32).constantTimeEquals(SecretBytes.random(count: 32)))
        #expect(SecretBytes(copying: []).count == 0)
    }

    @Test("a failing initializer frees the memory and rethrows")
    func failingInitializer() {
        struct Boom: Error {}
        #expect(throws: Boom.self) { try SecretBytes.make(count: 8) { _ in throw Boom() } }
    }

    @Test("ProcessHardening makes the process non-dumpable")
    func hardening() throws {
        try ProcessHardening.harden()
        #expect(CTouchgateSys_is_dumpable() == 0)
    }
}
