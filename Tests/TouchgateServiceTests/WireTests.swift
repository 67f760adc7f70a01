import Foundation
import Testing
@testable import TouchgateAPI

@Suite struct WireCodingTests {
    /// Dates written and read without Foundation's calendar, against Foundation's ISO 8601
    /// style: a spread over years 1 to 9999 (whole and fractional seconds, before 1970 and before 1582), the
    /// edges of months and leap days, and what falls outside (other years, other forms).
    @Test("dates are written and read as Foundation's ISO 8601 style writes and reads them")
    func datesMatchFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        var dates: [Date] = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -1), Date(timeIntervalSince1970: -0.5),
                             Date(timeIntervalSince1970: 951_782_400), Date(timeIntervalSince1970: 4_107_542_399.999),
                             Date(timeIntervalSince1970: -62_135_596_800), Date(timeIntervalSince1970: 253_402_300_799.9),
                             Date(timeIntervalSince1970: -62_135_596_801), Date(timeIntervalSince1970: 253_402_300_800)]
        for _ in 0..<20_000 {
            let seconds = Double.random(in: -62_135_596_800..<253_402_300_800, using: &generator)
            dates.append(Date(timeIntervalSince1970: Bool.random(using: &generator) ? seconds.rounded(.down) : seconds))
        }
        for date in dates {
            let written = WireCoding.iso8601(date)
            #expect(written == date.formatted(.iso8601), "\(date.timeIntervalSince1970)")
            let foundation = try Date.ISO8601FormatStyle().parse(written)
            // Before 1600 (Foundation's calendar is Julian before 1582) the format style reads it.
            let read = WireCoding.wholeSecondsUTC(written)
            #expect(read == (written < "1600" ? nil : foundation), "\(written)")
        }
        for text in ["2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-31T00:00:00Z", "2026-11-29T24:00:00Z",
                     "2026-11-29T10:10:25+01:00", "2026-11-29T10:10:25.5Z", "２026-11-29T10:10:25Z", "2026-11-29 10:10:25Z"] {
            #expect(WireCoding.wholeSecondsUTC(text) == nil, "\(text) is left to the format style")
        }
        #expect(WireCoding.wholeSecondsUTC("2024-02-29T23:59:59Z") == (try Date.ISO8601FormatStyle().parse("2024-02-29T23:59:59Z")))
        // Through the coders: another form still reads, garbage is an error.
        struct Stamp: Codable, Equatable { var at: Date }
        let decoder = WireCoding.decoder()
        let offset = try decoder.decode(Stamp.self, from: Data(#"{"at":"2026-11-29T11:10:25+01:00"}"#.utf8))
        #expect(offset.at == (try Date.ISO8601FormatStyle().parse("2026-11-29T10:10:25Z")))
        #expect(throws: DecodingError.self) { try decoder.decode(Stamp.self, from: Data(#"{"at":"yesterday"}"#.utf8)) }
        let stamp = Stamp(at: Date(timeIntervalSince1970: 1_795_947_025.75))
        #expect(WireCoding.line(stamp) == #"{"at":"2026-11-29T10:10:25Z"}"#)
    }

    @Test func keysAreKebabCaseAndRoundTrip() throws {
        var event = InteractionEvent(.fingerNeeded, "Place your finger on the reader")
        event.deviceID = "virtual_image/0"
        event.scanType = "press"
        let line = WireCoding.line(event)
        #expect(line.contains("\"event\":\"finger-needed\""))
        #expect(line.contains("\"device-id\":\"virtual_image/0\""), "slashes are not escaped")
        #expect(line.contains("\"scan-type\":\"press\""))
        #expect(!line.contains("\n"))
        let back = try WireCoding.decoder().decode(InteractionEvent.self, from: Data(line.utf8))
        #expect(back == event)
    }

    @Test func keyNamesConvertBothWays() {
        let pairs = [("deviceID", "device-id"), ("remainingSeconds", "remaining-seconds"), ("id", "id"),
                     ("prevMAC", "prev-mac"), ("sha256Digest", "sha256-digest"), ("idleTimeout", "idle-timeout"),
                     ("vaultUserID", "vault-user-id"), ("a", "a"), ("", "")]
        for (swift, wire) in pairs {
            #expect(WireCoding.kebab(swift) == wire)
        }
        for (swift, wire) in pairs where swift != "prevMAC" {
            #expect(WireCoding.camel(wire) == swift, "\(wire)")
        }
        // Keys from a peer that are not ours convert without trapping, into names nothing has.
        #expect(WireCoding.camel("identity-x") == "identityX")
        #expect(WireCoding.camel("a--b") == "aB")
        #expect(WireCoding.camel("x-id-id") == "xIDID")
        #expect(WireCoding.camel("é-ß") == "é-ß".replacingOccurrences(of: "-", with: ""))
        #expect(WireCoding.kebab("naïveName") == "naïve-name")
    }

    @Test("a result line spliced from an encoded report is the line encoding the whole message gives")
    func splicedResultLineIsTheEncodedOne() {
        var status = StatusReport(enrolled: [], readers: [])
        status.mode = "system"
        status.items = 3
        status.session = StatusReport.Session(active: true, remainingSeconds: 59, touchReusable: true)
        for (id, secretLength) in [(UInt64(1), nil), (42, 17), (UInt64.max, 0)] as [(UInt64, Int?)] {
            let whole = DaemonProtocol.encode(ResultMessage(id: id, result: status, secretLength: secretLength))
            let spliced = DaemonProtocol.resultLine(id: id, report: Array(WireCoding.line(status).utf8),
                                                    secretLength: secretLength)
            #expect(spliced == whole, "\(String(decoding: spliced, as: UTF8.self))")
        }
        let empty = DaemonProtocol.encode(ResultMessage(id: 7, result: EmptyReport()))
        #expect(DaemonProtocol.resultLine(id: 7, report: Array(WireCoding.line(EmptyReport()).utf8)) == empty)
    }

    @Test func outcomeMergesResultWithTheReport() throws {
        let report = MatchReport(match: false, user: "alice", finger: nil, attemptsLeft: 2)
        let object = try #require(try JSONSerialization.jsonObject(
            with: Data(WireCoding.line(Outcome("no-match", report)).utf8)) as? [String: Any])
        #expect(object["result"] as? String == "no-match")
        #expect(object["match"] as? Bool == false)
        #expect(object["attempts-left"] as? Int == 2)
        #expect(object["finger"] == nil, "absent values are left out")
    }

    @Test func anAuditRecordsChainFieldsAreKebabCaseAndRoundTrip() throws {
        var record = AuditRecordReport(seq: 7, time: Date(timeIntervalSince1970: 1_700_000_000), bootTime: 12.5,
                                       uid: 1000, login: "ana", vaultUser: nil, event: "session.end", item: nil,
                                       outcome: "success", reason: "idle for 120 s")
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(WireCoding.line(record).utf8)) as? [String: Any])
        #expect(Set(shown.keys) == ["seq", "time", "boot-time", "uid", "login", "event", "outcome", "reason"])
        record.unixTime = 1_700_000_000.25
        record.bootID = "b00t"
        record.prevMAC = String(repeating: "0", count: 64)
        record.mac = String(repeating: "a", count: 64)
        let line = WireCoding.line(record)
        let exported = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(Set(exported.keys) == Set(shown.keys).union(["unix-time", "boot-id", "prev-mac", "mac"]))
        #expect(try WireCoding.decoder().decode(AuditRecordReport.self, from: Data(line.utf8)) == record)
    }

    @Test func anAuditFilterRoundTripsAndAbsentKeysMeanNoCondition() throws {
        let filter = AuditFilter(since: Date(timeIntervalSince1970: 1_700_000_000), item: "token",
                                 events: ["item.read", "session.end"], outcomes: ["denied"], limit: 5, order: .newestFirst)
        let line = WireCoding.line(filter)
        #expect(line.contains("\"order\":\"newest-first\""))
        #expect(try WireCoding.decoder().decode(AuditFilter.self, from: Data(line.utf8)) == filter)
        #expect(try WireCoding.decoder().decode(AuditFilter.self, from: Data("{}".utf8)) == AuditFilter())
    }

    @Test func everyErrorCodeHasADocumentedExitStatus() {
        let documented: Set<Int32> = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 64, 69, 75, 127, 130]
        for code in ErrorCode.allCases {
            #expect(documented.contains(code.exitStatus), "\(code)")
        }
        #expect(ErrorCode.stateTampered.exitStatus == 6)
        #expect(ErrorCode.lockedOut.exitStatus == 7)
        #expect(ErrorCode.diskFull.exitStatus == 13)
    }
}

@Suite struct StoredTextTests {
    @Test func namesWithControlCharactersAreRefused() {
        #expect(StoredText.problem(withName: "github-token", what: "secret") == nil)
        #expect(StoredText.problem(withName: "Ünïcode name with spaces", what: "secret") == nil)
        for hostile in ["evil\u{1B}[2J", "two\nlines", "tab\there", "bell\u{07}", "c1\u{9B}31m", "bidi\u{202E}txt", ""] {
            #expect(StoredText.problem(withName: hostile, what: "secret") != nil, "\(hostile.debugDescription)")
        }
        #expect(StoredText.problem(withName: String(repeating: "a", count: 257), what: "secret") != nil)
    }

    @Test func namesThatWouldPrintLikeAnotherAreRefusedSayingWhatToDo() {
        for fine in ["café", "cafe\u{301}", "my token", "日本語の鍵", "a-b_c.d@e", "x"] {
            #expect(StoredText.problem(withName: fine, what: "secret") == nil, "\(fine.debugDescription)")
        }
        let refused: [(String, String)] = [
            (" ", "only white space"), ("   ", "only white space"), ("\u{3000}", "only white space"),
            (" token", "starts with white space (U+0020"), ("token ", "ends with white space (U+0020"),
            ("token\u{A0}", "ends with white space (U+00A0 NO-BREAK SPACE)"),
            ("to\u{200B}ken", "invisible character (U+200B ZERO WIDTH SPACE)"),
            ("\u{200B}", "invisible character (U+200B"), ("a\u{200D}b", "U+200D ZERO WIDTH JOINER"),
            ("a\u{200E}b", "U+200E LEFT-TO-RIGHT MARK"), ("a\u{2060}b", "U+2060 WORD JOINER"),
            ("a\u{2064}b", "U+2064 INVISIBLE PLUS"), ("\u{FEFF}token", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
            ("to\u{AD}ken", "U+00AD SOFT HYPHEN"), ("heart\u{FE0F}", "U+FE0F VARIATION SELECTOR-16"),
            ("a\u{E0100}b", "U+E0100 VARIATION SELECTOR-17"), ("a\u{115F}b", "U+115F HANGUL CHOSEONG FILLER"),
            ("a\u{180E}b", "U+180E MONGOLIAN VOWEL SEPARATOR"), ("a\u{E0001}b", "U+E0001 LANGUAGE TAG"),
            ("my\u{A0}token", "special space (U+00A0 NO-BREAK SPACE)"), ("my\u{2009}token", "U+2009 THIN SPACE"),
        ]
        for (name, reason) in refused {
            let problem = StoredText.problem(withName: name, what: "secret") ?? ""
            #expect(problem.contains(reason), "\(name.debugDescription): \(problem)")
            // Every message says what to do instead.
            #expect(["remove it", "use a plain space", "give it a name that shows"].contains { problem.contains($0) },
                    "\(name.debugDescription): \(problem)")
        }
    }

    @Test func escapingLeavesNoControlCharacter() {
        let shown = StoredText.escaped("a\u{1B}]0;pwned\u{07}b\nc")
        #expect(shown == "a\\u{001B}]0;pwned\\u{0007}b\\u{000A}c")
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 })
        #expect(StoredText.escaped("plain") == "plain")
    }
}
