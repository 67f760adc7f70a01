import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

/// A virtual_device (or virtual_device_storage) reader, opened, and its command socket.
///
/// The driver listens only while the reader is open, reads one command per connection and
/// then closes it; a new connection made before it has read the last one drops that one.
/// So ``send(_:)`` waits for the driver to close each connection before the next.
struct VirtualDeviceRig {
    let directory: TemporaryDirectory
    let context: FingerprintContext
    let reader: Reader
    let client: VirtualDeviceClient

    static func make(storage: Bool) async throws -> VirtualDeviceRig {
        let directory = try TemporaryDirectory()
        let socket = directory.path("virtual-device.socket")
        let driver = storage ? "virtual_device_storage" : "virtual_device"
        configureVirtualEnvironment([storage ? "FP_VIRTUAL_DEVICE_STORAGE" : "FP_VIRTUAL_DEVICE": socket], drivers: driver)
        let context = await FingerprintContext()
        let readers = await context.readers()
        #expect(readers.count == 1)
        let reader = try #require(readers.first, "\(driver) reader not found")
        #expect(reader.info.driver == driver)
        try await reader.open()
        return VirtualDeviceRig(directory: directory, context: context, reader: reader,
                                client: VirtualDeviceClient(socketPath: socket))
    }

    func tearDown() async {
        if await reader.isOpen { try? await reader.close() }
        directory.remove()
    }

    /// Sends commands in order, each once the driver has taken the one before.
    func send(_ commands: String...) throws {
        for command in commands { try client.send(command, expectReply: true) }
    }

    /// Clears the storage variant. Its driver runs storage commands only when a queued
    /// `CONT ` lets it go on (otherwise it fails with G_IO_ERROR_TIMED_OUT after 500 ms).
    func clearStorage() async throws {
        try send("CONT ")
        try await reader.clearStorage()
    }

    /// The ids the storage variant holds (its `LIST` command).
    func storedIDs() throws -> Set<String> {
        Set(try client.send("LIST", expectReply: true).split(separator: "\n").map(String.init))
    }

    /// Enrolls `id` (queuing one `SCAN id` per stage first); returns the print and its stage events.
    func enroll(_ id: String, finger: Finger = .rightIndex, stages: Int = 5) async throws -> (Print, [ReaderEvent]) {
        for _ in 0..<stages { try send("SCAN \(id)") }
        let (events, seen) = collecting()
        let print = try await within(.seconds(10)) { [reader] in
            try await reader.enroll(finger: finger, username: "tester", events: events)
        }
        return (print, await seen.value)
    }

    /// Verifies `print` against a queued scan of `id`.
    func verify(_ print: Print, scanning id: String) async throws -> Bool {
        try send("SCAN \(id)")
        return try await within(.seconds(10)) { [reader] in try await reader.verify(print).matched }
    }
}

/// An events continuation and a task that returns every event, in order.
func collecting() -> (AsyncStream<ReaderEvent>.Continuation, Task<[ReaderEvent], Never>) {
    let (stream, continuation) = AsyncStream.makeStream(of: ReaderEvent.self)
    let task = Task {
        var seen: [ReaderEvent] = []
        for await event in stream { seen.append(event) }
        return seen
    }
    return (continuation, task)
}

struct TimedOut: Error, CustomStringConvertible {
    let description = "the operation did not finish in time (the reader waits for more input)"
}

/// Runs `body`, cancelling it and throwing ``TimedOut`` if it takes longer than `limit`,
/// so a reader left waiting fails the test at once rather than at the suite's time limit.
func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next(), let value = result else { throw TimedOut() }
        return value
    }
}
