import ArgumentParser
import FingerprintKit
import Foundation
import TouchgateImageIO

/// `touchgate capture`: saves one image from a reader that can capture.
struct Capture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Capture a fingerprint image to a PGM or PNG file.",
        discussion: """
            The format follows the extension: .pgm writes binary 8-bit PGM, .png writes 8-bit \
            grey PNG. The image is biometric data: the file is created private (mode 0600). \
            Match-on-chip readers cannot capture (exit status 5).
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions

    @Option(name: .shortAndLong, help: "The file to write (.pgm or .png).")
    var output: String

    enum Format { case pgm, png }

    var format: Format? {
        switch (output as NSString).pathExtension.lowercased() {
        case "pgm": return .pgm
        case "png": return .png
        default: return nil
        }
    }

    func validate() throws {
        if format == nil { throw ValidationError("the output must end in .pgm or .png") }
    }

    func run() async throws {
        let output = self.output
        let format = self.format!
        let device = readerOptions.device
        try await CommandRunner.run(json: common.json) { console in
            let image = try await ReaderSession.with(device: device, console: console) { session in
                try await session.prompting("capture", finger: nil) { events in
                    try await session.reader.capture(waitForFinger: true, events: events)
                }
            }
            let grey = GreyImage(width: image.width, height: image.height, pixels: image.pixels)
            let data = format == .png ? grey.pngData() : grey.pgmData()
            try writePrivately(data, to: output)
            console.result([("result", "captured"), ("output", .string(output)), ("width", .int(image.width)),
                            ("height", .int(image.height))],
                           text: "Wrote \(image.width)x\(image.height) image to \(output).")
            return Exit.success
        }
    }
}

/// Writes `data` to `path` with mode 0600 through a temporary file in the same directory,
/// so that an interrupted write never leaves a partial file where the old one was.
func writePrivately(_ data: Data, to path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    var template = Array(((directory.isEmpty ? "." : directory) + "/.touchgate-XXXXXX").utf8CString)
    let fd = mkstemp(&template)
    guard fd >= 0 else {
        throw Failure.dataError("cannot write to \(directory.isEmpty ? "." : directory): \(String(cString: strerror(errno)))")
    }
    let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    let synced = fsync(fd) == 0
    close(fd)
    guard written == data.count, synced, rename(temporary, path) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        throw Failure.dataError("cannot write \(path): \(reason)")
    }
}
