import FingerprintKit
import FoundationEssentials
import Synchronization
import TouchgateAPI

/// Which way Touchgate reaches the reader, as configured.
///
/// `TOUCHGATE_READER_BACKEND` sets it: `auto` (the default), `libfprint` or `fprintd`.
/// - `libfprint`: Touchgate opens the reader itself and matches against the prints it
///   enrolled (`touchgate enroll`). fprintd must not hold the reader.
/// - `fprintd`: Touchgate verifies through fprintd's D-Bus API against the prints enrolled
///   in fprintd (`fprintd-enroll`, the desktop's settings); fprintd keeps serving login,
///   the lock screen and sudo.
/// - `auto`: fprintd when it is on the system bus (running, or startable by the bus) and
///   has a reader; the reader directly otherwise. fprintd exits when idle and the bus starts
///   it again on the next call, so "installed" rather than "running now" decides: the
///   choice must not flip between two requests, as `biometry-current-set` secrets are bound
///   to the enrolled set of the backend in use.
public enum ReaderBackendChoice: String, Sendable, CaseIterable {
    case auto, libfprint, fprintd

    /// The environment variable that sets it.
    public static let environmentVariable = "TOUCHGATE_READER_BACKEND"

    /// The choice a setting names (nil or empty: `auto`).
    /// - Throws: a usage error for anything else, rather than reading it as `auto`.
    static func parse(_ setting: String?) throws -> ReaderBackendChoice {
        let value = setting?.lowercased() ?? ""
        if value.isEmpty { return .auto }
        guard let choice = ReaderBackendChoice(rawValue: value) else {
            throw ServiceError.usage("\(environmentVariable)=\(StoredText.escaped(value)) is not known; "
                                     + "use auto, libfprint or fprintd")
        }
        return choice
    }
}

/// fprintd and the reader it serves, for one request. Close it when done.
struct FprintdTarget: Sendable {
    let client: FprintdClient
    let device: FprintdDevice
    /// The turn held at the readers of a long-lived process, given back on close.
    var turns: ReaderTurns?
    /// Whether its reader can be touched (touchgated's closed-lid rule), checked before
    /// the reader is claimed.
    var presence: ReaderPresence?

    var info: ReaderInfo { device.info }

    func close() async {
        await client.close()
        await turns?.release()
    }

    /// Runs `body` and closes the connection after, also when it throws.
    func closing<T>(_ body: (FprintdTarget) async throws -> T) async throws -> T {
        do {
            let value = try await body(self)
            await close()
            return value
        } catch {
            await close()
            throw error
        }
    }
}

/// The backend one request uses.
enum ResolvedBackend: Sendable {
    case libfprint
    case fprintd(FprintdTarget)

    var name: String {
        switch self {
        case .libfprint: "libfprint"
        case .fprintd: "fprintd"
        }
    }

    func close() async {
        if case .fprintd(let target) = self { await target.close() }
    }
}

extension TouchgateService {
    /// Picks the backend for a request touching `device` (a device id, driver or, for
    /// fprintd, its device name; nil: the default reader). See ``ReaderBackendChoice``.
    func resolveBackend(device: String?) async throws -> ResolvedBackend {
        let resolved = try await resolveUnqueued(device: device)
        // In touchgated, fprintd's reader is used in turn like a reader of the pool.
        guard case .fprintd(var target) = resolved, let turns = readerPool?.turns else { return resolved }
        do {
            try await turns.acquire()
        } catch {
            await target.close()
            throw error
        }
        target.turns = turns
        target.presence = readerPool?.presence
        return .fprintd(target)
    }

    private func resolveUnqueued(device: String?) async throws -> ResolvedBackend {
        guard readers.fprintdMayServe else { return .libfprint }
        switch try ReaderBackendChoice.parse(readerBackendSetting) {
        case .libfprint:
            return .libfprint
        case .fprintd:
            let client = try await FprintdClient.connect()
            do {
                return .fprintd(try await Self.pick(device: device, client: client, required: true)!)
            } catch {
                await client.close()
                throw error
            }
        case .auto:
            let absence = fprintdAbsence
            if absence?.isKnown() == true { return .libfprint }
            guard let client = try? await FprintdClient.connect() else {
                absence?.note()
                return .libfprint
            }
            let presence = await client.presence()
            if presence != .absent, let target = try? await Self.pick(device: device, client: client, required: false) {
                return .fprintd(target)
            }
            if presence == .absent { absence?.note() }
            await client.close()
            return .libfprint
        }
    }

    /// Runs `body` with the resolved backend and closes it after.
    func withBackend<T>(device: String?, _ body: (ResolvedBackend) async throws -> T) async throws -> T {
        try await closing(try await resolveBackend(device: device), { await $0.close() }, body)
    }

    /// fprintd's reader named by `device` (its name, object path or index), or its default.
    /// Not `required`: nil when fprintd has no such reader, so the direct path can try.
    private static func pick(device: String?, client: FprintdClient, required: Bool) async throws -> FprintdTarget? {
        let devices = try await client.devices()
        guard !devices.isEmpty else {
            if required { throw FprintdError.noReader }
            return nil
        }
        guard let device else { return FprintdTarget(client: client, device: devices[0]) }
        if let match = devices.first(where: {
            $0.info.name == device || $0.objectPath == device || $0.objectPath.hasSuffix("/" + device)
                || device == "fprintd"
        }) {
            return FprintdTarget(client: client, device: match)
        }
        guard required else { return nil }
        let known = devices.map { StoredText.escaped($0.info.name) }.joined(separator: ", ")
        throw ServiceError.noReader("fprintd has no reader '\(StoredText.escaped(device))'; it has: \(known)")
    }

    /// The refusal for enrolling or deleting prints while fprintd owns the reader.
    static func managedByFprintd(_ action: String) -> ServiceError {
        ServiceError(.readerError,
                     "the reader is managed by fprintd, so its fingers are \(action) with fprintd, not touchgate: "
                         + "fprintd-enroll -f right-index-finger, fprintd-delete $USER, or your desktop's "
                         + "fingerprint settings. Touchgate verifies through fprintd. To use Touchgate's own "
                         + "prints instead, set \(ReaderBackendChoice.environmentVariable)=libfprint (fprintd can "
                         + "keep running for login and sudo)")
    }
}

/// That the `auto` reader backend found no fprintd to serve the reader (no system bus, or
/// fprintd neither running nor installed), remembered for ``validity`` by a long-lived
/// process, so that a request in that time goes to libfprint without connecting to the
/// system bus first. Measured: the probe was a new D-Bus connection per authorization, an
/// eighth of the agent's time for a signature in the reuse window (where no reader is even
/// opened) and 4 of its 12 context switches. A fprintd installed or started meanwhile is
/// found at most ``validity`` later; until then the reader is opened directly, as before it
/// appeared (and fails as busy while fprintd holds it). fprintd found is not remembered.
public final class FprintdAbsence: Sendable {
    static let validity = Duration.seconds(10)
    private let until = Mutex<ContinuousClock.Instant?>(nil)

    public init() {}

    /// Whether fprintd was found absent less than ``validity`` ago.
    func isKnown(at now: ContinuousClock.Instant = .now) -> Bool {
        until.withLock { until in
            guard let known = until, now < known else {
                until = nil
                return false
            }
            return true
        }
    }

    /// Remembers that fprintd was found absent at `now`.
    func note(at now: ContinuousClock.Instant = .now) {
        until.withLock { $0 = now + Self.validity }
    }
}
