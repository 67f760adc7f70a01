import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

/// FingerprintKit's fprintd client against the real fprintd on a private bus (``FprintdRig``).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FprintdClientTests {
    /// A client of the rig's bus, named outright: setting `DBUS_SYSTEM_BUS_ADDRESS` in this
    /// process would reach every program another test starts meanwhile.
    static func client(_ rig: FprintdRig) async throws -> FprintdClient {
        try await FprintdClient.connect(address: rig.busAddress)
    }

    @Test func listsReadersAndFingersThenVerifiesWithEvents() async throws {
        let rig = try await FprintdRig()
        defer { rig.stop() }
        let enrolled = try await rig.tool(["fprintd-enroll", "-f", "left-thumb", NSUserName()], presenting: ["whorl"])
        try #require(enrolled.status == 0, "\(enrolled.output)")
        let client = try await Self.client(rig)
        #expect(await client.presence() == .running)
        let devices = try await client.devices()
        let device = try #require(devices.first)
        #expect(devices.count == 1)
        #expect(device.objectPath == "/net/reactivated/Fprint/Device/0")
        #expect(device.info.driver == "fprintd")
        #expect(device.info.name == "Virtual image device for debugging")
        #expect(device.info.features == [.verify])
        #expect(try await client.enrolledFingers(user: NSUserName(), on: device) == ["left-thumb"])
        #expect(try await client.enrolledFingers(user: "nobody", on: device).isEmpty)
        #expect(Finger.leftThumb.fprintdName == "left-thumb" && Finger.rightIndex.fprintdName == "right-index-finger")

        let claim = try await client.claim(device, user: NSUserName())
        // A second claim through fprintd is refused while this one holds the reader.
        let other = try await Self.client(rig)
        await #expect(throws: FprintdError.busy) { _ = try await other.claim(device, user: NSUserName()) }
        await other.close()

        rig.finger.present(["whorl"])
        let (stream, events) = AsyncStream.makeStream(of: ReaderEvent.self)
        let match = try await claim.verify(events: events)
        #expect(match.matched && match.finger == "left-thumb")
        var seen: [ReaderEvent] = []
        for await event in stream { seen.append(event) }
        #expect(seen.first == .fingerStatus(.needed), "fprintd's finger-needed reaches the events: \(seen)")

        rig.finger.present(["arch"])
        #expect(try await claim.verify(finger: "left-thumb").matched == false)
        rig.finger.present(["retry"])
        await #expect(throws: FingerprintError.retry(.general)) { _ = try await claim.verify() }

        // Cancelling stops fprintd's verification: the claim verifies again at once.
        rig.finger.present([])
        let waiting = Task { try await claim.verify() }
        #expect(await rig.finger.waitForPrompts(1))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        rig.finger.present(["whorl"])
        #expect(try await claim.verify().matched)
        try await claim.release()
        await client.close()

        // Released: fprintd's own tool can claim the reader.
        let after = try await rig.tool(["fprintd-verify", NSUserName()], presenting: ["whorl"])
        #expect(after.status == 0, "\(after.output)")
    }

    @Test func aBusWithoutFprintdSaysSo() async throws {
        let rig = try await FprintdRig()
        defer { rig.stop() }
        await rig.stopFprintd()
        let client = try await Self.client(rig)
        #expect(await client.presence() == .absent)
        do {
            _ = try await client.devices()
            Issue.record("devices() without fprintd must throw")
        } catch let error as FprintdError {
            guard case .notRunning = error else { Issue.record("\(error)"); return }
            #expect(error.description.contains("TOUCHGATE_READER_BACKEND=libfprint"))
        }
        await client.close()
    }
}
