import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// What a print says about itself: username (optional), description, and that the
    /// template never shows in text.
    @Suite struct PrintMetadata {
        @Test func usernameIsOptionalAndDescriptionRoundTrips() async throws {
            let rig = try await VirtualDeviceRig.make(storage: false)
            defer { rig.directory.remove() }
            for _ in 0..<5 { try rig.send("SCAN meta-1") }
            let bare = try await within(.seconds(10)) { [reader = rig.reader] in
                try await reader.enroll(finger: .leftRing, username: nil)
            }
            #expect(bare.username == nil)
            #expect(bare.description == nil)

            for _ in 0..<5 { try rig.send("SCAN meta-2") }
            let described = try await within(.seconds(10)) { [reader = rig.reader] in
                try await reader.enroll(finger: .leftRing, username: "alice", description: "touchgate alice left-ring")
            }
            #expect(described.username == "alice")
            #expect(described.description == "touchgate alice left-ring")
            let copy = try await Print(serialized: described.serialized)
            #expect(copy.description == "touchgate alice left-ring")
            #expect(copy.username == "alice")
            await rig.tearDown()
        }

        @Test func textNeverShowsTheTemplate() async throws {
            let rig = try await VirtualImageRig.make()
            defer { rig.directory.remove() }
            let print = try await rig.enroll("whorl")
            var dumped = ""
            dump(print, to: &dumped)
            for text in ["\(print)", String(describing: print), String(reflecting: print), dumped] {
                #expect(text.contains("virtual_image"))
                #expect(!text.contains("serialized"), "\(text)")
                #expect(!text.contains(String(print.serialized.prefix(8).map(String.init).joined(separator: ", "))))
            }
            await rig.tearDown()
        }
    }
}
