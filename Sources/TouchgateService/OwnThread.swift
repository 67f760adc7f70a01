import TouchgateAPI

/// Runs blocking work on a thread of its own instead of Swift's shared pool.
///
/// The shared pool has as many threads as the machine has cores: work that may block for
/// as long as a peer chooses (writing to a client that does not read) would hold one of
/// them and, twice over on two cores, stop every other request. Such work goes here.
public enum OwnThread {
    /// Runs `body` on a new thread and returns what it returns (or throws what it throws).
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            SystemThread.detach(name: "touchgate-blocking") {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}
