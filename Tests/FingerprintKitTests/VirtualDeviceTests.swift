import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// libfprint's virtual_device driver: a match-on-host reader driven by text commands.
    @Suite struct VirtualDevice {
        @Test func enrollThenVerifyMatchesTheSameIDOnly() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            #expect(rig.reader.info.features.contains(.verify))
            #expect(!rig.reader.info.features.contains(.storage))
            let (print, events) = try await rig.enroll("finger-1", finger: .leftIndex)
            #expect(stages(in: events, total: 5) == [1, 2, 3, 4, 5])
            #expect(print.driver == "virtual_device")
            #expect(print.finger == .leftIndex)
            #expect(print.serialized.count < 200, "a virtual_device print holds only its id")
            #expect(try await rig.verify(print, scanning: "finger-1") == true)
            #expect(try await rig.verify(print, scanning: "finger-2") == false)
            await rig.tearDown()
        }

        @Test func setEnrollStagesIsHonoured() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            try rig.send("SET_ENROLL_STAGES 3")
            let (print, events) = try await rig.enroll("finger-1", stages: 3)
            // Three scans complete the enrollment, and the stage events count to 3 of 3.
            #expect(stages(in: events, total: 3) == [1, 2, 3])
            #expect(stages(in: events, total: 5).isEmpty)
            // `info` is the snapshot taken at enumeration, before the command.
            #expect(rig.reader.info.enrollStages == 5)
            #expect(try await rig.verify(print, scanning: "finger-1") == true)
            await rig.tearDown()
        }

        @Test func injectedRetryAndErrorAreTyped() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            let (print, _) = try await rig.enroll("finger-1")
            try rig.send("RETRY 2")
            await #expect(throws: FingerprintError.retry(.centerFinger)) { try await rig.reader.verify(print) }
            try rig.send("ERROR 8")
            #expect(deviceCode(of: await Result { try await rig.reader.verify(print) }) == .dataFull)
            #expect(try await rig.verify(print, scanning: "finger-1") == true)
            await rig.tearDown()
        }

        @Test func unplugMidVerifyIsReportedAsDisconnectedAndRemoved() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            let (print, _) = try await rig.enroll("finger-1")
            let changes = rig.context.changes()
            let (waiting, waitingContinuation) = AsyncStream.makeStream(of: Void.self)
            let (stream, events) = AsyncStream.makeStream(of: ReaderEvent.self)
            let seen = Task {
                for await event in stream {
                    if case .fingerStatus(let status) = event, status.contains(.needed) { waitingContinuation.yield() }
                }
            }
            let reader = rig.reader
            let verify = Task { try await reader.verify(print, events: events) }
            // Wait until the reader asks for a finger, then pull the plug.
            #expect(await first(of: waiting, within: .seconds(5)) != nil, "the reader never waited for a finger")
            try rig.send("UNPLUG")
            let outcome = await verify.result
            _ = await seen.value
            #expect(deviceCode(of: outcome) == .removed)
            #expect(await rig.context.readers().isEmpty)
            try await reader.close()
            #expect(await first(of: changes, within: .seconds(5)) == .removed(reader.info))
        }
    }

    /// libfprint's virtual_device_storage driver: a match-on-chip reader with storage.
    @Suite struct VirtualDeviceStorage {
        @Test func identifyListDeleteAndClear() async throws {
            let rig = try await VirtualDeviceRig.make(storage: true)
            defer { rig.directory.remove() }
            let features = rig.reader.info.features
            #expect(features.isSuperset(of: [.identify, .verify, .storage, .storageList, .storageDelete,
                                             .storageClear, .duplicatesCheck]))
            try await rig.clearStorage()
            let (first, _) = try await rig.enroll("id-a", finger: .leftIndex)
            let (second, _) = try await rig.enroll("id-b", finger: .rightIndex)
            #expect(first.isDeviceStored && second.isDeviceStored)
            #expect(try rig.storedIDs() == ["id-a", "id-b"])

            let listed = try await rig.reader.listPrints()
            #expect(listed.count == 2)
            // The driver lists bare prints: its id, no finger or user, not flagged device-stored.
            #expect(listed.allSatisfy { $0.driver == "virtual_device_storage" && $0.finger == .unknown })

            let gallery = [first, second]
            for (index, id) in ["id-a", "id-b"].enumerated() {
                try rig.send("SCAN \(id)")
                #expect(try await within(.seconds(10)) { try await rig.reader.identify(gallery).index } == index)
            }
            try rig.send("SCAN id-c")
            #expect(try await within(.seconds(10)) { try await rig.reader.identify(gallery).index } == nil)
            #expect(try await rig.verify(first, scanning: "id-a") == true)
            #expect(try await rig.verify(first, scanning: "id-b") == false)

            try await rig.reader.deletePrint(first)
            #expect(try rig.storedIDs() == ["id-b"])
            #expect(try await rig.reader.listPrints().count == 1)
            // A deleted print no longer matches, even its own finger.
            #expect(try await rig.verify(first, scanning: "id-a") == false)

            try await rig.clearStorage()
            #expect(try rig.storedIDs().isEmpty)
            #expect(try await rig.reader.listPrints().isEmpty)
            await rig.tearDown()
        }

        @Test("the listing is read from the reader only when its storage can have changed")
        func listingKeptWhileNothingCouldChangeIt() async throws {
            let rig = try await VirtualDeviceRig.make(storage: true)
            defer { rig.directory.remove() }
            try await rig.clearStorage()
            let (first, _) = try await rig.enroll("id-a")
            #expect(try await rig.reader.listPrints().count == 1)
            // Changed behind libfprint's back through the driver's own socket, which no real
            // reader has (the driver takes the command at its next operation, the verify): a
            // listing still answers from what it read, so it made no traffic.
            try rig.send("REMOVE id-a")
            #expect(try await rig.verify(first, scanning: "id-b") == false)
            #expect(try rig.storedIDs().isEmpty)
            #expect(try await rig.reader.listPrints().count == 1, "verify writes nothing: the listing is kept")
            // Anything that writes drops it: an enrollment, a deletion, a clear, closing.
            let (second, _) = try await rig.enroll("id-b")
            #expect(try await rig.reader.listPrints().count == 1, "read again after the enrollment: only id-b")
            try rig.send("INSERT id-c")
            try await rig.reader.deletePrint(second)
            #expect(try await rig.reader.listPrints().count == 1, "read again after the deletion: only id-c")
            try rig.send("INSERT id-d")
            try await rig.reader.close()
            try await rig.reader.open()
            #expect(try await rig.reader.listPrints().count == 2, "read again after reopening: id-c and id-d")
            await rig.tearDown()
        }

        @Test func enrollingAStoredFingerAgainIsRefusedAsDuplicate() async throws {
            let rig = try await VirtualDeviceRig.make(storage: true)
            defer { rig.directory.remove() }
            try await rig.clearStorage()
            _ = try await rig.enroll("id-a")
            try rig.send("SCAN id-a")
            let outcome = await Result {
                try await within(.seconds(10)) { try await rig.reader.enroll(finger: .leftThumb, username: "tester") }
            }
            #expect(deviceCode(of: outcome) == .dataDuplicate)
            #expect(try rig.storedIDs() == ["id-a"])
            await rig.tearDown()
        }
    }
}

/// The device error code `outcome` failed with, if it failed with one.
func deviceCode<T>(of outcome: Result<T, any Error>) -> DeviceErrorCode? {
    if case .failure(FingerprintError.device(let code, _)) = outcome { return code }
    return nil
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing call.
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

