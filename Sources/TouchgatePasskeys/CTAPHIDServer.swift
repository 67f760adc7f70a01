import Synchronization
import TouchgateBasics
import TouchgateFIDO
#if canImport(Glibc)
import Glibc
#endif

/// Where a device's reports come from and go to: the uhid device, or a socket of the
/// authenticator's for tests and tools.
public protocol ReportChannel: Sendable {
    /// The next 64-byte report, or nil when the device or connection is gone. Blocks.
    func read() -> [UInt8]?
    /// Sends one 64-byte report.
    func write(_ report: [UInt8])
}

/// CTAPHID over a ``ReportChannel``: INIT, PING, WINK, CANCEL and CBOR, one transaction at a
/// time, KEEPALIVE every 100 ms while a command waits (Firefox gives up after 2 s of
/// silence, python-fido2 can cancel only when a packet arrives), and ERROR for what the
/// framing refuses.
public final class CTAPHIDServer: Sendable {
    private let channel: any ReportChannel
    private let authenticator: PasskeyAuthenticator
    private let framer: Mutex<CTAPHIDFramer>
    /// The transaction under way: its channel and task.
    private let busy = Mutex<(channel: UInt32, task: Task<Void, Never>)?>(nil)
    /// Held while a message's reports go out; true once the channel has ended, after which
    /// nothing is written (a socket's descriptor is closed then, and its number reused).
    private let writing = Mutex(false)

    public init(channel: any ReportChannel, authenticator: PasskeyAuthenticator) {
        self.channel = channel
        self.authenticator = authenticator
        framer = Mutex(CTAPHIDFramer { UInt32.random(in: 1..<UInt32.max) })
    }

    /// Serves until the channel ends (call from a thread of its own: reads block). Once it
    /// returns, the transaction still under way is cancelled and writes nothing more.
    public func serve() {
        while let report = channel.read() {
            let now = Self.milliseconds()
            let (stalled, event) = framer.withLock { ($0.expire(at: now), $0.receive(report, at: now)) }
            if let stalled { send(stalled, .error, [CTAPHID.Failure.timeout.rawValue]) }
            switch event {
            case .pending: continue
            case .failure(let id, let failure): send(id, .error, [failure.rawValue])
            case .message(let message): handle(message)
            }
        }
        busy.withLock { $0?.task.cancel() }
        writing.withLock { $0 = true }
    }

    private func handle(_ message: CTAPHIDMessage) {
        let id = message.channel
        guard let command = CTAPHID.Command(rawValue: message.command) else {
            send(id, .error, [CTAPHID.Failure.invalidCommand.rawValue])
            return
        }
        switch command {
        case .initialize:
            guard message.payload.count == 8 else {
                send(id, .error, [CTAPHID.Failure.invalidLength.rawValue])
                return
            }
            let assigned = id == CTAPHID.broadcast ? framer.withLock { $0.allocate(at: Self.milliseconds()) } : id
            if id != CTAPHID.broadcast { cancel(on: id) }
            send(id, .initialize, CTAPHIDFramer.initAnswer(nonce: message.payload, channel: assigned, version: (1, 0, 0)))
        case .ping:
            send(id, .ping, message.payload)
        case .wink:
            send(id, .wink, [])
        case .cancel:
            // No answer: the cancelled command answers KEEPALIVE_CANCEL itself.
            cancel(on: id)
        case .cbor:
            guard !message.payload.isEmpty else {
                send(id, .error, [CTAPHID.Failure.invalidLength.rawValue])
                return
            }
            let started: Bool = busy.withLock { busy in
                if busy != nil { return false }
                let task = Task { [authenticator] in
                    let keepalive = Task {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: .milliseconds(100))
                            if Task.isCancelled { break }
                            self.send(id, .keepalive, [CTAPHID.KeepaliveStatus.userPresenceNeeded.rawValue])
                        }
                    }
                    var answer = await authenticator.perform(message.payload)
                    keepalive.cancel()
                    // No KEEPALIVE after the answer: one being sent now goes out first.
                    await keepalive.value
                    if Task.isCancelled, answer.first != 0 { answer = [CTAP2.Status.keepaliveCancel.rawValue] }
                    // Free before the answer leaves: a client sends its next request as soon as it
                    // reads this one's, and must not find the channel still busy (libfido2 takes
                    // CHANNEL_BUSY for a broken device).
                    self.busy.withLock { $0 = nil }
                    self.send(id, .cbor, answer)
                }
                busy = (id, task)
                return true
            }
            if !started { send(id, .error, [CTAPHID.Failure.channelBusy.rawValue]) }
        case .msg, .lock, .keepalive, .error:
            send(id, .error, [CTAPHID.Failure.invalidCommand.rawValue])
        }
    }

    private func cancel(on id: UInt32) {
        busy.withLock { busy in
            if let running = busy, running.channel == id { running.task.cancel() }
        }
    }

    private func send(_ id: UInt32, _ command: CTAPHID.Command, _ payload: [UInt8]) {
        writing.withLock { ended in
            guard !ended else { return }
            for report in CTAPHIDFramer.packets(channel: id, command: command.rawValue, payload: payload) {
                channel.write(report)
            }
        }
    }

    static func milliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000 + UInt64(now.tv_nsec) / 1_000_000
    }
}
