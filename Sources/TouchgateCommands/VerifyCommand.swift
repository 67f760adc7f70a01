import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// `touchgate verify`: does the finger on the reader match an enrolled print?
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a finger against the enrolled prints.",
        discussion: """
            An authentication attempt like any other: refused during a lockout without opening the \
            reader, a no-match counted toward the lockout, every attempt audited. Exit status 0 on a \
            match, 1 on no match; 2 no reader, 3 nothing enrolled, 4 reader disconnected, 5 reader \
            error, 7 locked out, 130 cancelled. A poor scan is retried automatically (5 scans in all).
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions
    @OptionGroup var userOption: UserOption

    @Option(help: "Which finger to check, or `any` for any enrolled finger of the user.", completion: Completions.fingersOrAny)
    var finger: String = "any"

    func validate() throws {
        if finger != "any", Vocabulary.finger(finger) == nil {
            throw ValidationError("unknown finger '\(finger)'; use a name like right-index, or any")
        }
    }

    func run() async throws {
        let finger = self.finger == "any" ? nil : self.finger
        let (user, device) = (userOption.user, readerOptions.device)
        try await CommandRunner.run(json: common.json) { console in
            try await Printed.verify(service, user: user, finger: finger, device: device, console: console)
        }
    }
}

/// `touchgate identify`: whose finger is on the reader?
struct Identify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identify",
        abstract: "Find which enrolled user and finger is on the reader.",
        discussion: "Exit status 0 when a print matched, 1 when none did; other statuses as for verify.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions

    func run() async throws {
        let device = readerOptions.device
        try await CommandRunner.run(json: common.json) { console in
            let report = try await service.identify(device: device, interaction: TerminalInteraction(console: console))
            return Printed.match(report, console: console) { StoredText.escaped("\($0.user ?? "?") \($0.finger ?? "?")") }
        }
    }
}
