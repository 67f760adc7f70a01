import FingerprintKit
import Foundation
import Testing
import TouchgateTestSupport

extension DeviceTests {
    /// The GLib thread carries a kernel name, so `ps -L` and backtraces show what it is.
    /// Threads that libraries start from it (libusb's event thread, umockdev's) inherit the
    /// name, as Linux gives a new thread its creator's, so other suites running in this
    /// process may add more: at least one is the loop's.
    @Suite struct GLibThread {
        @Test func theGLibThreadIsNamedInProc() async throws {
            configureVirtualEnvironment([:], drivers: "virtual_device")
            _ = await FingerprintContext()  // starts the GLib thread
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
            let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            #expect(names.contains("touchgate-glib"), "\(names)")
        }
    }
}
