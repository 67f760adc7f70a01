public import TouchgateAPI
import Synchronization
import TouchgateBasics

/// touchgated's passkey devices: one uhid device for each user who has a session at a seat of
/// this machine and a store here, made when their first session there begins and removed
/// when their last one ends. A second user at the seat gets a device of her own; the udev
/// rule gives each device's hidraw node to the uid in its `uniq`, so whoever holds the seat
/// cannot drive another user's (systemd's seat ACL is what that rule takes away).
///
/// Who is at a seat is asked every ``interval`` (logind's `ListSessions`): a poll rather than
/// logind's `SessionNew`/`SessionRemoved` signals, since a missed signal would leave a device
/// behind for good, and a list read every two seconds costs nothing measurable.
public final class SeatPasskeyDevices: Sendable {
    /// The uids with a session at a seat; throws when logind cannot tell (then nothing changes).
    public typealias SeatUsers = @Sendable () async throws -> Set<UInt32>

    private let seatUsers: SeatUsers
    private let hasStore: @Sendable (UInt32) -> Bool
    private let requests: RequestsForCaller
    private let interaction: @Sendable (UInt32) -> PasskeyPrompts
    private let log: @Sendable (String) -> Void
    private let uhid: String
    private let serving = Mutex<[UInt32: Served]>([:])
    /// How often the seat's users are asked for.
    public static let interval = Duration.seconds(2)

    /// A device and the task that serves it.
    struct Served: Sendable {
        let device: UhidDevice
        let task: Task<Void, Never>
    }

    /// Devices for the users `seatUsers` names, when `hasStore` says they have a store,
    /// serving `requests` with `interaction` for the owner; `log` says what was made and why
    /// not. `uhid` is the kernel's device (a test's path aside).
    public init(seatUsers: @escaping SeatUsers, hasStore: @escaping @Sendable (UInt32) -> Bool,
                requests: @escaping RequestsForCaller, interaction: @escaping @Sendable (UInt32) -> PasskeyPrompts,
                uhid: String = "/dev/uhid", log: @escaping @Sendable (String) -> Void) {
        self.seatUsers = seatUsers
        self.hasStore = hasStore
        self.requests = requests
        self.interaction = interaction
        self.uhid = uhid
        self.log = log
    }

    /// Keeps the devices in step with the seat until cancelled; then removes every one.
    public func run() async {
        var lastProblem: String?
        while !Task.isCancelled {
            do {
                let problem = reconcile(try await seatUsers().filter(hasStore))
                // Said once, not every pass; said again once it has gone away and come back.
                if let problem, problem != lastProblem { log(problem) }
                lastProblem = problem
            } catch {
                let problem = "passkey devices: systemd-logind cannot say who is at the seat (\(error)); the devices stay "
                    + "as they are"
                if problem != lastProblem { log(problem) }
                lastProblem = problem
            }
            try? await Task.sleep(for: Self.interval)
        }
        await removeAll()
    }

    /// The uids served now.
    public var owners: Set<UInt32> { Set(serving.withLock { $0.keys }) }

    /// Makes a device for each of `users` without one and removes those of everyone else;
    /// the first failure to make one, said once (the next pass tries again).
    func reconcile(_ users: Set<UInt32>) -> String? {
        let gone = serving.withLock { served in
            let leaving = served.filter { !users.contains($0.key) }
            for uid in leaving.keys { served[uid] = nil }
            return Array(leaving.values)
        }
        for served in gone {
            served.device.stop()
            log("passkey device of uid \(served.device.owner) removed: no session of theirs at a seat")
        }
        var problem: String?
        for uid in users.sorted() where serving.withLock({ $0[uid] == nil }) {
            do {
                let device = try UhidDevice(owner: uid, path: uhid)
                let task = Task { [requests, interaction, log] in
                    await PasskeySocketServer.serveDevice(device, requests: requests, interaction: interaction(uid), log: log)
                }
                serving.withLock { $0[uid] = Served(device: device, task: task) }
                log("passkey device made for uid \(uid) (a session of theirs is at a seat)")
            } catch {
                problem = problem ?? "passkey devices: \(error.message)"
            }
        }
        return problem
    }

    private func removeAll() async {
        let all = serving.withLock { served in
            defer { served = [:] }
            return Array(served.values)
        }
        for served in all {
            served.device.stop()
            await served.task.value
        }
    }
}
