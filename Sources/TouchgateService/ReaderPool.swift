import FingerprintKit
import FoundationEssentials
public import Logging
import TouchgateAPI

/// The readers a long-lived process (touchgated) keeps open across requests.
///
/// One ``FingerprintContext`` for the process, made on first use; a reader is opened the
/// first time a request needs it and stays open after (opening is most of a short
/// operation's cost on USB readers). Hotplug is followed through the context: a reader
/// unplugged is closed and dropped, a reader plugged in is found by the next request. When
/// a request finds no reader, or not the one it names, the pool enumerates anew (a fresh
/// context, after closing the old one's readers): libfprint's virtual drivers, and readers
/// whose removal libfprint only noticed, appear again only that way.
///
/// Shared by every user's service in the process; a request holds a turn (``turns``) from
/// ``take(device:)`` to ``giveBack(_:)``, so a reader is never handed out twice at once and
/// only requests that use a reader wait for one. In-process commands have no pool: each
/// request opens and closes the reader itself. touchgate agent's pool closes a reader
/// ``linger`` after its last request: a run of commands pays the open (and the listing of a
/// reader's own storage, which FingerprintKit keeps while the reader stays open) once, and
/// the desktop's own programs (fprintd for a lock screen) get the reader back soon after.
public actor ReaderPool {
    /// Whose turn it is at the readers.
    public let turns: ReaderTurns
    private var context: FingerprintContext?
    /// Readers opened by the pool, in the current context.
    private var opened: [Reader] = []
    /// Readers handed out and not yet given back.
    private var inUse: [Reader] = []
    /// Readers suspended for sleep, to resume on wake.
    private var suspended: [Reader] = []
    private var watcher: Task<Void, Never>?
    /// The enumeration in progress: every caller that needs one meanwhile waits for it
    /// rather than starting its own (the actor is re-entered at each of its awaits).
    private var enumeration: Task<FingerprintContext, Never>?
    /// Requests between taking their turn and holding their reader (``inUse``): the
    /// readers are not enumerated anew under them.
    private var opening = 0
    /// What the last enumeration found (nil: none yet), so that finding no reader again
    /// is not logged at info each time: with no reader attached every request enumerates,
    /// and any local user could fill the journal by asking for status in a loop.
    private var lastFound: [String]?
    private let logger: Logger
    /// Whether a reader can be touched now, checked before a finger is asked for.
    nonisolated let presence: ReaderPresence?
    /// How long a reader stays open after its last request; nil: until it goes away.
    nonisolated let linger: Duration?
    /// How many times each open reader was taken: a close scheduled after one request is
    /// void once another took the reader since.
    private var takes: [ObjectIdentifier: Int] = [:]

    /// A pool, empty until first used; `logger` gets one line per reader opened, closed,
    /// unplugged, plugged in, suspended or resumed. With `presence`, a request that needs a
    /// finger is refused at once when the reader cannot be touched (a closed lid). With
    /// `standings`, the user at the machine's seat goes first (``ReaderTurns``).
    public init(logger: Logger, presence: ReaderPresence? = nil, linger: Duration? = nil, standings: SeatStandings? = nil) {
        turns = ReaderTurns(standings: standings)
        self.logger = logger
        self.presence = presence
        self.linger = linger
    }

    /// An open reader for one request (`device`: a device id or driver name; nil: the
    /// first). Give it back with ``giveBack(_:)`` when the request ends.
    /// - Throws: ``ServiceError`` (`no-reader`) when none is found even after enumerating
    ///   anew, or when it cannot be opened.
    func take(device: String?) async throws -> Reader {
        try await turns.acquire()
        opening += 1
        defer { opening -= 1 }
        do {
            let reader = try await open(device: device)
            inUse.append(reader)
            takes[ObjectIdentifier(reader), default: 0] += 1
            return reader
        } catch {
            await turns.release()
            throw error
        }
    }

    private func open(device: String?) async throws -> Reader {
        let known = context
        var reader: Reader
        do {
            let current: FingerprintContext
            if let known { current = known } else { current = await enumerate(reason: nil) }
            reader = try await ReaderSession.pick(device: device, in: current)
        } catch {
            guard known != nil else { throw error }
            let fresh = await enumerate(reason: device.map { "no reader '\(StoredText.escaped($0))' among those known" }
                                        ?? "no reader known")
            reader = try await ReaderSession.pick(device: device, in: fresh)
        }
        if !opened.contains(where: { $0 === reader }) {
            do {
                try await reader.open()
            } catch let error as FingerprintError {
                throw ServiceError.noReader("cannot open \(reader.info.name) (\(reader.info.driver)): \(error). "
                                            + ReaderDiagnostics.openHint)
            }
            opened.append(reader)
            let until = linger.map { " (closed after \($0) unused)" } ?? ""
            logger.info("reader \(Self.name(reader.info)) opened; it stays open for the next requests\(until)")
        }
        return reader
    }

    /// Takes back a reader from ``take(device:)``. It stays open unless it was unplugged
    /// (or closed under the request): then it is closed and dropped.
    func giveBack(_ reader: Reader) async {
        guard let index = inUse.firstIndex(where: { $0 === reader }) else { return }
        inUse.remove(at: index)
        if opened.contains(where: { $0 === reader }) {
            let removed = await reader.isRemoved
            let open = await reader.isOpen
            if removed || !open {
                await drop(reader, why: "it was unplugged")
            } else if let linger {
                let taken = takes[ObjectIdentifier(reader)]
                Task { [weak self] in
                    try? await Task.sleep(for: linger)
                    await self?.closeIfUnused(reader, takenTimes: taken)
                }
            }
        }
        await turns.release()
    }

    /// Closes `reader` when no request took it since it was given back after its
    /// `takenTimes`-th one (``linger``).
    private func closeIfUnused(_ reader: Reader, takenTimes: Int?) async {
        guard takes[ObjectIdentifier(reader)] == takenTimes, !inUse.contains(where: { $0 === reader }) else { return }
        await drop(reader, why: "unused for \(linger ?? .zero), so that other programs may use it")
    }

    /// The readers connected now (enumerating the first time, or anew when none is known
    /// and no request holds one), with whether the pool holds each open.
    func readers() async -> [(reader: Reader, open: Bool)] {
        var current: FingerprintContext
        if let known = context {
            current = known
            if inUse.isEmpty, opening == 0, await known.readers().isEmpty {
                current = await enumerate(reason: "no reader known")
            }
        } else {
            current = await enumerate(reason: nil)
        }
        var list: [(Reader, Bool)] = []
        for reader in await current.readers() {
            list.append((reader, opened.contains { $0 === reader }))
        }
        return list
    }

    /// Suspends every open reader before system sleep (the caller has ended the operation
    /// in progress). Returns how many were suspended; one that refuses is closed and
    /// dropped, to be enumerated anew after wake.
    public func suspend() async -> Int {
        var count = 0
        for reader in opened {
            do {
                try await reader.suspend()
                suspended.append(reader)
                count += 1
                logger.info("reader \(Self.name(reader.info)) suspended for sleep")
            } catch {
                logger.warning("reader \(Self.name(reader.info)) could not be suspended (\(error)); closing it")
                await drop(reader, why: "it could not be suspended")
            }
        }
        return count
    }

    /// Resumes the readers ``suspend()`` suspended. Returns how many resumed; when one
    /// fails, every reader is closed and the readers are enumerated anew.
    public func resume() async -> Int {
        let readers = suspended
        suspended = []
        var count = 0
        var failed = false
        for reader in readers {
            do {
                // Unplugged while the system slept (a dock left behind): libfprint may resume it
                // all the same, and the next touch would fail; it is found anew instead.
                if await reader.isRemoved { throw FingerprintError.device(.removed, detail: "unplugged while the system slept") }
                try await reader.resume()
                if await reader.isRemoved { throw FingerprintError.device(.removed, detail: "unplugged as it resumed") }
                count += 1
                logger.info("reader \(Self.name(reader.info)) resumed")
            } catch {
                logger.warning("reader \(Self.name(reader.info)) did not resume (\(error))")
                failed = true
            }
        }
        if failed { await enumerate(reason: "a reader did not resume") }
        return count
    }

    /// Closes every reader and drops the context (on stop).
    public func close() async {
        watcher?.cancel()
        watcher = nil
        for reader in opened { await drop(reader, why: "touchgated stops") }
        context = nil
    }

    // MARK: -

    /// A fresh context, or the one an enumeration already in progress gives.
    @discardableResult
    private func enumerate(reason: String?) async -> FingerprintContext {
        if let running = enumeration { return await running.value }
        let task = Task { await self.freshContext(reason: reason) }
        enumeration = task
        let fresh = await task.value
        if enumeration == task { enumeration = nil }
        return fresh
    }

    /// A fresh context: the old one's readers are closed first (a virtual reader listens on
    /// its socket only while one context holds it open).
    private func freshContext(reason: String?) async -> FingerprintContext {
        watcher?.cancel()
        for reader in opened { await drop(reader, why: "to enumerate the readers anew") }
        suspended = []
        context = nil
        let context = await FingerprintContext()
        self.context = context
        let found = await context.readers().map { Self.name($0.info) }
        let line: Logger.Message = "readers enumerated\(reason.map { " (\($0))" } ?? ""): \(found.isEmpty ? "none" : found.joined(separator: ", "))"
        if found.isEmpty, lastFound?.isEmpty == true { logger.debug(line) } else { logger.info(line) }
        lastFound = found
        let changes = context.changes()
        watcher = Task { [weak self] in
            for await change in changes {
                await self?.follow(change, in: context)
            }
        }
        return context
    }

    /// One hotplug event of `context` (ignored once that context is replaced).
    private func follow(_ change: ReaderChange, in context: FingerprintContext) async {
        guard context === self.context else { return }
        switch change {
        case .added(let info):
            logger.info("reader \(Self.name(info)) plugged in")
        case .removed(let info):
            logger.info("reader \(Self.name(info)) unplugged")
            // One a request holds is closed when it is given back.
            for reader in opened where !inUse.contains(where: { $0 === reader }) && reader.info.deviceID == info.deviceID
                && reader.info.driver == info.driver {
                if await reader.isRemoved { await drop(reader, why: "it was unplugged") }
            }
        }
    }

    private func drop(_ reader: Reader, why: String) async {
        guard let index = opened.firstIndex(where: { $0 === reader }) else { return }
        opened.remove(at: index)
        takes[ObjectIdentifier(reader)] = nil
        suspended.removeAll { $0 === reader }
        try? await reader.close()
        logger.info("reader \(Self.name(reader.info)) closed: \(why)")
    }

    private static func name(_ info: ReaderInfo) -> String {
        "\(info.deviceID) (\(info.driver))"
    }
}
