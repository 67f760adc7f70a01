import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateClient
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate run --secret VAR=item … -- COMMAND ARGS…`: a command approved by a touch, run
/// with secrets it never prints back.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command with secrets after a touch that approves exactly that command.",
        discussion: """
            For commands an AI coding agent (or any program) runs for you. Before the touch you \
            see the command line, the working directory, the secrets by name, the reason and who \
            asks (the processes above this one); the touch approves exactly that, bound to a \
            digest of it all, and a new touch is needed every time. The secrets go into the \
            command's environment only. Everything it prints passes through a filter that \
            replaces each value, and its base64, hex, URL and JSON forms, with [VAR hidden] \
            before it reaches you (or the agent). A filter cannot stop a command that sends a \
            value elsewhere: approve only commands you would run yourself. Each approval or \
            refusal is recorded in the audit trail and signed into a receipt (--receipt FILE; \
            check it with touchgate receipt verify). With no terminal, the request is shown as a \
            desktop notification. Exit status: the command's own; 1 no match, 7 locked out, 8 \
            vault locked, 10 no such secret, 127 the command could not be started.
            """)

    @OptionGroup var readerOptions: ReaderOptions

    @Option(name: .customLong("secret"), help: ArgumentHelp(
        "A secret for the command's environment: the variable and the item (repeat for more).",
        valueName: "VAR=item"))
    var secrets: [String] = []

    @Option(name: .customLong("secret-file"), help: ArgumentHelp(
        "A secret as a file: VAR holds its path (/dev/fd/N, in memory only, sealed) for commands that read one.",
        valueName: "VAR=item"))
    var secretFiles: [String] = []

    @Option(help: "Why the command needs the secrets, shown before the touch and kept in the receipt.")
    var reason: String?

    @Option(help: ArgumentHelp("Write the signed receipt (JSON) to this new file.", valueName: "file"))
    var receipt: String?

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the command to run after --") }
        for text in secrets + secretFiles where SecretBinding(parsing: text) == nil {
            throw ValidationError("'\(StoredText.escaped(text))' is not VAR=item (a variable name, =, an item's name)")
        }
        if let receipt, access(receipt, F_OK) == 0 {
            throw ValidationError("'\(StoredText.escaped(receipt))' exists; name a new file for the receipt")
        }
    }

    func run() async throws {
        ApprovalPrompt.requireInstalledProgram()
        let directory = FileManager.default.currentDirectoryPath
        let (command, secrets, secretFiles, reason) = (self.command, self.secrets, self.secretFiles, self.reason)
        let device = readerOptions.device
        let receiptPath = receipt
        try await CommandRunner.run(json: false) { console in
            // The program as it will run, shown and bound: found here, not by the child's PATH.
            guard let resolved = ApprovedRun.resolved(command, in: directory) else {
                throw ServiceError(.execFailed, "cannot find a program '\(StoredText.escaped(command[0]))' to run "
                                   + "(not in PATH, or not executable); nothing was asked")
            }
            let request = ApprovalRequest(command: resolved, directory: directory,
                                          secrets: secrets.compactMap { SecretBinding(parsing: $0) }
                                              + secretFiles.compactMap { SecretBinding(parsing: $0, asFile: true) },
                                          reason: reason, channel: "run")
            if let problem = request.problem { throw ServiceError(.usage, problem) }
            let outcome = try await ApprovalPrompt.during(request) {
                try await ApprovedRun.run(request, service: ApprovalPrompt.service, device: device,
                                          interaction: TerminalInteraction(console: console), standardInput: 0,
                                          output: .passThrough, inDirectory: false)
            }
            if let receiptPath { try ReceiptFile.write(outcome.receipt, to: receiptPath) }
            if let refusal = outcome.refusal { throw refusal }
            return outcome.status ?? ExitStatus.success
        }
    }
}

/// The prompt for an approval where the person is: the terminal the command runs in, or a
/// desktop notification when it has none (an agent's tool, an MCP server).
enum ApprovalPrompt {
    /// Through touchgated, these commands run as the installed set-group-ID program, which
    /// the daemon verifies (``AgentGroup``): `touchgate-client` hands them to it.
    static func requireInstalledProgram() {
        if Invocation.daemonSocket() != nil { _ = ServiceChoice.requiredHost }
    }

    /// Where approvals are asked: touchgated, or in the personal mode touchgate agent when it
    /// hosts the store (it holds the unlocked key: the keyring has none), else this
    /// process's own service.
    static var service: any TouchgateRequests {
        if let path = Invocation.daemonSocket() { return DaemonClient(socketPath: path, requester: nil) }
        if let path = ServiceChoice.personalAgentSocket {
            return DaemonClient(socketPath: path, mode: .personal, requester: nil)
        }
        return ServiceChoice.requiredHost.personal(for: .thisProcess())
    }

    /// Shows the request on the terminal (the service's events) and, always, as a desktop
    /// notification: a terminal an agent's command runs on may be one the agent draws itself.
    /// The notification goes to the session's own bus (`/run/user/UID/bus`) when there is
    /// one, not to whatever bus the asker's environment names.
    static func during<T: Sendable>(_ request: ApprovalRequest, _ body: () async throws -> T) async throws -> T {
        let own = "/run/user/\(getuid())/bus"
        let bus = access(own, F_OK) == 0 ? "unix:path=\(own)" : ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
        return try await DesktopNotice.during(summary: "Touch the fingerprint reader to approve: \(request.headline)",
                                              body: request.summary.joined(separator: "\n"), bus: bus, body)
    }
}

/// A receipt written to a file of the caller's choosing: private, new, whole.
enum ReceiptFile {
    static func write(_ receipt: Receipt, to path: String) throws {
        try Array((WireCoding.line(receipt) + "\n").utf8).withUnsafeBytes { try PrivateFiles.create(path, bytes: $0) }
    }

    /// A receipt read from `path` (standard input for nil or `-`).
    static func read(_ path: String?) throws(ServiceError) -> Receipt {
        let data: Data?
        if let path, path != "-" {
            data = FileManager.default.contents(atPath: path)
            guard data != nil else { throw ServiceError(.notFound, "cannot read '\(StoredText.escaped(path))'") }
        } else {
            data = Data(FileInput.read(0) ?? [])
        }
        do {
            return try WireCoding.decoder().decode(Receipt.self, from: data ?? Data())
        } catch {
            throw ServiceError(.integrity, "not a touchgate receipt (a JSON object with statement, signature and "
                               + "public-key): \(ErrorText.describe(error))")
        }
    }
}

/// `touchgate receipt`: checking what the host signed.
struct ReceiptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipt",
        abstract: "Check a signed receipt of an approval.",
        subcommands: [Verify.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check a receipt's signature, offline with --public-key.",
            discussion: """
                Reads the receipt (touchgate run --receipt, the MCP tools, touchgate approve) from \
                FILE or standard input and checks its Ed25519 signature against --public-key (64 \
                hexadecimal digits, or a file holding them: what `touchgate audit public-key` \
                printed on the host), or against this host's own key when not given. With \
                --digest, the receipt must also be for exactly that request. Exit status 0 valid \
                and approved, 11 valid but refused, 6 not valid (changed, another key, another digest).
                """)

        @OptionGroup var common: CommonOptions

        @Option(help: ArgumentHelp("The signing key to trust: hex, or a file holding it.", valueName: "key"))
        var publicKey: String?

        @Option(help: "The digest the receipt must be for.")
        var digest: String?

        @Argument(help: "The receipt file (default: standard input).")
        var file: String?

        func run() async throws {
            let (keyArgument, expected, file) = (publicKey, digest, self.file)
            try await CommandRunner.run(json: common.json) { console in
                let receipt = try ReceiptFile.read(file)
                let key: String
                if let keyArgument {
                    key = (FileManager.default.contents(atPath: keyArgument).map { String(decoding: $0, as: UTF8.self) }
                        ?? keyArgument).trimmingWhitespace()
                } else {
                    key = try await service.auditPublicKey()
                }
                var report = ServiceChoice.requiredHost.checkReceipt(receipt, publicKey: key)
                if report.valid, let expected, report.statement?.digest.lowercased() != expected.lowercased() {
                    report = ReceiptCheckReport(valid: false, publicKey: key, statement: report.statement,
                                                problem: "signed, but for another request (digest \(report.statement?.digest ?? "none"))")
                }
                guard report.valid, let statement = report.statement else {
                    throw ServiceError(.integrity, "receipt not valid: \(report.problem ?? "unknown")")
                }
                let what = statement.command.map { "run " + $0.joined(separator: " ") } ?? "approve \(statement.action ?? "")"
                console.result("receipt", report, text: """
                    valid: \(statement.decision) at \(statement.time): \(StoredText.escaped(what))
                    digest \(statement.digest), asked by \(StoredText.escaped(statement.requester)), \
                    \(statement.match ?? statement.refusal ?? "")
                    """)
                return statement.approved ? ExitStatus.success : ExitStatus.refused
            }
        }
    }
}
