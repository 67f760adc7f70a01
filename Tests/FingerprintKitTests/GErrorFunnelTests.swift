import CFPrint
@testable import FingerprintKit
import Testing

/// The one place a `GError` becomes a Swift error, given errors it must survive.
@Suite struct GErrorFunnelTests {
    /// A `GError` that its driver already freed (libfprint 1.94.5's fpcmoc does so when an
    /// enrollment and its cleanup both fail) holds whatever reused the memory: a domain
    /// that is no quark and a stray message pointer. It becomes the same general device
    /// error every time, its message is not read and it is not freed a second time.
    @Test func aGErrorWithAnUnregisteredDomainIsNeitherReadNorFreed() throws {
        let fake = UnsafeMutablePointer<GError>.allocate(capacity: 1)
        defer { fake.deallocate() }
        // As seen: the low half of a heap pointer as domain, its high half as code.
        fake.initialize(to: GError(domain: 0x2402_f850, code: 32_618,
                                   message: UnsafeMutablePointer(bitPattern: 0x10)))
        let first = GErrorFunnel.consume(fake) as? FingerprintError
        let second = GErrorFunnel.consume(fake) as? FingerprintError
        #expect(first == GErrorFunnel.lostReport)
        #expect(first == second, "the same message each time, whatever the garbage")
        let text = try #require(first?.description)
        #expect(!text.contains("unknown") && !text.contains("32618"), "\(text)")
        #expect(text.contains("replug"), "says what to do: \(text)")
    }

    /// A readable GError keeps its domain, code and message.
    @Test func aRealGErrorIsCopiedOut() {
        let error = g_error_new_literal(fp_device_error_quark(), Int32(FP_DEVICE_ERROR_PROTO.rawValue), "bad reply")!
        let converted = GErrorFunnel.consume(error) as? FingerprintError
        #expect(converted == .device(.proto, detail: "bad reply"))
    }

    /// GUsb's errors (a reader that stopped answering) say what to do.
    @Test func aUSBTimeoutSaysToReplugTheReader() {
        let error = FingerprintError.other(domain: "g-usb-device-error-quark", code: 2, detail: "transfer timed out")
        #expect(error.description.contains("transfer timed out"))
        #expect(error.description.contains("plug it back in"))
    }
}
