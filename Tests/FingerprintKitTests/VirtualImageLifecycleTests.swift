import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// Removal, cancellation and concurrency on the virtual_image reader.
    @Suite struct VirtualImageLifecycle {
        @Test func unplugMidVerifyEndsItDisconnectedAndTheContextReportsRemoval() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("whorl")
            let changes = rig.context.changes()
            let (events, seen) = rig.scripted([.unplug])
            let error = await #expect(throws: FingerprintError.self) {
                try await rig.reader.verify(print, events: events)
            }
            _ = await seen.value
            #expect(error?.isDisconnected == true, "got \(String(describing: error))")
            #expect(await rig.context.readers().isEmpty)
            // libfprint keeps an unplugged reader open until it is closed; then the context drops it.
            try await rig.reader.close()
            #expect(await rig.reader.isOpen == false)
            #expect(await first(of: changes, within: .seconds(5)) == .removed(rig.reader.info))
            // Nothing more can run on it.
            await #expect(throws: FingerprintError.device(.removed, detail: "")) {
                try await rig.reader.verify(print)
            }
        }

        @Test func cancellingVerifyThrowsCancellationQuicklyAndTheReaderStaysUsable() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("whorl")
            let (waiting, waitingContinuation) = AsyncStream.makeStream(of: Void.self)
            let (events, seen) = rig.scripted([.signal(waitingContinuation)])
            let reader = rig.reader
            let verify = Task { try await reader.verify(print, events: events) }
            #expect(await first(of: waiting, within: .seconds(5)) != nil, "the reader never waited for a finger")

            let clock = ContinuousClock()
            let start = clock.now
            verify.cancel()
            let outcome = await verify.result
            let elapsed = clock.now - start
            _ = await seen.value
            #expect(throws: CancellationError.self) { try outcome.get() }
            #expect(elapsed < .seconds(1), "cancellation took \(elapsed)")

            #expect(await reader.isOpen)
            #expect(try await rig.verify(print, with: "whorl") == true)
            await rig.tearDown()
        }

        @Test func aSecondConcurrentOperationIsBusy() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("whorl")
            let (waiting, waitingContinuation) = AsyncStream.makeStream(of: Void.self)
            let (events, seen) = rig.scripted([.signal(waitingContinuation)])
            let reader = rig.reader
            let running = Task { try await reader.verify(print, events: events) }
            #expect(await first(of: waiting, within: .seconds(5)) != nil, "the reader never waited for a finger")

            await #expect(throws: FingerprintError.device(.busy, detail: "")) {
                try await reader.verify(print)
            }
            await #expect(throws: FingerprintError.device(.busy, detail: "")) {
                try await reader.identify([print])
            }
            // The first operation was not disturbed: it still takes the finger and matches.
            try rig.client.send(image: Fixtures.print("whorl"))
            #expect(try await running.value.matched == true)
            _ = await seen.value
            await rig.tearDown()
        }
    }
}

