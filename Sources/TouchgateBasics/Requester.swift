/// The program a helper acts for, as the helper states it (`touchgate askpass for pid 41
/// /usr/bin/ssh-add`), while the helper's request runs: the audit records it causes name
/// it, in this process and, sent as the request's `requester` argument, in touchgated. It
/// is the client's claim; the daemon's own record of the client process is what it verified.
public enum Requester {
    /// The requester of the request running in this task, when a helper set one.
    @TaskLocal public static var current: String?

    /// Runs `body` with every audit record it causes naming `requester` (in this process,
    /// and in touchgated through the request's `requester` argument).
    public static func actingFor<T: Sendable>(_ requester: String,
                                              _ body: () async throws(ServiceError) -> T) async throws(ServiceError) -> T {
        let result: Result<T, ServiceError> = await $current.withValue(requester) {
            do {
                return .success(try await body())
            } catch let error as ServiceError {
                return .failure(error)
            } catch {
                return .failure(ServiceError(.error, String(describing: error)))
            }
        }
        return try result.get()
    }
}
