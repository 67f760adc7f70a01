public import Foundation

/// Runs blocking `work` on a thread of its own, off Swift's cooperative pool. Also for work
/// that measures time: on a two-core machine the pool has two threads, and while other tests
/// block them a suspended test resumes late (a keyring timeout test once slept 77 s in a
/// 500 ms sleep), so a measurement made across suspensions measures the pool, not the code.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
