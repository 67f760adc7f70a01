import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// Serialized prints: damaged data is refused with a typed error, good data round-trips.
    @Suite struct PrintData {
        /// Expects `bytes` to be refused as invalid print data.
        func expectRefused(_ bytes: [UInt8], _ what: String) async {
            let error = await #expect(throws: FingerprintError.self, "\(what)") {
                _ = try await Print(serialized: bytes)
            }
            guard case .invalidPrintData? = error else {
                Issue.record("\(what): expected invalidPrintData, got \(String(describing: error))")
                return
            }
        }

        @Test func corruptBytesAreRefusedNotCrashedOn() async throws {
            await expectRefused([], "empty")
            var generator = SystemRandomNumberGenerator()
            for length in [1, 3, 16, 100, 5000] {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                await expectRefused(bytes, "\(length) random bytes")
                await expectRefused(Array("FP3".utf8) + bytes, "FP3 and \(length) random bytes")
            }

            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let blob = try await rig.enroll("whorl").serialized
            #expect(blob.starts(with: Array("FP3".utf8)))
            for length in [3, 4, 10, blob.count / 2, blob.count - 1] {
                await expectRefused(Array(blob.prefix(length)), "the first \(length) of \(blob.count) bytes")
            }
            await rig.tearDown()
        }

        @Test func aPrintRoundTripsThroughSerialized() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("loop-right", finger: .rightMiddle)
            let copy = try await Print(serialized: print.serialized)
            #expect(copy == print)
            #expect(copy.serialized == print.serialized)
            #expect(copy.finger == .rightMiddle)
            #expect(copy.username == "tester")
            #expect(copy.enrollDate != nil && copy.enrollDate == print.enrollDate)
            #expect(copy.driver == "virtual_image" && copy.deviceID == rig.reader.info.deviceID)
            #expect(try await rig.verify(copy, with: "loop-right") == true)
            await rig.tearDown()
        }
    }
}
