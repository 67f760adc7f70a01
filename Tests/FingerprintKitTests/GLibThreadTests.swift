import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// The GLib thread carries a kernel name, so `ps -L` and backtraces show what it is.
    @Suite struct GLibThread {
        @Test func theGLibThreadIsNamedInProc() async throws {
            configureVirtualEnvironment([:], drivers: "virtual_device")
            _ = await FingerprintContext()  // starts the GLib thread
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
            let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            #expect(names.filter { $0 == "touchgate-glib" }.count == 1, "\(names)")
        }
    }
}
