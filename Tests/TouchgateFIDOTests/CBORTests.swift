import Synchronization
import Testing
import TouchgateFIDO

/// CBOR as CTAP 2.1 uses it: canonical writing (python-fido2 compares every answer with its
/// own re-encoding), bounded reading.
@Suite struct CBORTests {
    @Test func mapKeysAreSortedByEncodedLengthThenBytes() {
        let value = CBOR.map([(.text("up"), .bool(true)), (.int(-1), .int(1)), (.text("rk"), .bool(false)), (.int(10), .null),
                              (.int(1), .int(2))])
        // 01, 0A, 20 (−1) each one byte; then "rk" before "up" (three bytes each).
        #expect(value.encoded == [0xA5, 0x01, 0x02, 0x0A, 0xF6, 0x20, 0x01, 0x62, 0x72, 0x6B, 0xF4, 0x62, 0x75, 0x70, 0xF5])
    }

    @Test func integersTakeTheShortestHead() {
        #expect(CBOR.int(23).encoded == [0x17])
        #expect(CBOR.int(24).encoded == [0x18, 24])
        #expect(CBOR.int(256).encoded == [0x19, 0x01, 0x00])
        #expect(CBOR.int(65_536).encoded == [0x1A, 0x00, 0x01, 0x00, 0x00])
        #expect(CBOR.int(-7).encoded == [0x26])
        #expect(CBOR.int(-25).encoded == [0x38, 0x18])
        #expect(CBOR.unsigned(UInt64.max).encoded == [0x1B] + [UInt8](repeating: 0xFF, count: 8))
        #expect(CBOR.int(-25).int == -25 && CBOR.unsigned(UInt64.max).int == nil)
    }

    @Test func readsBackWhatItWrites() throws {
        let value = CBOR.map([(.int(1), .bytes([1, 2, 3])), (.int(2), .array([.text("é"), .bool(true), .null, .int(-300)]))])
        #expect(try CBOR.decode(value.encoded) == value)
    }

    @Test func refusesWhatCTAPDoesNotUseAndWhatPassesItsLimits() {
        #expect(throws: CBORError.unsupported("an indefinite length")) { try CBOR.decode([0x9F, 0xFF]) }
        #expect(throws: CBORError.unsupported("a tag")) { try CBOR.decode([0xC1, 0x00]) }
        #expect(throws: CBORError.unsupported("a float or simple value")) { try CBOR.decode([0xF9, 0x00, 0x00]) }
        #expect(throws: CBORError.truncated) { try CBOR.decode([0x5B] + [UInt8](repeating: 0xFF, count: 8)) }
        #expect(throws: CBORError.truncated) { try CBOR.decode([0x9A, 0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(throws: CBORError.invalid("a map with the same key twice")) { try CBOR.decode([0xA2, 0x01, 0x00, 0x01, 0x00]) }
        #expect(throws: CBORError.invalid("a text string that is not UTF-8")) { try CBOR.decode([0x61, 0xFF]) }
        #expect(throws: CBORError.trailingBytes) { try CBOR.decode([0x01, 0x02]) }
        let deep = [UInt8](repeating: 0x81, count: 9) + [0x00]
        #expect(throws: CBORError.tooLarge("nested deeper than 8")) { try CBOR.decode(deep) }
        var wide: [UInt8] = [0x99, 0x04, 0x01]
        wide += [UInt8](repeating: 0x00, count: 1_025)
        #expect(throws: CBORError.tooLarge("more than 1024 items")) { try CBOR.decode(wide) }
    }
}

/// CTAPHID's framing: reports into messages and back, and the refusals CTAP 2.1 names.
@Suite struct CTAPHIDFramerTests {
    /// A framer whose channel ids count up from 7.
    static func framer() -> CTAPHIDFramer {
        let next = Mutex<UInt32>(7)
        return CTAPHIDFramer(channelLimit: 2) { next.withLock { value in defer { value += 1 }; return value } }
    }

    @Test func aLongMessageCrossesReportsAndReadsBack() throws {
        var framer = Self.framer()
        let channel = framer.allocate(at: 0)
        let payload = (0..<1_000).map { UInt8($0 % 251) }
        let reports = CTAPHIDFramer.packets(channel: channel, command: 0x10, payload: payload)
        #expect(reports.count == 1 + (1_000 - 57 + 58) / 59 && reports.allSatisfy { $0.count == 64 })
        var events: [CTAPHIDFramer.Event] = []
        for report in reports { events.append(framer.receive(report, at: 1)) }
        #expect(events.last == .message(CTAPHIDMessage(channel: channel, command: 0x10, payload: payload)))
        #expect(events.dropLast().allSatisfy { $0 == .pending })
    }

    @Test func refusals() {
        var framer = Self.framer()
        let channel = framer.allocate(at: 0)
        func report(_ channel: UInt32, _ kind: UInt8, _ rest: [UInt8]) -> [UInt8] {
            let head: [UInt8] = [UInt8(channel >> 24), UInt8((channel >> 16) & 0xFF), UInt8((channel >> 8) & 0xFF),
                                 UInt8(channel & 0xFF), kind]
            return (head + rest + [UInt8](repeating: 0, count: 64)).prefix(64).map { $0 }
        }
        #expect(framer.receive(report(9, 0x90, [0, 1, 4]), at: 1) == .failure(channel: 9, .invalidChannel))
        #expect(framer.receive(report(channel, 0x90, [0xFF, 0xFF]), at: 1) == .failure(channel: channel, .invalidLength))
        #expect(framer.receive(report(CTAPHID.broadcast, 0x90, [0, 1, 4]), at: 1)
                == .failure(channel: CTAPHID.broadcast, .invalidChannel))
        // A message under way: another channel waits its turn; a wrong sequence ends it.
        let other = framer.allocate(at: 1)
        #expect(framer.receive(report(channel, 0x90, [0, 100]), at: 2) == .pending)
        #expect(framer.receive(report(other, 0x90, [0, 1, 4]), at: 2) == .failure(channel: other, .channelBusy))
        #expect(framer.receive(report(channel, 3, []), at: 3) == .failure(channel: channel, .invalidSequence))
        // Its own channel starting another message ends the one under way: the next is served.
        #expect(framer.receive(report(channel, 0x90, [0, 100]), at: 4) == .pending)
        #expect(framer.receive(report(channel, 0x90, [0, 1, 4]), at: 4) == .failure(channel: channel, .invalidSequence))
        #expect(framer.receive(report(channel, 0x90, [0, 1, 4]), at: 4)
                == .message(CTAPHIDMessage(channel: channel, command: 0x10, payload: [4])))
        // Past the timeout, the half message is dropped (its channel told), and the report
        // that found it is read too: another channel's request is served, not lost.
        #expect(framer.receive(report(channel, 0x90, [0, 100]), at: 10) == .pending)
        #expect(framer.expire(at: 3_000) == nil)
        #expect(framer.expire(at: 5_000) == channel)
        #expect(framer.expire(at: 5_000) == nil)
        #expect(framer.receive(report(other, 0x90, [0, 1, 4]), at: 5_000)
                == .message(CTAPHIDMessage(channel: other, command: 0x10, payload: [4])))
        // A stray continuation, and a short write, are ignored.
        #expect(framer.receive(report(other, 0, []), at: 5_001) == .pending)
        #expect(framer.receive([1, 2, 3], at: 5_001) == .pending)
    }

    @Test func channelsBeyondTheLimitForgetTheOldest() {
        let ids = Mutex<[UInt32]>([5, 6, 7])
        var framer = CTAPHIDFramer(channelLimit: 2) { ids.withLock { $0.isEmpty ? 99 : $0.removeFirst() } }
        _ = framer.allocate(at: 1)
        _ = framer.allocate(at: 2)
        _ = framer.allocate(at: 3)
        #expect(!framer.isAllocated(5) && framer.isAllocated(6) && framer.isAllocated(7))
    }

    @Test func authenticatorDataLaysOutAsWebAuthnSays() {
        let data = AuthenticatorData(rpIdHash: [UInt8](repeating: 0xAA, count: 32), flags: [.userPresent, .userVerified],
                                     signCount: 0x0102_0304, attested: ([UInt8](repeating: 1, count: 16), [9, 9], [0xA0]))
        let bytes = data.bytes
        #expect(bytes.count == 32 + 1 + 4 + 16 + 2 + 2 + 1)
        #expect(bytes[32] == 0x45 && Array(bytes[33..<37]) == [1, 2, 3, 4] && Array(bytes[53..<55]) == [0, 2])
    }
}
