import CFPrint

/// A change in the set of connected readers.
public enum ReaderChange: Sendable, Equatable {
    /// A reader was plugged in.
    case added(ReaderInfo)
    /// A reader was unplugged.
    case removed(ReaderInfo)
}

/// Entry point to the fingerprint readers on this machine.
///
/// Wraps a libfprint context. Readers of the virtual drivers are configured by
/// environment variables (`FP_VIRTUAL_IMAGE`, `FP_VIRTUAL_DEVICE`, …) read when the
/// context is made; `FP_DRIVERS_WHITELIST` restricts the drivers. Close every reader you
/// opened before dropping the context.
public final class FingerprintContext: Sendable {
    private let context: GObjectRef<UnsafeMutablePointer<FpContext>>
    private let state: ContextState

    /// Makes a context and enumerates the readers present now.
    public init() async {
        let state = ContextState()
        self.state = state
        context = await GLibLoop.shared.run {
            let context = fp_context_new()!
            let box = Unmanaged.passRetained(state).toOpaque()
            let added: @convention(c) (UnsafeMutablePointer<FpContext>?, UnsafeMutablePointer<FpDevice>?, gpointer?) -> Void = {
                _, device, data in
                guard let device, let data else { return }
                Unmanaged<ContextState>.fromOpaque(data).takeUnretainedValue().deviceAdded(device)
            }
            let removed: @convention(c) (UnsafeMutablePointer<FpContext>?, UnsafeMutablePointer<FpDevice>?, gpointer?) -> Void = {
                _, device, data in
                guard let device, let data else { return }
                Unmanaged<ContextState>.fromOpaque(data).takeUnretainedValue().deviceRemoved(device)
            }
            g_signal_connect_data(context, "device-added", unsafeBitCast(added, to: GCallback.self), box,
                                  { data, _ in data.map { Unmanaged<ContextState>.fromOpaque($0).release() } },
                                  GConnectFlags(rawValue: 0))
            g_signal_connect_data(context, "device-removed", unsafeBitCast(removed, to: GCallback.self),
                                  Unmanaged.passUnretained(state).toOpaque(), nil, GConnectFlags(rawValue: 0))
            // Enumerates on first call; the devices stay owned by the context.
            if let devices = fp_context_get_devices(context) {
                for index in 0..<Int(devices.pointee.len) {
                    let device = devices.pointee.pdata[index]!.assumingMemoryBound(to: FpDevice.self)
                    state.register(device)
                }
            }
            return GObjectRef(pointer: context)
        }
    }

    deinit {
        let context = self.context
        let state = self.state
        GLibLoop.shared.perform {
            state.shutdown()
            g_signal_handlers_disconnect_matched(
                context.pointer, G_SIGNAL_MATCH_DATA, 0, 0, nil, nil, Unmanaged.passUnretained(state).toOpaque())
            g_object_unref(context.pointer)
        }
    }

    /// The readers connected now, in libfprint's order (the first is the default).
    public func readers() async -> [Reader] {
        let state = self.state
        return await GLibLoop.shared.run { state.readers.filter { !$0.isGone } }
    }

    /// Readers appearing and disappearing from now on. The stream ends when the context goes.
    public func changes() -> AsyncStream<ReaderChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReaderChange.self)
        let state = self.state
        GLibLoop.shared.perform { state.watchers.append(continuation) }
        return stream
    }
}

/// The context's GLib-side bookkeeping.
///
/// `@unchecked Sendable`: every property is read and written on the GLib thread only
/// (signal handlers run there, and the Swift side reaches it through `GLibLoop`).
final class ContextState: @unchecked Sendable {
    var readers: [Reader] = []
    var watchers: [AsyncStream<ReaderChange>.Continuation] = []

    @discardableResult
    func register(_ device: UnsafeMutablePointer<FpDevice>) -> Reader {
        if let known = readers.first(where: { $0.device.pointer == device }) { return known }
        let reader = Reader(device: device)
        readers.append(reader)
        return reader
    }

    func deviceAdded(_ device: UnsafeMutablePointer<FpDevice>) {
        let reader = register(device)
        for watcher in watchers { watcher.yield(.added(reader.info)) }
    }

    func deviceRemoved(_ device: UnsafeMutablePointer<FpDevice>) {
        guard let index = readers.firstIndex(where: { $0.device.pointer == device }) else { return }
        let reader = readers.remove(at: index)
        reader.markGone()
        for watcher in watchers { watcher.yield(.removed(reader.info)) }
    }

    func shutdown() {
        for watcher in watchers { watcher.finish() }
        watchers.removeAll()
        for reader in readers { reader.shutdown() }
        readers.removeAll()
    }
}
