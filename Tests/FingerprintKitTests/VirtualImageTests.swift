import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    @Suite struct VirtualImage {
        @Test func enrollWhorlTakesFiveStagesAndMatchesOnlyItself() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let image = try Fixtures.print("whorl")
            let (events, seen) = rig.feeding(Array(repeating: image, count: 5))
            let print = try await rig.reader.enroll(finger: .rightIndex, username: "tester", events: events)
            let stages = await seen.value.compactMap { event -> Int? in
                if case .enrollStage(let completed, let total) = event, total == 5 { return completed }
                return nil
            }
            #expect(stages == [1, 2, 3, 4, 5])
            #expect(print.finger == .rightIndex)
            #expect(print.username == "tester")
            #expect(print.driver == "virtual_image")
            #expect(print.serialized.count > 1000, "an image print holds minutiae")

            #expect(try await rig.verify(print, with: "whorl") == true)
            for other in ["arch", "loop-right", "tented_arch"] {
                #expect(try await rig.verify(print, with: other) == false, "\(other) must not match whorl")
            }
            await rig.tearDown()
        }
    }
}
