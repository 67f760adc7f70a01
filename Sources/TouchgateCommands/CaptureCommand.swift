import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateTerminal

/// `touchgate capture`: saves one image from a reader that can capture.
struct Capture: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
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

    var format: ImageFormat? {
        ImageFormat(rawValue: PathText.pathExtension(of: output).lowercased())
    }

    func validate() throws {
        if format == nil { throw ValidationError("the output must end in .pgm or .png") }
    }

    func run() async throws {
        let (output, format, device) = (output, format!, readerOptions.device)
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.capture(to: output, format: format, device: device,
                                                   interaction: TerminalInteraction(console: console))
            console.result("captured", report, text: "Wrote \(report.width)x\(report.height) image to \(output).")
            return ExitStatus.success
        }
    }
}
