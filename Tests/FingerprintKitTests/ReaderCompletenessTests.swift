@testable import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// Suspend and resume, the prints verify and identify report, finger status,
    /// temperature, and print equality as libfprint has it.
    @Suite struct ReaderCompleteness {
        @Test func verifyAndIdentifyReturnTheScannedPrint() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let whorl = try await rig.enroll("whorl")
            let arch = try await rig.enroll("arch")

            let (events, seen) = rig.feeding([try Fixtures.print("whorl")])
            let verified = try await rig.reader.verify(whorl, events: events)
            _ = await seen.value
            #expect(verified.matched)
            // An image reader reports the print it made of the scan: this reader's, no metadata.
            let scanned = try #require(verified.scanned, "virtual_image reports the scanned print")
            #expect(scanned.driver == "virtual_image" && scanned.deviceID == rig.reader.info.deviceID)
            #expect(scanned.username == nil)

            let (more, seenMore) = rig.feeding([try Fixtures.print("whorl")])
            let identified = try await rig.reader.identify([arch, whorl], events: more)
            _ = await seenMore.value
            #expect(identified.index == 1)
            #expect(identified.matched == whorl)
            #expect(identified.matched?.username == "tester", "the gallery's print, with its metadata")
            #expect(identified.scanned != nil)
            await rig.tearDown()
        }

        @Test func identifyOnAStorageReaderNamesAStoredPrintTheGalleryLacks() async throws {
            let rig = try await VirtualDeviceRig.make(storage: true)
            defer { rig.directory.remove() }
            try await rig.clearStorage()
            let (first, _) = try await rig.enroll("id-a", finger: .leftIndex)
            let (second, _) = try await rig.enroll("id-b", finger: .rightIndex)

            try rig.send("SCAN id-b")
            let found = try await within(.seconds(10)) { [reader = rig.reader] in try await reader.identify([first, second]) }
            #expect(found.index == 1)
            #expect(found.matched == second)

            // id-b is on the reader but not in the gallery: no match, and the scanned print says which.
            try rig.send("SCAN id-b")
            let missing = try await within(.seconds(10)) { [reader = rig.reader] in try await reader.identify([first]) }
            #expect(missing.index == nil)
            #expect(missing.matched == nil)
            let scanned = try #require(missing.scanned, "the storage reader reports what it scanned")
            #expect(scanned == second, "equal as libfprint compares prints: \(scanned)")
            let listed = try await rig.reader.listPrints()
            #expect(listed.contains(scanned))
            await rig.tearDown()
        }

        @Test func printEqualityAgreesWithLibfprint() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            let (a, _) = try await rig.enroll("same-id", finger: .leftIndex)
            let (b, _) = try await rig.enroll("same-id", finger: .rightThumb)
            let (c, _) = try await rig.enroll("other-id", finger: .leftIndex)
            let copy = try await Print(serialized: a.serialized)
            let renamed = try await a.withMetadata(username: "someone-else", description: "renamed",
                                                   finger: .rightLittle, enrolled: (day: 1, month: 2, year: 2001))
            let bare = try await a.withMetadata(username: nil, description: nil, finger: .unknown, enrolled: nil)
            #expect(renamed.serialized != a.serialized && renamed.username == "someone-else")
            let image = try await VirtualImageRig.make()
            defer { image.directory.remove() }
            let whorl = try await image.enroll("whorl")
            let whorlAgain = try await Print(serialized: whorl.serialized)
            let whorlRenamed = try await whorl.withMetadata(username: "x", description: nil, finger: .leftThumb,
                                                            enrolled: nil)
            let arch = try await image.enroll("arch")
            await image.tearDown()

            let prints = ["a": a, "b": b, "c": c, "copy": copy, "renamed": renamed, "bare": bare,
                          "whorl": whorl, "whorlAgain": whorlAgain, "whorlRenamed": whorlRenamed, "arch": arch]
            for (leftName, left) in prints {
                for (rightName, right) in prints {
                    let libfprint = try await Print.libfprintEqual(left, right)
                    #expect((left == right) == libfprint, "\(leftName) == \(rightName): libfprint says \(libfprint)")
                    if left == right { #expect(left.hashValue == right.hashValue, "\(leftName), \(rightName)") }
                }
            }
            // What that means: metadata does not count, the template does.
            #expect(a == b && a == copy && a == renamed && a == bare)
            #expect(a != c)
            #expect(whorl == whorlAgain && whorl == whorlRenamed && whorl != arch)
            #expect(Set([a, b, copy, renamed, bare]).count == 1)
            await rig.tearDown()
        }

        @Test func fingerStatusAndTemperatureAreRead() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            #expect(await rig.reader.fingerStatus == [])
            #expect(await rig.reader.temperature == .cold)
            let (waiting, waitingContinuation) = AsyncStream.makeStream(of: Void.self)
            let (events, seen) = rig.scripted([.signal(waitingContinuation)])
            let print = try await rig.enroll("whorl")
            let reader = rig.reader
            let running = Task { try await reader.verify(print, events: events) }
            #expect(await first(of: waiting, within: .seconds(5)) != nil, "the reader never waited for a finger")
            #expect(await reader.fingerStatus.isWaitingForFinger)
            try rig.client.send(image: Fixtures.print("whorl"))
            #expect(try await running.value.matched)
            _ = await seen.value
            #expect(await reader.fingerStatus == [])
            await rig.tearDown()
        }

        @Test func suspendAndResume() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            let (print, _) = try await rig.enroll("finger-1")

            // Idle: suspend holds every operation off until resume.
            try await rig.reader.suspend()
            let refused = await Result { try await rig.reader.verify(print) }
            #expect(deviceCode(of: refused) == .busy)
            if case .failure(FingerprintError.device(_, let detail)) = refused { #expect(detail.contains("suspended")) }
            if case .failure(let error) = refused {
                // Suspended, not held by another program: the message blames neither fprintd nor anyone.
                #expect(String(describing: error).contains("suspended"), "\(error)")
                #expect(!String(describing: error).contains("fprintd"), "\(error)")
            }
            #expect(deviceCode(of: await Result { try await rig.reader.suspend() }) == .busy, "suspended twice")
            try await rig.reader.resume()
            #expect(try await rig.verify(print, scanning: "finger-1") == true)

            // While an operation waits for a finger.
            let (stream, events) = AsyncStream.makeStream(of: ReaderEvent.self)
            let (waiting, waitingContinuation) = AsyncStream.makeStream(of: Void.self)
            let watcher = Task {
                for await event in stream {
                    if case .fingerStatus(let status) = event, status.contains(.needed) { waitingContinuation.yield() }
                }
            }
            let reader = rig.reader
            let verify = Task { try await reader.verify(print, events: events) }
            #expect(await first(of: waiting, within: .seconds(5)) != nil, "the reader never waited for a finger")
            // virtual_device cannot suspend mid-operation: suspend says so, and libfprint ends the
            // operation it interrupted with busy; after resume the reader works again.
            #expect(deviceCode(of: await Result { try await reader.suspend() }) == .notSupported)
            #expect(deviceCode(of: await Result { try await within(.seconds(5)) { try await verify.value } }) == .busy)
            _ = await watcher.value
            try await reader.resume()
            #expect(try await rig.verify(print, scanning: "finger-1") == true)
            await rig.tearDown()
        }

        @Test func suspendingAClosedReaderKeepsItClosedUntilResumed() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            try await rig.reader.close()
            try await rig.reader.suspend()
            #expect(deviceCode(of: await Result { try await rig.reader.open() }) == .busy)
            try await rig.reader.resume()
            try await rig.reader.open()
            #expect(await rig.reader.isOpen)
            await rig.tearDown()
        }
    }
}
