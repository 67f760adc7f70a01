import CFPrint

/// A fingerprint reader.
///
/// Get readers from ``FingerprintContext/readers()``. Open before use and ``close()``
/// when done. A reader runs one operation at a time; a second one while the first runs
/// fails with ``DeviceErrorCode/busy``. Cancelling the task that awaits an operation
/// cancels it on the reader; the call then throws `CancellationError` once the reader
/// has stopped, so it is ready for the next operation.
///
/// Operations take an optional `events` continuation. Finger status changes, enroll
/// stages and retry hints are yielded to it from libfprint's callbacks in the order they
/// happen, and it is finished when the operation ends.
///
/// `@unchecked Sendable`: the mutable state below is read and written only on the GLib
/// thread (libfprint's callbacks and signals run there, and every method hops there
/// through `GLibLoop`); `info` and `device` never change.
public final class Reader: @unchecked Sendable {
    /// What the reader is, as found when it was enumerated.
    public let info: ReaderInfo
    let device: GObjectRef<UnsafeMutablePointer<FpDevice>>

    // GLib thread only.
    private var events: AsyncStream<ReaderEvent>.Continuation?
    private var cancellable: UnsafeMutablePointer<GCancellable>?
    private(set) var isGone = false
    /// Set by a finished ``suspend()``, cleared by ``resume()``.
    var isSuspended = false
    /// What ``listPrints()`` last read, kept while nothing could have changed the storage
    /// since: the reader stayed open (libfprint claims its USB interface, so no other
    /// program reaches it) and ran only calls that write nothing to it (verify, identify,
    /// capture). Every other call drops it, as do suspend, resume, an unplug, closing, and
    /// any call that fails on the device (the reader may then hold something else).
    var storageListing: [Print]?
    private var shuttingDown = false

    /// GLib thread only.
    init(device: UnsafeMutablePointer<FpDevice>) {
        g_object_ref(device)
        self.device = GObjectRef(pointer: device)
        info = ReaderInfo(device: device)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let statusChanged: @convention(c) (UnsafeMutablePointer<GObject>?, UnsafeMutableRawPointer?, gpointer?) -> Void = {
            _, _, data in
            guard let data else { return }
            Unmanaged<Reader>.fromOpaque(data).takeUnretainedValue().fingerStatusChanged()
        }
        let removed: @convention(c) (UnsafeMutablePointer<FpDevice>?, gpointer?) -> Void = { _, data in
            guard let data else { return }
            Unmanaged<Reader>.fromOpaque(data).takeUnretainedValue().markGone()
        }
        // The handlers hold no reference: deinit disconnects them before the reader goes.
        g_signal_connect_data(device, "notify::finger-status", unsafeBitCast(statusChanged, to: GCallback.self),
                              me, nil, GConnectFlags(rawValue: 0))
        g_signal_connect_data(device, "removed", unsafeBitCast(removed, to: GCallback.self),
                              me, nil, GConnectFlags(rawValue: 0))
    }

    deinit {
        let device = self.device
        let me = GObjectRef(pointer: Unmanaged.passUnretained(self).toOpaque())
        // Runs inline when the last reference drops on the GLib thread, which is the usual case.
        GLibLoop.shared.perform {
            g_signal_handlers_disconnect_matched(device.pointer, G_SIGNAL_MATCH_DATA, 0, 0, nil, nil, me.pointer)
            g_object_unref(device.pointer)
        }
    }

    // MARK: GLib-thread callbacks

    private func fingerStatusChanged() {
        let status = FingerStatus(rawValue: fp_device_get_finger_status(device.pointer).rawValue)
        if status.isWaitingForFinger && info.driver == VirtualImageWaits.driver { VirtualImageWaits.announce() }
        events?.yield(.fingerStatus(status))
    }

    func markGone() {
        isGone = true
        storageListing = nil
    }

    func yield(_ event: ReaderEvent) {
        events?.yield(event)
    }

    /// Stops what runs and closes the reader; used when the context goes away.
    func shutdown() {
        shuttingDown = true
        if let cancellable {
            g_cancellable_cancel(cancellable)  // the operation's end closes the reader
        } else {
            closeQuietly()
        }
    }

    private func closeQuietly() {
        storageListing = nil
        // A removed reader is closed too: libfprint keeps it open until then.
        guard fp_device_is_open(device.pointer) != 0 else { return }
        let device = self.device
        g_object_ref(device.pointer)
        fp_device_close(device.pointer, nil, { source, result, _ in
            guard let source else { return }
            _ = fp_device_close_finish(UnsafeMutableRawPointer(source).assumingMemoryBound(to: FpDevice.self), result, nil)
            g_object_unref(source)
        }, nil)
    }

    // MARK: Running operations

    /// Whether the reader is open now.
    public var isOpen: Bool {
        get async {
            let device = self.device
            return await GLibLoop.shared.run { fp_device_is_open(device.pointer) != 0 }
        }
    }

    /// Whether the reader was unplugged (libfprint's `removed` signal). A removed reader
    /// fails every operation; close it, and enumerate anew to find it should it come back.
    public var isRemoved: Bool {
        get async { await GLibLoop.shared.run { [self] in isGone } }
    }

    /// Whether the reader waits for a finger and whether one is on it, now
    /// (`fp_device_get_finger_status`). Changes while an operation runs also arrive as
    /// ``ReaderEvent/fingerStatus(_:)``; drivers that never report it always give `[]`.
    public var fingerStatus: FingerStatus {
        get async {
            let device = self.device
            return await GLibLoop.shared.run { FingerStatus(rawValue: fp_device_get_finger_status(device.pointer).rawValue) }
        }
    }

    /// Runs one libfprint asynchronous call: `start` begins it on the GLib thread with a
    /// cancellable and the `user_data` for ``asyncReadyCallback``; `finish` reads the
    /// result there. Task cancellation cancels the cancellable (on the GLib thread) and nothing else.
    /// `closing` lets the call reach a reader that went away (only closing makes sense then).
    /// `writesNothing`: the call cannot change what the reader stores, so the kept
    /// ``storageListing`` stays.
    func perform<T: Sendable>(
        events: AsyncStream<ReaderEvent>.Continuation? = nil,
        cancellable isCancellable: Bool = true,
        closing: Bool = false,
        writesNothing: Bool = false,
        start: @escaping @Sendable (UnsafeMutablePointer<FpDevice>, UnsafeMutablePointer<GCancellable>, gpointer) throws -> Void,
        finish: @escaping @Sendable (UnsafeMutablePointer<FpDevice>, OpaquePointer) throws -> T
    ) async throws -> T {
        let cancellable = GObjectRef(pointer: g_cancellable_new()!)
        defer { g_object_unref(cancellable.pointer) }  // GCancellable is thread-safe
        let call = {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                GLibLoop.shared.perform { [self] in
                    if !writesNothing { self.storageListing = nil }
                    self.begin(cancellable: cancellable, events: events, closing: closing,
                               continuation: continuation, start: start, finish: finish)
                }
            }
        }
        do {
            guard isCancellable else { return try await call() }
            return try await withTaskCancellationHandler(operation: call) {
                Self.cancel(cancellable)
            }
        } catch let error as FingerprintError {
            // A reader that failed may hold something else than it listed.
            if case .device = error { GLibLoop.shared.perform { [self] in storageListing = nil } }
            if error.isDisconnected { throw error }
            if isGoneNow(error) { throw FingerprintError.device(.removed, detail: "") }
            throw error
        }
    }

    /// Cancels on the GLib thread. `g_cancellable_cancel` is thread-safe, but it runs the
    /// cancellable's handlers in the calling thread, and libfprint's handler
    /// (`fp_device_cancelled_cb`) attaches an idle source to the default context, then
    /// unrefs it through a device field that the idle callback clears on the GLib thread:
    /// cancelled from another thread, the idle could run in between, and GLib printed
    /// `g_source_unref: assertion 'source != NULL' failed` (seen on Ctrl-C at the finger
    /// wait). The reference keeps the cancellable alive until the hop has run.
    static func cancel(_ cancellable: GObjectRef<UnsafeMutablePointer<GCancellable>>) {
        g_object_ref(cancellable.pointer)
        GLibLoop.shared.perform {
            g_cancellable_cancel(cancellable.pointer)
            g_object_unref(cancellable.pointer)
        }
    }

    /// A reader that vanished mid-operation may report a protocol or general error;
    /// the removal is what the caller needs to know.
    private func isGoneNow(_ error: FingerprintError) -> Bool {
        if case .device = error { return isGone } else { return false }
    }

    /// GLib thread.
    private func begin<T: Sendable>(
        cancellable: GObjectRef<UnsafeMutablePointer<GCancellable>>,
        events: AsyncStream<ReaderEvent>.Continuation?,
        closing: Bool,
        continuation: CheckedContinuation<T, any Error>,
        start: (UnsafeMutablePointer<FpDevice>, UnsafeMutablePointer<GCancellable>, gpointer) throws -> Void,
        finish: @escaping @Sendable (UnsafeMutablePointer<FpDevice>, OpaquePointer) throws -> T
    ) {
        if isGone && !closing {
            events?.finish()
            continuation.resume(throwing: FingerprintError.device(.removed, detail: ""))
            return
        }
        if isSuspended && !closing {
            // libfprint refuses too (busy); saying why spares the caller a guess.
            events?.finish()
            continuation.resume(throwing: FingerprintError.device(.busy, detail: "the reader is suspended; resume it first"))
            return
        }
        if self.cancellable != nil {
            // Refuse here rather than disturb the running operation's event stream.
            events?.finish()
            continuation.resume(throwing: FingerprintError.device(.busy, detail: ""))
            return
        }
        let device = self.device.pointer
        self.events = events
        self.cancellable = cancellable.pointer
        let call = TypedPendingCall<T>(
            finish: { result in try finish(device, result) },
            continuation: continuation,
            after: { [self] in self.operationEnded() })
        let userData = call.retainedPointer()
        do {
            try start(device, cancellable.pointer, userData)
        } catch {
            Unmanaged<PendingCall>.fromOpaque(userData).release()
            operationEnded()
            continuation.resume(throwing: error)
        }
    }

    /// GLib thread.
    private func operationEnded() {
        events?.finish()
        events = nil
        cancellable = nil
        if shuttingDown { closeQuietly() }
    }
}
