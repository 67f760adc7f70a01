import Foundation
import Testing
@testable import TouchgateCommands
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The desktop notice's texts reach `gdbus call` as GVariant literals: a prompt that holds
/// quotes, backslashes or terminal escapes (ssh shows a key's comment, which anyone who made
/// the key chose) is shown as text and cannot end the literal early.
@Suite struct DesktopNoticeTests {
    @Test func literalsEscapeQuotesAndBackslashesAndDropControls() {
        #expect(DesktopNotice.literal("plain") == "'plain'")
        #expect(DesktopNotice.literal("it's") == #"'it\'s'"#)
        #expect(DesktopNotice.literal(#"a\b"#) == #"'a\\b'"#)
        #expect(DesktopNotice.literal("one\ntwo") == #"'one\ntwo'"#)
        #expect(DesktopNotice.literal("red\u{1B}[31m\u{9B}x\u{7F}") == "'red[31mx'")
    }

    @Test func markupAndFormatCharactersAreShownAsText() {
        #expect(DesktopNotice.plain("<a href='x'>click</a> & <b>") == "&lt;a href='x'&gt;click&lt;/a&gt; &amp; &lt;b&gt;")
        #expect(DesktopNotice.plain("key\u{202E}txt.exe\u{2028}next") == "keytxt.exe next")
    }

    @Test("a hostile prompt reaches a real notification server as the text it was, and the notice is withdrawn")
    func hostilePromptRoundTrip() async throws {
        let server = try await NotificationRig()
        defer { server.stop() }
        let hostile = #"key 'x', [] {} <byte 2> \' \\ "quoted" end"#
        let notice = try #require(await DesktopNotice.show(summary: "Touch", body: hostile, bus: server.busAddress),
                                  "no notice: \(server.calls("Notify"))")
        await notice.withdraw()
        let shown = server.calls("Notify")
        #expect(shown.count == 1 && shown[0].contains("key 'x', [] {} &lt;byte 2&gt;"), "\(shown)")
        #expect(server.calls("CloseNotification").count == 1)
    }

    @Test func noSessionBusNoNotice() async throws {
        #expect(await DesktopNotice.show(summary: "Touch", body: "x", bus: nil) == nil)
        let nobody = try TemporaryDirectory("touchgate-no-bus")
        defer { nobody.remove() }
        let started = Date()
        #expect(await DesktopNotice.show(summary: "Touch", body: "x", bus: "unix:path=\(nobody.path("none"))") == nil)
        #expect(Date().timeIntervalSince(started) < 5, "a missing bus costs no wait")
    }

    @Test("a session bus that never answers holds neither the touch nor the end of the command")
    func aHungBusHoldsNothing() async throws {
        let directory = try TemporaryDirectory("touchgate-hung-bus")
        defer { directory.remove() }
        let path = directory.path("bus")
        // Listens and never accepts: a connect succeeds and then nothing is ever said.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && listen(listener, 8) == 0)
        let started = ContinuousClock.now
        let ran = try await DesktopNotice.during(summary: "Touch", body: "x", grace: .milliseconds(500),
                                                 bus: "unix:path=\(path)") { ContinuousClock.now - started }
        #expect(ran < .milliseconds(300), "the body waited for the notice: \(ran)")
        #expect(ContinuousClock.now - started < .seconds(3), "the end waited for the bus")
    }
}
