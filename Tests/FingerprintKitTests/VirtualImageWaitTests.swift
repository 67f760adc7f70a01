import Testing
import TouchgateTestSupport

/// The watchers (virtual-finger --watch, the package test's finger) present one print per
/// announced wait; a marker caught while it is rewritten must not count as one.
@Suite struct VirtualImageWaitTests {
    @Test func onlyAWholeLineIsAWait() {
        #expect(VirtualImageWait(text: "4242 7\n") == VirtualImageWait(text: "4242 7\n"))
        #expect(VirtualImageWait(text: "4242 7\n")?.process == 4242)
        #expect(VirtualImageWait(text: "4242 7\n")?.count == 7)
        // Truncated and not yet written; written but not finished.
        #expect(VirtualImageWait(text: "") == nil)
        #expect(VirtualImageWait(text: "4242 1") == nil)
        #expect(VirtualImageWait(text: "4242 ") == nil)
        // A shorter line written over a longer one, before the file is cut to its length.
        #expect(VirtualImageWait(text: "99 1\n0\n") == nil)
        #expect(VirtualImageWait(text: "0 1\n") == nil)
        #expect(VirtualImageWait(text: "12 x\n") == nil)
    }
}
