/// CTAPHID (CTAP 2.1 §11.2): the framing of FIDO requests into 64-byte HID reports, without
/// I/O. A door feeds it each report it reads (``CTAPHIDFramer/receive(_:at:)``) and writes
/// the reports ``CTAPHIDFramer/packets(channel:command:payload:)`` cuts an answer into.
public enum CTAPHID {
    /// The size of every report, in and out.
    public static let reportSize = 64
    /// The broadcast channel, on which only INIT is answered.
    public static let broadcast: UInt32 = 0xFFFF_FFFF
    /// The largest message: one initialisation packet and 128 continuation packets.
    public static let maximumPayload = reportSize - 7 + 128 * (reportSize - 5)

    public enum Command: UInt8, Sendable {
        case ping = 0x01, msg = 0x03, lock = 0x04, initialize = 0x06, wink = 0x08, cbor = 0x10, cancel = 0x11
        case keepalive = 0x3B, error = 0x3F
    }

    /// The status a KEEPALIVE reports.
    public enum KeepaliveStatus: UInt8, Sendable {
        case processing = 1, userPresenceNeeded = 2
    }

    /// ERROR's codes.
    public enum Failure: UInt8, Error, Sendable {
        case invalidCommand = 0x01, invalidParameter = 0x02, invalidLength = 0x03, invalidSequence = 0x04
        case timeout = 0x05, channelBusy = 0x06, invalidChannel = 0x0B, other = 0x7F
    }

    /// INIT's answer flags: WINK and CBOR; no MSG (no U2F).
    public static let capabilities: UInt8 = 0x01 | 0x04 | 0x08
}

/// One whole request or answer.
public struct CTAPHIDMessage: Equatable, Sendable {
    public var channel: UInt32
    public var command: UInt8
    public var payload: [UInt8]

    public init(channel: UInt32, command: UInt8, payload: [UInt8]) {
        self.channel = channel
        self.command = command
        self.payload = payload
    }
}

/// Reassembles requests from reports, one message at a time, and keeps the channels INIT
/// gave out.
public struct CTAPHIDFramer: Sendable {
    /// What one report amounted to.
    public enum Event: Equatable, Sendable {
        /// A whole request.
        case message(CTAPHIDMessage)
        /// An ERROR to answer on the channel.
        case failure(channel: UInt32, CTAPHID.Failure)
        /// Part of a request, or a report to ignore (a stray continuation, a short write).
        case pending
    }

    /// How many channels are kept; INIT beyond them forgets the one used longest ago.
    public let channelLimit: Int
    /// How long (in milliseconds) a message may take between its packets.
    public let packetTimeout: UInt64
    private var channels: [UInt32: UInt64] = [:]
    private var partial: (channel: UInt32, command: UInt8, expected: Int, payload: [UInt8], sequence: UInt8, last: UInt64)?
    private var random: @Sendable () -> UInt32

    /// - Parameter random: where new channel ids come from (a CSPRNG in a door).
    public init(channelLimit: Int = 32, packetTimeout: UInt64 = 3_000, random: @escaping @Sendable () -> UInt32) {
        self.channelLimit = channelLimit
        self.packetTimeout = packetTimeout
        self.random = random
    }

    /// Whether `channel` was given out by INIT and not forgotten.
    public func isAllocated(_ channel: UInt32) -> Bool { channels[channel] != nil }

    /// A new channel id for an INIT on the broadcast channel (never 0 or broadcast, never one in use).
    public mutating func allocate(at now: UInt64) -> UInt32 {
        if channels.count >= channelLimit, let oldest = channels.min(by: { $0.value < $1.value })?.key {
            channels[oldest] = nil
        }
        var channel = random()
        while channel == 0 || channel == CTAPHID.broadcast || channels[channel] != nil { channel = random() }
        channels[channel] = now
        return channel
    }

    /// Drops a message whose next packet is later than ``packetTimeout``: the channel to
    /// tell ERR_MSG_TIMEOUT, or nil. Called before each ``receive(_:at:)``, so that the report
    /// which finds a stalled message is read as well (a browser's INIT is not lost to it).
    public mutating func expire(at now: UInt64) -> UInt32? {
        guard let open = partial, now &- open.last > packetTimeout else { return nil }
        partial = nil
        return open.channel
    }

    /// Reads one report, `now` in milliseconds of a monotonic clock. A stalled message is
    /// dropped first (``expire(at:)`` says whose it was).
    public mutating func receive(_ report: [UInt8], at now: UInt64) -> Event {
        guard report.count == CTAPHID.reportSize else { return .pending }
        let channel = UInt32(report[0]) << 24 | UInt32(report[1]) << 16 | UInt32(report[2]) << 8 | UInt32(report[3])
        _ = expire(at: now)
        guard channel != 0 else { return .failure(channel: channel, .invalidChannel) }
        let kind = report[4]
        if kind & 0x80 == 0 {
            // A continuation packet: only of the message under way, in order.
            guard var open = partial, open.channel == channel else { return .pending }
            guard kind == open.sequence else {
                partial = nil
                return .failure(channel: channel, .invalidSequence)
            }
            let take = min(open.expected - open.payload.count, CTAPHID.reportSize - 5)
            open.payload += report[5..<5 + take]
            open.sequence += 1
            open.last = now
            if open.payload.count == open.expected {
                partial = nil
                return finish(CTAPHIDMessage(channel: channel, command: open.command, payload: open.payload), at: now)
            }
            partial = open
            return .pending
        }
        let command = kind & 0x7F
        let expected = Int(report[5]) << 8 | Int(report[6])
        if let open = partial {
            // INIT on the channel under way restarts it; anything else waits its turn.
            guard open.channel == channel else { return .failure(channel: channel, .channelBusy) }
            // Its own channel starting another message ends the one under way.
            partial = nil
            guard command == CTAPHID.Command.initialize.rawValue else { return .failure(channel: channel, .invalidSequence) }
        }
        guard expected <= CTAPHID.maximumPayload else { return .failure(channel: channel, .invalidLength) }
        let take = min(expected, CTAPHID.reportSize - 7)
        let payload = Array(report[7..<7 + take])
        if payload.count == expected {
            return finish(CTAPHIDMessage(channel: channel, command: command, payload: payload), at: now)
        }
        guard channel == CTAPHID.broadcast || channels[channel] != nil else {
            return .failure(channel: channel, .invalidChannel)
        }
        partial = (channel, command, expected, payload, 0, now)
        return .pending
    }

    private mutating func finish(_ message: CTAPHIDMessage, at now: UInt64) -> Event {
        if message.channel == CTAPHID.broadcast {
            guard message.command == CTAPHID.Command.initialize.rawValue else {
                return .failure(channel: message.channel, .invalidChannel)
            }
            return .message(message)
        }
        guard channels[message.channel] != nil else { return .failure(channel: message.channel, .invalidChannel) }
        channels[message.channel] = now
        return .message(message)
    }

    /// `payload` cut into reports for `channel`.
    public static func packets(channel: UInt32, command: UInt8, payload: [UInt8]) -> [[UInt8]] {
        let id: [UInt8] = [UInt8(channel >> 24), UInt8((channel >> 16) & 0xFF), UInt8((channel >> 8) & 0xFF), UInt8(channel & 0xFF)]
        let payload = Array(payload.prefix(CTAPHID.maximumPayload))
        var reports: [[UInt8]] = []
        var first = id + [0x80 | command, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        first += payload.prefix(CTAPHID.reportSize - 7)
        reports.append(pad(first))
        var offset = CTAPHID.reportSize - 7, sequence: UInt8 = 0
        while offset < payload.count {
            let end = min(payload.count, offset + CTAPHID.reportSize - 5)
            reports.append(pad(id + [sequence] + payload[offset..<end]))
            offset = end
            sequence += 1
        }
        return reports
    }

    private static func pad(_ report: [UInt8]) -> [UInt8] {
        report + [UInt8](repeating: 0, count: CTAPHID.reportSize - report.count)
    }

    /// INIT's answer: the nonce, the new channel, protocol version 2, the device's version
    /// numbers and capabilities.
    public static func initAnswer(nonce: [UInt8], channel: UInt32, version: (UInt8, UInt8, UInt8)) -> [UInt8] {
        nonce + [UInt8(channel >> 24), UInt8((channel >> 16) & 0xFF), UInt8((channel >> 8) & 0xFF), UInt8(channel & 0xFF)]
            + [2, version.0, version.1, version.2, CTAPHID.capabilities]
    }
}
