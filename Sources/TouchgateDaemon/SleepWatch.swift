import FingerprintKit
import Logging
import TouchgateService
import FoundationEssentials
import Synchronization

/// Follows system sleep through systemd-logind: a delay inhibitor is held while the system
/// is awake; on `PrepareForSleep(true)` the running reader operation is cancelled (its
/// client is told why), new ones are held back, the readers the pool holds open are
/// suspended, and the inhibitor is released so sleep proceeds; on `PrepareForSleep(false)`
/// the readers are resumed (one that fails is closed and the readers enumerated anew),
/// operations run again and a new inhibitor is taken. Unlocked
/// vaults stay unlocked across sleep, as a phone keeps its keys; their idle and 72-hour
/// limits count the time asleep (boot time), and the first sweep after resume applies them.
enum SleepWatch {
    static let who = "touchgated"
    static let why = "cancel fingerprint operations and suspend readers"
    /// How long the cancelled operation may take to end before sleep is let go anyway
    /// (logind's own limit, InhibitDelayMaxSec, is 5 s by default).
    static let cancelLimit: Duration = .seconds(3)

    /// Watches until the calling task is cancelled. Without logind it logs one line and returns.
    static func run(pool: ReaderPool, keys: HeldKeys, logger: Logger) async {
        let logind: LogindClient
        do {
            logind = try await LogindClient.connect()
        } catch {
            return logger.warning("sleep is not watched: \(error)")
        }
        // Subscribed before the inhibitor is taken, so no PrepareForSleep can slip between.
        let signals = await logind.prepareForSleep()
        var inhibitor: SleepInhibitor
        do {
            inhibitor = try await logind.delaySleep(who: who, why: why)
        } catch {
            await logind.close()
            return logger.warning("sleep is not watched: \(error)")
        }
        logger.info("sleep is watched through systemd-logind (delay inhibitor taken)")
        var held: SleepInhibitor? = inhibitor
        for await starting in signals {
            if starting {
                let ended = await pool.turns.sleep()
                if let ended, !(await finished(ended, within: cancelLimit)) {
                    logger.warning("""
                        going to sleep: the cancelled fingerprint operation has not ended after \(cancelLimit); \
                        letting the system sleep anyway
                        """)
                }
                let suspended = await pool.suspend()
                let operation = ended == nil ? "no fingerprint operation was running"
                    : "the fingerprint operation in progress was cancelled"
                logger.info("""
                    going to sleep: \(operation); \(suspended) open reader(s) suspended; \
                    \(keys.count) unlocked vault(s) stay unlocked; releasing the sleep inhibitor
                    """)
                held?.release()
                held = nil
            } else {
                let resumed = await pool.resume()
                await pool.turns.wake()
                let expired = keys.sweep()
                do {
                    inhibitor = try await logind.delaySleep(who: who, why: why)
                    held?.release()
                    held = inhibitor
                    logger.info("""
                        woke from sleep: \(resumed) reader(s) resumed, fingerprint operations run again, \
                        \(expired) vault(s) locked by their time limits; new sleep inhibitor taken
                        """)
                } catch {
                    logger.warning("woke from sleep: fingerprint operations run again, but no new sleep inhibitor: \(error)")
                }
            }
        }
        held?.release()
        await logind.close()
    }

    /// Whether `task` ends within `limit` (it is not cancelled either way).
    private static func finished(_ task: Task<Void, Never>, within limit: Duration) async -> Bool {
        let done = DoneFlag()
        Task {
            await task.value
            done.set()
        }
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if done.isSet { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return done.isSet
    }
}

/// A flag set once from any thread.
private final class DoneFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
