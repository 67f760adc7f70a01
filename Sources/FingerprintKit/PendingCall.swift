import CFPrint

/// One libfprint asynchronous call in flight.
///
/// It travels to libfprint as the `user_data` of a `GAsyncReadyCallback`
/// (`Unmanaged.passRetained`) and is released exactly once, by ``asyncReadyCallback``.
class PendingCall {
    /// Called on the GLib thread with the call's `GAsyncResult`.
    func complete(_ result: OpaquePointer) {}

    /// Retains `self` for the C side; balanced by ``asyncReadyCallback``.
    final func retainedPointer() -> gpointer { Unmanaged.passRetained(self).toOpaque() }
}

/// A call whose `_finish` function turns the result into a `T`.
///
/// `@unchecked Sendable`: `finish` and `continuation` are used only on the GLib thread,
/// once, from ``complete(_:)``; nothing mutates them after init.
final class TypedPendingCall<T: Sendable>: PendingCall, @unchecked Sendable {
    private let finish: (OpaquePointer) throws -> T
    private let continuation: CheckedContinuation<T, any Error>
    private let after: () -> Void

    init(finish: @escaping (OpaquePointer) throws -> T,
         continuation: CheckedContinuation<T, any Error>,
         after: @escaping () -> Void) {
        self.finish = finish
        self.continuation = continuation
        self.after = after
    }

    override func complete(_ result: OpaquePointer) {
        let outcome = Result { try finish(result) }
        after()
        continuation.resume(with: outcome)
    }
}

/// The `GAsyncReadyCallback` for every call: hands the result to its ``PendingCall``.
let asyncReadyCallback: GAsyncReadyCallback = { _, result, userData in
    guard let userData, let result else { return }
    Unmanaged<PendingCall>.fromOpaque(userData).takeRetainedValue().complete(result)
}
