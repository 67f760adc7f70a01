import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// Identification, retries and errors on the virtual_image reader, with libfprint's
    /// real minutiae matching.
    @Suite struct VirtualImageScans {
        @Test func identifyNamesTheRightPrintForEachProbe() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            var gallery: [Print] = []
            for name in Fixtures.printNames { gallery.append(try await rig.enroll(name)) }

            for (index, name) in Fixtures.printNames.enumerated() {
                let (events, seen) = rig.scripted([.image(name)])
                let found = try await rig.reader.identify(gallery, events: events)
                _ = await seen.value
                #expect(found.index == index, "\(name) must be identified as gallery[\(index)]")
            }
            // The index is the position in the gallery passed, not the order of enrollment.
            let reversed = Array(gallery.reversed())
            let (events, seen) = rig.scripted([.image("whorl")])
            #expect(try await rig.reader.identify(reversed, events: events).index == 3)
            _ = await seen.value
            // A finger that is not in the gallery matches nothing.
            let (others, seenOthers) = rig.scripted([.image("whorl")])
            #expect(try await rig.reader.identify(Array(gallery.dropFirst()), events: others).index == nil)
            _ = await seenOthers.value
            await rig.tearDown()
        }

        @Test(arguments: [(Int32(0), RetryReason.general), (1, .tooShort), (2, .centerFinger), (3, .removeFinger)])
        func verifyEndsWithTheTypedRetry(code: Int32, reason: RetryReason) async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("whorl")
            let (events, seen) = rig.scripted([.retry(code)])
            await #expect(throws: FingerprintError.retry(reason)) {
                try await rig.reader.verify(print, events: events)
            }
            _ = await seen.value
            // The operation ended; restarting it works.
            #expect(try await rig.verify(print, with: "whorl") == true)
            await rig.tearDown()
        }

        @Test func enrollmentReportsRetriesAndGoesOn() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let whorl = ScanStep.image("whorl")
            let (events, seen) = rig.scripted([.retry(1), whorl, whorl, .retry(2), whorl, .retry(3), whorl, whorl])
            let print = try await rig.reader.enroll(finger: .leftThumb, username: "tester", events: events)
            let all = await seen.value
            let retries = all.compactMap { event -> RetryReason? in
                if case .retry(let reason) = event { return reason }
                return nil
            }
            #expect(retries == [.tooShort, .centerFinger, .removeFinger])
            #expect(stages(in: all, total: 5) == [1, 2, 3, 4, 5])
            #expect(print.finger == .leftThumb)
            #expect(try await rig.verify(print, with: "whorl") == true)
            await rig.tearDown()
        }

        @Test(arguments: [DeviceErrorCode.general, .notSupported, .proto, .dataInvalid, .dataNotFound,
                          .dataFull, .dataDuplicate, .tooHot])
        func verifyEndsWithTheTypedDeviceError(code: DeviceErrorCode) async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("whorl")
            let (events, seen) = rig.scripted([.error(code.rawValue)])
            let error = await #expect(throws: FingerprintError.self) {
                try await rig.reader.verify(print, events: events)
            }
            _ = await seen.value
            guard case .device(let actual, _)? = error else {
                Issue.record("expected a device error \(code.rawValue), got \(String(describing: error))")
                return
            }
            #expect(actual == code)
            #expect(error?.isDisconnected == false)
            await rig.tearDown()
        }
    }
}
