import ArgumentParser
import TouchgateService
import TouchgateWire

/// `touchgate devices`: the readers libfprint finds.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List fingerprint readers.",
        discussion: """
            Exit status 0, also when none is found: the list is then empty (--json) and standard \
            error says why and what to do.
            """)

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let inventory = try await service.listReaders()
            let readers = inventory.readers
            if let explanation = inventory.explanation { console.warning(explanation) }
            let text = readers.enumerated().map { index, info in
                guard info.backend == "fprintd" else {
                    return "\(index == 0 ? "*" : " ") \(info.deviceID)  \(info.name)  [driver \(info.driver), \(info.scanType), "
                        + "\(info.enrollStages) enroll scans; \(info.features.joined(separator: ", "))]"
                }
                return "\(index == 0 ? "*" : " ") \(info.name)  [through fprintd, \(info.scanType), "
                    + "\(info.enrollStages) enroll scans; enroll with fprintd-enroll]"
            }.joined(separator: "\n")
            console.result("devices", ReaderList(devices: readers), text: readers.isEmpty ? nil : text)
            return ExitStatus.success
        }
    }
}

/// `{"devices": [...]}`.
struct ReaderList: Encodable, Sendable {
    var devices: [ReaderReport]
}
