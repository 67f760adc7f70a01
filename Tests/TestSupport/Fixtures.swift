public import Foundation
public import TouchgateImageIO

/// Paths to the package and to the shared fixtures (`../shared/fixtures` beside the checkout).
public enum Fixtures {
    /// The package root.
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `shared/fixtures`; `TOUCHGATE_FIXTURES` overrides. Traps with a clear message when missing,
    /// so a test without its data fails instead of passing vacuously.
    public static var directory: URL {
        if let override = ProcessInfo.processInfo.environment["TOUCHGATE_FIXTURES"] {
            return URL(fileURLWithPath: override)
        }
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures")
        precondition(FileManager.default.fileExists(atPath: url.path),
                     "fixtures not found at \(url.path): check out shared/ beside the project or set TOUCHGATE_FIXTURES")
        return url
    }

    /// The four NIST prints.
    public static let printNames = ["whorl", "arch", "loop-right", "tented_arch"]

    /// A NIST print as the grey image virtual_image takes.
    public static func print(_ name: String) throws -> GreyImage {
        try GreyImage(pgm: Data(contentsOf: directory.appendingPathComponent("prints/\(name).pgm")))
    }

    /// A umockdev recording's folder.
    public static func recording(_ driver: String) -> URL {
        directory.appendingPathComponent("umockdev/\(driver)")
    }

    /// A umockdev recording kept in the project (`Tests/Fixtures/umockdev`, see its README).
    public static func projectRecording(_ driver: String) -> URL {
        packageRoot.appendingPathComponent("Tests/Fixtures/umockdev/\(driver)")
    }
}

/// A private temporary directory, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    /// Its path.
    public let url: URL

    /// Makes one (mode 0700) under the system temp dir.
    public init(_ prefix: String = "touchgate-test") throws {
        var template = Array("\(NSTemporaryDirectory())/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        url = URL(fileURLWithPath: String(cString: made))
    }

    /// Deletes it and all it holds.
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    /// A path inside it.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}
