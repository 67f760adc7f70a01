import FingerprintKit
import Foundation
import Testing
import TouchgateImageIO
import TouchgateTestSupport

/// A virtual_image reader, opened, with the client that feeds it images.
///
/// The `FP_VIRTUAL_*` variables are read when a context is made, so tests that use a
/// rig run inside the serialized ``DeviceTests`` suite.
struct VirtualImageRig {
    let directory: TemporaryDirectory
    let context: FingerprintContext
    let reader: Reader
    let client: VirtualImageClient

    static func make() async throws -> VirtualImageRig {
        let directory = try TemporaryDirectory()
        let socket = directory.path("virtual-image.socket")
        configureVirtualEnvironment(["FP_VIRTUAL_IMAGE": socket], drivers: "virtual_image")
        let context = await FingerprintContext()
        let reader = try #require(await context.readers().first, "virtual_image reader not found")
        #expect(reader.info.driver == "virtual_image")
        try await reader.open()
        let client = try VirtualImageClient(socketPath: socket)
        return VirtualImageRig(directory: directory, context: context, reader: reader, client: client)
    }

    func tearDown() async {
        if await reader.isOpen { try? await reader.close() }
        directory.remove()
    }

    /// An events continuation that sends the next image each time the reader starts
    /// waiting for a finger, and a task that returns every event seen, in order.
    func feeding(_ images: [GreyImage]) -> (AsyncStream<ReaderEvent>.Continuation, Task<[ReaderEvent], Never>) {
        let (stream, continuation) = AsyncStream.makeStream(of: ReaderEvent.self)
        let client = self.client
        let task = Task {
            var seen: [ReaderEvent] = []
            var queue = images[...]
            var waiting = false
            for await event in stream {
                seen.append(event)
                guard case .fingerStatus(let status) = event else { continue }
                if status.isWaitingForFinger && !waiting, let next = queue.popFirst() {
                    try? client.send(image: next)
                }
                waiting = status.isWaitingForFinger
            }
            return seen
        }
        return (continuation, task)
    }

    /// An events continuation that plays `steps` to the reader, each once it starts waiting
    /// for a finger, and a task that returns every event seen, in order.
    ///
    /// After a retry the image device waits for the finger to lift (its state machine goes
    /// to "await finger off"), so the script reports the finger off and sends the next step
    /// only when the reader asks for a finger again; an image sent earlier is dropped.
    func scripted(_ steps: [ScanStep]) -> (AsyncStream<ReaderEvent>.Continuation, Task<[ReaderEvent], Never>) {
        let (stream, continuation) = AsyncStream.makeStream(of: ReaderEvent.self)
        let client = self.client
        let task = Task {
            var seen: [ReaderEvent] = []
            var queue = steps[...]
            var waiting = false
            for await event in stream {
                seen.append(event)
                switch event {
                case .fingerStatus(let status):
                    if status.isWaitingForFinger && !waiting, let next = queue.popFirst() {
                        try? next.send(to: client)
                    }
                    waiting = status.isWaitingForFinger
                case .retry:
                    try? client.setFinger(false)
                    waiting = false
                case .enrollStage:
                    break
                }
            }
            return seen
        }
        return (continuation, task)
    }

    /// Enrolls `name`'s image (as many times as the reader has stages).
    func enroll(_ name: String, finger: Finger = .rightIndex) async throws -> Print {
        let image = try Fixtures.print(name)
        let (events, seen) = feeding(Array(repeating: image, count: reader.info.enrollStages))
        let print = try await reader.enroll(finger: finger, username: "tester", events: events)
        _ = await seen.value
        return print
    }

    /// Verifies `print` against a scan of `name`.
    func verify(_ print: Print, with name: String) async throws -> Bool {
        let (events, seen) = feeding([try Fixtures.print(name)])
        defer { _ = seen }
        return try await reader.verify(print, events: events).matched
    }
}

/// One thing the test does at the virtual_image reader when it waits for a finger.
enum ScanStep: Sendable, CustomStringConvertible {
    /// Present this NIST print.
    case image(String)
    /// Report a retry with this `FpDeviceRetry` code.
    case retry(Int32)
    /// Fail the operation with this `FpDeviceError` code.
    case error(Int32)
    /// Remove the device.
    case unplug
    /// Do nothing but tell the test that the reader waits.
    case signal(AsyncStream<Void>.Continuation)

    func send(to client: VirtualImageClient) throws {
        switch self {
        case .image(let name): try client.send(image: Fixtures.print(name))
        case .retry(let code): try client.sendRetry(code)
        case .error(let code): try client.sendError(code)
        case .unplug: try client.unplug()
        case .signal(let continuation): continuation.yield()
        }
    }

    var description: String {
        switch self {
        case .image(let name): return "image \(name)"
        case .retry(let code): return "retry \(code)"
        case .error(let code): return "error \(code)"
        case .unplug: return "unplug"
        case .signal: return "signal"
        }
    }
}

/// The stage numbers among `events`, for a reader of `total` stages.
func stages(in events: [ReaderEvent], total: Int) -> [Int] {
    events.compactMap { event in
        if case .enrollStage(let completed, total) = event { return completed }
        return nil
    }
}

/// The first value `stream` yields within `timeout`, or nil.
func first<T: Sendable>(of stream: AsyncStream<T>, within timeout: Duration) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask {
            for await value in stream { return value }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

/// Points libfprint's virtual drivers at the given sockets and keeps real readers out.
func configureVirtualEnvironment(_ variables: [String: String], drivers: String) {
    for name in ["FP_VIRTUAL_IMAGE", "FP_VIRTUAL_DEVICE", "FP_VIRTUAL_DEVICE_STORAGE"] { unsetenv(name) }
    for (name, value) in variables { setenv(name, value, 1) }
    setenv("FP_DRIVERS_WHITELIST", drivers, 1)
}
