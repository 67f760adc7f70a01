import Foundation
import Testing
import TouchgateTestSupport

/// A private HOME and data directory, a virtual_image reader and the built binary.
struct CLIRig {
    let home: TemporaryDirectory
    let finger: VirtualImageFinger
    var process: CLIProcess

    init(drivers: String = "virtual_image") throws {
        home = try TemporaryDirectory("touchgate-e2e")
        finger = VirtualImageFinger(socketPath: home.path("virtual-image.socket"))
        process = CLIProcess(environment: [
            "HOME": home.url.path,
            "XDG_DATA_HOME": home.path("data"),
                        "FP_VIRTUAL_IMAGE": finger.socketPath,
            "FP_DRIVERS_WHITELIST": drivers,
        ])
    }

    var dataDirectory: String { home.path("data/touchgate") }

    /// Runs touchgate, answering each prompt with the next of `prints`.
    func run(_ arguments: [String], presenting prints: [String] = [], stdin: Data? = nil) async throws -> CLIResult {
        finger.present(prints)
        let finger = self.finger
        return try await process.run(arguments, stdin: stdin) { line, _ in finger.handle(line) }
    }

    /// Enrolls `print` as `fingerName` (five scans).
    @discardableResult
    func enroll(_ print: String, finger fingerName: String = "right-index", extra: [String] = []) async throws -> CLIResult {
        try await run(["enroll", "--json", "--finger", fingerName] + extra, presenting: [print])
    }
}
