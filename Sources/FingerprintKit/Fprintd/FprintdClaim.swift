import CFPrint

/// What one fprintd verification found.
public struct FprintdVerifyResult: Sendable, Equatable {
    /// Whether the finger matched.
    public let matched: Bool
    /// The finger fprintd checked against, in fprintd's naming (`right-index-finger`), or
    /// nil when it matched against all of the user's fingers at once (it does not say which).
    public let finger: String?
}

/// A reader claimed through fprintd for one user. Release it when done.
public final class FprintdClaim: Sendable {
    /// The claimed reader.
    public let device: FprintdDevice
    /// The user whose prints fprintd matches against.
    public let user: String
    let client: FprintdClient
    /// fprintd's unique bus name, the only sender whose signals are listened to.
    let owner: String

    init(client: FprintdClient, device: FprintdDevice, owner: String, user: String) {
        self.client = client
        self.device = device
        self.owner = owner
        self.user = user
    }

    /// Releases the reader. A claim fprintd no longer holds (it went away) is not an error.
    public func release() async throws {
        do {
            try await client.bus.call(FprintdClient.service, device.objectPath, FprintdClient.deviceInterface,
                                      "Release") { _ in () }
        } catch FprintdError.notRunning {
            // fprintd or the bus is gone, and the claim with it.
        }
    }

    /// One verification: `VerifyStart(finger)`, then waits for fprintd's verdict.
    ///
    /// `finger` is `any` (all the user's enrolled fingers) or one name like
    /// `right-index-finger`. `events` receives the reader's finger status as fprintd publishes
    /// it (`finger-needed`, `finger-present`) and is finished when the verification ends.
    /// The verification is always stopped (`VerifyStop`) before this returns or throws, so the
    /// claim can be released or used again at once.
    /// - Returns: match or no match.
    /// - Throws: ``FingerprintError/retry(_:)`` after a poor scan (call again to retry),
    ///   ``DeviceErrorCode/removed`` when the reader went away, `CancellationError` when the
    ///   task was cancelled, ``FprintdError`` for the rest.
    public func verify(finger: String = "any",
                       events: AsyncStream<ReaderEvent>.Continuation? = nil) async throws -> FprintdVerifyResult {
        let operation = FprintdVerification(claim: self, finger: finger, events: events)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                GLibLoop.shared.perform { operation.start(continuation) }
            }
        } onCancel: {
            GLibLoop.shared.perform { operation.cancel() }
        }
    }
}

/// One `VerifyStart` … `VerifyStatus` … `VerifyStop` exchange.
///
/// `@unchecked Sendable`: every property is read and written on the GLib thread only (the
/// method replies and the signal callbacks run there, and `start`/`cancel` are sent there).
final class FprintdVerification: @unchecked Sendable {
    private let claim: FprintdClaim
    private let finger: String
    private let events: AsyncStream<ReaderEvent>.Continuation?
    private var continuation: CheckedContinuation<FprintdVerifyResult, any Error>?
    private var subscriptions: [guint] = []
    private var selected: String?
    private var status: FingerStatus = []
    private enum Phase { case idle, starting, running, stopping, done }
    private var phase = Phase.idle
    /// Set when cancelled while `VerifyStart` had not answered yet.
    private var cancelRequested = false

    init(claim: FprintdClaim, finger: String, events: AsyncStream<ReaderEvent>.Continuation?) {
        self.claim = claim
        self.finger = finger
        self.events = events
    }

    private var bus: DBusConnection { claim.client.bus }

    func start(_ continuation: CheckedContinuation<FprintdVerifyResult, any Error>) {
        self.continuation = continuation
        subscribe()
        phase = .starting
        bus.call(FprintdClient.service, claim.device.objectPath, FprintdClient.deviceInterface, "VerifyStart",
                 [.string(finger)], user: claim.user) { [self] result in
            switch result {
            case .failure(let error):
                finish(.failure(cancelRequested ? CancellationError() : error), stop: false)
            case .success:
                if phase == .starting { phase = .running }
                if cancelRequested { finish(.failure(CancellationError()), stop: true) }
            }
        }
    }

    func cancel() {
        switch phase {
        case .idle, .starting: cancelRequested = true
        case .running: finish(.failure(CancellationError()), stop: true)
        case .stopping, .done: break
        }
    }

    private func subscribe() {
        let connection = bus.connection.pointer
        let callback: GDBusSignalCallback = { _, _, _, interface, member, parameters, data in
            guard let data, let interface, let member, let parameters else { return }
            Unmanaged<FprintdVerification>.fromOpaque(data).takeUnretainedValue()
                .signal(String(cString: interface), String(cString: member), parameters)
        }
        // Each subscription holds one reference, dropped by GDBus when it is unsubscribed.
        for interface in [FprintdClient.deviceInterface, "org.freedesktop.DBus.Properties"] {
            let data = Unmanaged.passRetained(self).toOpaque()
            subscriptions.append(g_dbus_connection_signal_subscribe(
                connection, claim.owner, interface, nil, claim.device.objectPath, nil, G_DBUS_SIGNAL_FLAGS_NONE,
                callback, data, { data in data.map { Unmanaged<FprintdVerification>.fromOpaque($0).release() } }))
        }
    }

    private func unsubscribe() {
        for id in subscriptions { g_dbus_connection_signal_unsubscribe(bus.connection.pointer, id) }
        subscriptions.removeAll()
    }

    private func signal(_ interface: String, _ member: String, _ parameters: OpaquePointer) {
        guard phase == .starting || phase == .running else { return }
        switch (interface, member) {
        case (FprintdClient.deviceInterface, "VerifyFingerSelected"):
            if case .string(let name) = Variant.child(parameters, 0) { selected = name }
        case (FprintdClient.deviceInterface, "VerifyStatus"):
            guard case .string(let result) = Variant.child(parameters, 0) else { return }
            verdict(result)
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard Variant.child(parameters, 0) == .string(FprintdClient.deviceInterface) else { return }
            var status = self.status
            let changed = Variant.dictionary(parameters, 1)
            if case .bool(let needed)? = changed["finger-needed"] {
                if needed { status.insert(.needed) } else { status.remove(.needed) }
            }
            if case .bool(let present)? = changed["finger-present"] {
                if present { status.insert(.present) } else { status.remove(.present) }
            }
            if status != self.status {
                self.status = status
                events?.yield(.fingerStatus(status))
            }
        default:
            break
        }
    }

    /// Maps fprintd's verify statuses (fprintd's `verify_result_to_name`).
    private func verdict(_ result: String) {
        let finger = selected == "any" ? nil : selected ?? (self.finger == "any" ? nil : self.finger)
        switch result {
        case "verify-match":
            finish(.success(FprintdVerifyResult(matched: true, finger: finger)), stop: true)
        case "verify-no-match":
            finish(.success(FprintdVerifyResult(matched: false, finger: finger)), stop: true)
        case "verify-retry-scan":
            finish(.failure(FingerprintError.retry(.general)), stop: true)
        case "verify-swipe-too-short":
            finish(.failure(FingerprintError.retry(.tooShort)), stop: true)
        case "verify-finger-not-centered":
            finish(.failure(FingerprintError.retry(.centerFinger)), stop: true)
        case "verify-remove-and-retry":
            finish(.failure(FingerprintError.retry(.removeFinger)), stop: true)
        case "verify-disconnected":
            finish(.failure(FingerprintError.device(.removed, detail: "")), stop: true)
        default:
            // verify-unknown-error and anything newer.
            finish(.failure(FprintdError.failed(name: result, detail: "")), stop: true)
        }
    }

    /// Ends the exchange once: stops the verification on fprintd (and waits for that) when
    /// asked, then resumes the caller.
    private func finish(_ outcome: Result<FprintdVerifyResult, any Error>, stop: Bool) {
        guard phase != .stopping && phase != .done else { return }
        unsubscribe()
        events?.finish()
        guard stop else {
            phase = .done
            resume(outcome)
            return
        }
        phase = .stopping
        bus.call(FprintdClient.service, claim.device.objectPath, FprintdClient.deviceInterface, "VerifyStop") {
            [self] _ in
            // A failed stop (fprintd already stopped, or gone) changes nothing for the caller.
            phase = .done
            resume(outcome)
        }
    }

    private func resume(_ outcome: Result<FprintdVerifyResult, any Error>) {
        continuation?.resume(with: outcome)
        continuation = nil
    }
}
