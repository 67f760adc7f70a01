import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import TouchgateVault
import TouchgateBasics

@Suite("Secret bytes")
struct SecureBytesTests {
    /// What a forked child does to the memory: each must fault, never go through.
    enum Misuse: CaseIterable, Sendable {
        /// Writing into filled (sealed) secret bytes.
        case writeSealed
        /// Reading the byte before the first (the leading guard page).
        case readBefore
        /// Reading just past the data pages (the trailing guard page).
        case readPastPages
    }

    @Test("filled secret bytes are read-only and guarded on both sides: a stray write or read faults", arguments: Misuse.allCases)
    func guardedAndSealed(misuse: Misuse) throws {
        let bytes = secret("hunter2")
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let base = bytes.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress!) }
        let target: UnsafeMutableRawPointer = switch misuse {
        case .writeSealed: base
        case .readBefore: base - 1
        case .readPastPages: base + page
        }
        let pid = fork()
        if pid == 0 {
            // The child: one access, then it would exit 0 if the access went through.
            if misuse == .writeSealed {
                target.storeBytes(of: 0x41, as: UInt8.self)
            } else {
                _ = target.load(as: UInt8.self)
            }
            _exit(0)
        }
        try #require(pid > 0)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        // Killed by SIGSEGV, or, once a test here installed the fatal-signal handler
        // (ProcessHardening), ended by it with 128 + SIGSEGV.
        let faulted = status & 0x7f == SIGSEGV || (status & 0x7f == 0 && (status >> 8) & 0xff == 128 + SIGSEGV)
        #expect(faulted, "\(misuse): the child ended with status \(status), not by SIGSEGV")
        #expect(string(bytes) == "hunter2")
        withExtendedLifetime(bytes) {}
    }

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
