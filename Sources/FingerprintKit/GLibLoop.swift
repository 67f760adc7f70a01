import CFPrint
import Dispatch
import TouchgateBasics

/// The one thread that runs GLib's global default main context.
///
/// libfprint finishes its work on `g_main_context_default()`: enumeration, the `_sync`
/// calls and every driver timer iterate it, and a private context pushed as
/// thread-default hangs in `fp_context_get_devices`. So one dedicated thread acquires the
/// default context and iterates it for the life of the process, and every `fp_*` call is
/// sent there with `g_main_context_invoke_full`. All libfprint objects are therefore
/// touched by this thread only.
final class GLibLoop: Sendable {
    /// The process-wide loop, started on first use.
    static let shared = GLibLoop()

    /// The GLib thread's name, as `ps -L` and backtraces show it.
    static let threadName = "touchgate-glib"

    private init() {
        let ready = DispatchSemaphore(value: 0)
        SystemThread.detach(name: Self.threadName, stackSize: 8 << 20) {
            let context = g_main_context_default()
            // Owning the context makes invoke_full from this thread run inline.
            _ = g_main_context_acquire(context)
            ready.signal()
            while true {
                _ = g_main_context_iteration(context, 1)
            }
        }
        ready.wait()
    }

    /// Runs `body` on the GLib thread, asynchronously (inline when already on it).
    func perform(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ClosureBox(body)).toOpaque()
        g_main_context_invoke_full(
            g_main_context_default(), G_PRIORITY_DEFAULT,
            { data in
                Unmanaged<ClosureBox>.fromOpaque(data!).takeUnretainedValue().body()
                return 0  // G_SOURCE_REMOVE: run once
            },
            box,
            { data in Unmanaged<ClosureBox>.fromOpaque(data!).release() })
    }

    /// Runs `body` on the GLib thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            perform { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the GLib thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            perform { continuation.resume(returning: body()) }
        }
    }
}

/// A closure that travels through a C `gpointer`.
private final class ClosureBox: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// A GObject pointer that crosses threads but is dereferenced on the GLib thread only.
///
/// `@unchecked Sendable`: the pointer itself is just an address; every use of it
/// (including the final `g_object_unref`) happens inside `GLibLoop.perform`.
struct GObjectRef<T>: @unchecked Sendable {
    let pointer: T
}
