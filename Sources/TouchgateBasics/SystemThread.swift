#if canImport(Glibc)
import Glibc
#endif
import CTouchgateSys

/// A thread of its own and a lock with a condition, over POSIX threads.
///
/// Hand-written because of a measurement: Foundation's `Thread`, `NSLock` and `NSCondition`
/// are in the full Foundation, and a client linking it starts in about 9 ms here against
/// 2.3 ms for one with FoundationEssentials only; the socket layer every client uses needs
/// nothing else from it.
public enum SystemThread {
    /// Starts `body` on a new detached thread named `name` (at most 15 bytes show; without
    /// one, the thread keeps the name it inherits), with a stack of `stackSize` bytes (the
    /// system's default without one).
    public static func detach(name: String?, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Work(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { raw in
            let work = Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue()
            if let name = work.name { CTouchgateSys_name_thread(name) }
            work.body()
            return nil
        }, box)
        guard started == 0 else {
            Unmanaged<Work>.fromOpaque(box).release()
            fatalError("cannot start a thread: \(String(cString: strerror(started)))")
        }
        pthread_detach(thread)
    }

    private final class Work {
        let name: String?
        let body: @Sendable () -> Void

        init(name: String?, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}

/// A mutex with one condition variable (what `NSCondition` is).
///
/// `@unchecked Sendable`: the pthread objects are made for use from several threads; they
/// live in memory of their own that never moves.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }

    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a ``broadcast()``, the lock released meanwhile (held again on return).
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Runs `body` holding the lock.
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
