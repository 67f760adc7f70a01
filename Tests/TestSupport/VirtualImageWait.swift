import Foundation

/// One announced wait on the virtual_image reader, as FingerprintKit writes it beside the
/// driver's socket (`<socket>.waiting`: "PID COUNT\n").
///
/// The writer truncates the file and then writes it, so a reader can find it empty (or, in
/// principle, half written) in between. Taking that for a new wait presented a second image
/// that the driver kept for the next program's wait (the quick start's whorl was refused
/// with the arch still queued): only a whole line counts.
public struct VirtualImageWait: Equatable, Sendable {
    /// The process that holds the reader (its listener; another process is another connection).
    public let process: Int32
    /// How many waits that process has announced.
    public let count: Int

    /// The wait `text` announces, or nil unless it is one whole "PID COUNT\n" line.
    public init?(text: String) {
        guard text.hasSuffix("\n") else { return nil }
        let fields = text.dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 2, let process = Int32(fields[0]), let count = Int(fields[1]),
              process > 0, count > 0 else { return nil }
        self.process = process
        self.count = count
    }

    /// The wait announced in `marker` now, or nil when there is none or it is being rewritten.
    public static func announced(in marker: String) -> VirtualImageWait? {
        (try? String(contentsOfFile: marker, encoding: .utf8)).flatMap(VirtualImageWait.init(text:))
    }
}
