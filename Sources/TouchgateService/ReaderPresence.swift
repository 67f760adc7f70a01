package import FingerprintKit
public import Logging
import Synchronization
import TouchgateAPI

/// Whether the reader can be touched when a finger is about to be asked for: a reader built
/// into a laptop cannot while the lid is closed (clamshell, docked, or a bag). Asked of
/// systemd-logind (`LidClosed`, `Docked`) each time, so touchgated answers at once instead
/// of holding the reader (and a PAM stack) for the whole finger deadline; the PAM module
/// then falls through to the password. Never a reason to succeed: it only refuses.
///
/// Where the reader sits is configured (``Placement``), since libfprint does not say:
/// `built-in` refuses whenever the lid is closed; `external` never looks at the lid; `auto`
/// (the default) asks udev (``UdevReaderPlacement``): readers on fixed ports are built in,
/// one on a removable port is external. When udev cannot tell, `auto` refuses when the lid
/// is closed and the machine is not docked, where no finger can reach any reader, and asks
/// as before when it is docked, where an external reader may be on the desk. Where logind
/// cannot tell (no system bus, no lid), the finger is asked for.
public struct ReaderPresence: Sendable {
    /// Where the reader is.
    public enum Placement: String, Sendable, CaseIterable {
        case builtIn = "built-in"
        case external
        case auto
    }

    /// Where the lid's state is read: nil when it cannot be told.
    package typealias Lookup = @Sendable () async -> LidState?
    /// Where `auto` learns where the readers are: nil when it cannot be told.
    package typealias Hardware = @Sendable () -> Placement?

    /// How long logind may take to say where the lid is: after that the finger is asked for
    /// as without logind, so a hung logind never holds a request (GDBus would wait 25 s).
    static let deadline = Duration.seconds(1)

    let placement: Placement
    let logger: Logger
    private let lookup: Lookup
    private let hardware: Hardware

    /// A rule for a reader at `placement` that asks systemd-logind on the system bus, and
    /// for `auto`, udev.
    public init(placement: Placement, logger: Logger) {
        let logind = LogindConnection()
        let udev = UdevReaderPlacement()
        self.init(placement: placement, logger: logger, hardware: { udev.placement() }) { await logind.lid() }
    }

    /// A rule that reads the lid with `lookup` and the readers' placement with `hardware`
    /// (a test's).
    package init(placement: Placement, logger: Logger, hardware: @escaping Hardware = { nil },
                 lookup: @escaping Lookup) {
        self.placement = placement
        self.logger = logger
        self.hardware = hardware
        self.lookup = lookup
    }

    /// Returns when a finger may be asked for; throws `no-reader`, saying why and what to do,
    /// when the reader cannot be touched.
    func check() async throws(ServiceError) {
        guard placement != .external, let lid = await lidWithinDeadline(), lid.closed else { return }
        let found = placement == .auto ? hardware() : nil
        if found == .external {
            return logger.info("the lid is closed but udev puts a reader on a removable port: asking for a finger")
        }
        if placement == .auto && found == nil && lid.docked {
            return logger.info("the lid is closed but the machine is docked: asking for a finger (an external reader may be in reach)")
        }
        let why = placement == .builtIn ? "built in" : found == .builtIn ? "built in, as udev says" : "taken to be built in"
        logger.notice("the lid is closed and the reader is \(why): refused before the reader")
        throw ServiceError.noReader("""
            the lid is closed and the fingerprint reader is built into it, so no finger can reach it: \
            open the lid, or use the password
            """)
    }
}

extension ReaderPresence {
    /// The lid as `lookup` reads it, or nil when it has not answered within ``deadline``.
    /// Not a task group: a group waits for every child, and a D-Bus call in flight does not
    /// end when cancelled; the lookup is left to finish on its own.
    private func lidWithinDeadline() async -> LidState? {
        let lookup = self.lookup
        let answer: LidState?? = await withCheckedContinuation { continuation in
            let first = FirstAnswer(continuation)
            Task { first.give(.some(await lookup())) }
            Task {
                try? await Task.sleep(for: Self.deadline)
                first.give(.none)
            }
        }
        guard let answered = answer else {
            logger.warning("systemd-logind did not say within \(Self.deadline) whether the lid is closed; asking for a finger")
            return nil
        }
        return answered
    }
}

/// One connection to systemd-logind, kept between touches (a new one per touch would add a
/// bus handshake to every verify) and made anew after a failure.
private actor LogindConnection {
    private var client: LogindClient?

    /// The lid's state, or nil when logind cannot tell (not on the bus, or no lid).
    func lid() async -> LidState? {
        do {
            return try await connected().lid()
        } catch {
            await client?.close()
            client = nil
            return nil
        }
    }

    /// The kept client, connecting when there is none. Two touches connecting at once (the
    /// actor is re-entered while one waits for the bus) keep the first client and close the other.
    private func connected() async throws(LogindError) -> LogindClient {
        if let client { return client }
        let made = try await LogindClient.connect()
        guard let client else {
            client = made
            return made
        }
        await made.close()
        return client
    }
}

/// Resumes a continuation with the first of several answers; the later ones are dropped.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, Never>?>

    init(_ continuation: CheckedContinuation<Value, Never>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ value: Value) {
        continuation.withLock { pending in
            defer { pending = nil }
            return pending
        }?.resume(returning: value)
    }
}
