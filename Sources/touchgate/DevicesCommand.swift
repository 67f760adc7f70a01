import ArgumentParser
import FingerprintKit

/// `touchgate devices`: the readers libfprint finds.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List fingerprint readers.",
        discussion: "Exit status 0 when at least one reader is found, 2 when none is.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let context = await FingerprintContext()
            let readers = await context.readers().map(\.info)
            if readers.isEmpty { throw Failure.noReader(ReaderDiagnostics.noReaderMessage()) }
            let text = readers.enumerated().map { index, info in
                "\(index == 0 ? "*" : " ") \(info.deviceID)  \(info.name)  [driver \(info.driver), \(info.scanType.rawValue), "
                    + "\(info.enrollStages) enroll scans; \(info.features.names.joined(separator: ", "))]"
            }.joined(separator: "\n")
            console.result([("devices", .array(readers.map(Self.json)))], text: text)
            return Exit.success
        }
    }

    static func json(_ info: ReaderInfo) -> JSON {
        .object([
            ("device-id", .string(info.deviceID)), ("driver", .string(info.driver)), ("name", .string(info.name)),
            ("scan-type", .string(info.scanType.rawValue)), ("enroll-stages", .int(info.enrollStages)),
            ("features", .array(info.features.names.map(JSON.string))),
        ])
    }
}
