import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate devices`: the readers libfprint finds.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List fingerprint readers.",
        discussion: """
            Exit status 0, also when none is found: the list is then empty (--json) and standard \
            error says why and what to do.
            """)

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let inventory = try await service.devices()
            let readers = inventory.readers
            if let explanation = inventory.explanation { console.warning(explanation) }
            // Names come from drivers and, through fprintd, from whatever answers on the bus: escaped.
            let text = readers.enumerated().map { index, info in
                let (name, deviceID, driver) = (StoredText.escaped(info.name), StoredText.escaped(info.deviceID),
                                                StoredText.escaped(info.driver))
                guard info.backend == "fprintd" else {
                    return "\(index == 0 ? "*" : " ") \(deviceID)  \(name)  [driver \(driver), \(info.scanType), "
                        + "\(info.enrollStages) enroll scans; \(info.features.joined(separator: ", "))]"
                        + (info.temperature.map { $0 == "cold" ? "" : "  \($0)" + ($0 == "hot" ? ": let it cool down" : "") } ?? "")
                        + (info.open == true ? "  (held open by touchgated)" : "")
                }
                return "\(index == 0 ? "*" : " ") \(name)  [through fprintd, \(info.scanType), "
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
