import CFPrint

/// How warm a reader is, as libfprint estimates it (`FpTemperature`).
public enum ReaderTemperature: String, Sendable, Codable {
    /// `FP_TEMPERATURE_COLD`: fine to use (also what readers without a heat model report).
    case cold
    /// `FP_TEMPERATURE_WARM`: usable, but heating up.
    case warm
    /// `FP_TEMPERATURE_HOT`: operations fail with ``DeviceErrorCode/tooHot`` until it cools.
    case hot
}

extension Reader {
    /// libfprint's temperature estimate for the reader now (`fp_device_get_temperature`).
    /// Readers whose driver has no heat model always report ``ReaderTemperature/cold``.
    public var temperature: ReaderTemperature {
        get async {
            let device = self.device
            return await GLibLoop.shared.run {
                switch fp_device_get_temperature(device.pointer) {
                case FP_TEMPERATURE_HOT: return .hot
                case FP_TEMPERATURE_WARM: return .warm
                default: return .cold
                }
            }
        }
    }

    /// Prepares the reader for system suspend (`fp_device_suspend`); pair it with ``resume()``.
    ///
    /// Callable whether or not the reader is open, and while an operation runs. What
    /// happens to that operation is the driver's choice (libfprint leaves it undefined): it
    /// may be held until ``resume()`` or left to finish first, or it ends with
    /// ``DeviceErrorCode/busy`` ("Cannot run while suspended"). A driver that cannot
    /// suspend mid-operation (virtual_device, for one) makes this call throw
    /// ``DeviceErrorCode/notSupported``, and libfprint still ends the operation with
    /// ``DeviceErrorCode/busy``; call ``resume()`` all the same, then the reader works
    /// again. After a successful suspend every operation, opening and closing included,
    /// fails with ``DeviceErrorCode/busy`` until ``resume()``.
    ///
    /// Cancellation only stops a call that has not started: libfprint ignores the
    /// cancellable once the suspend runs, and the call then finishes as usual.
    /// - Throws: ``DeviceErrorCode/busy`` when already suspended, ``DeviceErrorCode/removed``
    ///   when the reader is gone, ``DeviceErrorCode/notSupported`` as above.
    public func suspend() async throws {
        try await performBeside { device, cancellable, data in
            fp_device_suspend(device, cancellable, asyncReadyCallback, data)
        } finish: { reader, device, result in
            _ = try GErrorFunnel.check { fp_device_suspend_finish(device, result, $0) }
            reader.isSuspended = true
        }
    }

    /// Resumes the reader after ``suspend()`` (`fp_device_resume`). An operation the driver
    /// held may finish before, during or after this call.
    /// - Throws: a device error when the reader could not be woken; cancellation as ``suspend()``.
    public func resume() async throws {
        try await performBeside { device, cancellable, data in
            fp_device_resume(device, cancellable, asyncReadyCallback, data)
        } finish: { reader, device, result in
            // libfprint counts the reader as resumed whatever the outcome.
            reader.isSuspended = false
            _ = try GErrorFunnel.check { fp_device_resume_finish(device, result, $0) }
        }
    }

    /// Runs a call that may overlap the operation in progress (suspend and resume): it has
    /// its own cancellable and takes neither the reader's operation slot nor its events.
    private func performBeside(
        start: @escaping @Sendable (UnsafeMutablePointer<FpDevice>, UnsafeMutablePointer<GCancellable>, gpointer) -> Void,
        finish: @escaping @Sendable (Reader, UnsafeMutablePointer<FpDevice>, OpaquePointer) throws -> Void
    ) async throws {
        let cancellable = GObjectRef(pointer: g_cancellable_new()!)
        defer { g_object_unref(cancellable.pointer) }
        let device = self.device
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                GLibLoop.shared.perform { [self] in
                    storageListing = nil
                    let call = TypedPendingCall<Void>(
                        finish: { [self] result in try finish(self, device.pointer, result) },
                        continuation: continuation, after: {})
                    start(device.pointer, cancellable.pointer, call.retainedPointer())
                }
            }
        } onCancel: {
            Self.cancel(cancellable)
        }
    }
}
