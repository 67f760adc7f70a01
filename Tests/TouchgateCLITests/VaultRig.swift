import Foundation
import Testing
import TouchgateTestSupport

/// A ``CLIRig`` with a vault: passphrases go in on standard input through
/// `--passphrase-fd 0` (never on touchgate's command line), Argon2id at its minimum cost
/// (`init --kdf minimum`, the hidden option that exists for tests).
struct VaultRig {
    static let passphrase = "correct horse battery staple"

    var rig: CLIRig

    init() throws {
        rig = try CLIRig()
    }

    var home: TemporaryDirectory { rig.home }
    var finger: VirtualImageFinger { rig.finger }
    var databasePath: String { rig.dataDirectory + "/touchgate.sqlite" }

    /// Standard input holding `lines`, one per line.
    static func lines(_ lines: String...) -> Data { Data(lines.map { $0 + "\n" }.joined().utf8) }

    /// Runs touchgate, answering each prompt with the next of `prints`.
    func run(_ arguments: [String], presenting prints: [String] = [], stdin: Data? = nil) async throws -> CLIResult {
        try await rig.run(arguments, presenting: prints, stdin: stdin)
    }

    /// Runs touchgate in a new session (`setsid --wait`), so it has no terminal to ask on
    /// even when the tests themselves run in one.
    func runWithoutTerminal(_ arguments: [String], stdin: Data? = nil) async throws -> CLIResult {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/setsid"),
                     "this test needs setsid from util-linux: apt-get install util-linux")
        var process = rig.process
        process.wrapper = ["/usr/bin/setsid", "--wait"]
        return try await process.run(arguments, stdin: stdin)
    }

    /// A runner with a virtual_image socket of its own (the driver reads its socket per
    /// process, so processes running at once each need one) and a finger presenting `prints`.
    func ownReader(_ name: String, presenting prints: [String]) -> (CLIProcess, VirtualImageFinger) {
        let finger = VirtualImageFinger(socketPath: home.path("\(name).socket"))
        var process = rig.process
        process.environment["FP_VIRTUAL_IMAGE"] = finger.socketPath
        finger.present(prints)
        return (process, finger)
    }

    /// Runs touchgate on a new pseudo-terminal (script(1)), typing `lines` (from files, so
    /// they are on no command line) one a second after the first two seconds; the finger
    /// presents `prints`. Standard output holds everything the terminal showed; touchgate's
    /// standard error stays apart (so the finger sees its prompts) when `errorsApart`.
    func onTerminal(_ arguments: [String], typing lines: [String], presenting prints: [String] = [],
                    errorsApart: Bool = false) async throws -> CLIResult
    {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
                     "this test needs script from bsdutils: apt-get install bsdutils")
        var feed = "sleep 2"
        for (index, line) in lines.enumerated() {
            let file = home.path("typed-\(UUID().uuidString)-\(index)")
            try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: file))
            feed += "; cat '\(file)'; sleep 1"
        }
        var process = rig.process
        let command = errorsApart ? "\"$* 2>&3\" /dev/null 3>&2" : "\"$*\" /dev/null"
        process.wrapper = ["/bin/sh", "-c", "(\(feed); sleep 1) | /usr/bin/script -q -e -c \(command)", "sh"]
        finger.present(prints)
        let finger = self.finger
        return try await process.run(arguments) { line, _ in finger.handle(line) }
    }

    /// Runs a command that needs the passphrase, giving it on descriptor 0.
    func withPassphrase(_ arguments: [String], _ passphrase: String = VaultRig.passphrase,
                        presenting prints: [String] = []) async throws -> CLIResult {
        try await run(arguments + ["--passphrase-fd", "0"], presenting: prints, stdin: Self.lines(passphrase))
    }

    /// `init` then `unlock`, both required to succeed.
    func initAndUnlock() async throws {
        let created = try await withPassphrase(["init", "--kdf", "minimum"])
        try #require(created.status == 0, "init: \(created.stderrLines)")
        let unlocked = try await withPassphrase(["unlock"])
        try #require(unlocked.status == 0, "unlock: \(unlocked.stderrLines)")
    }

    /// Enrolls `print` as `finger` with the passphrase (and `--yes`: it destroys any
    /// biometry-current-set secret without asking); required to succeed.
    func enroll(_ print: String, finger: String = "right-index") async throws {
        let result = try await withPassphrase(["enroll", "--json", "--yes", "--finger", finger], presenting: [print])
        try #require(result.status == 0, "enroll \(print): \(result.stderrLines)")
    }

    /// Stores `value` under `name`; required to succeed.
    func add(_ name: String, _ value: String, policy: String, fresh: Bool = false) async throws {
        let result = try await run(["secret", "add", name, "--policy", policy] + (fresh ? ["--fresh"] : []),
                                   stdin: Data(value.utf8))
        try #require(result.status == 0, "secret add \(name): \(result.stderrLines)")
    }

    /// `secret get NAME --json` presenting `prints`.
    func get(_ name: String, presenting prints: [String] = []) async throws -> CLIResult {
        try await run(["secret", "get", name, "--json"], presenting: prints)
    }

    /// `status --json`, parsed.
    func status() async throws -> [String: Any] {
        let result = try await run(["status", "--json"])
        try #require(result.status == 0, "status: \(result.stderrLines)")
        return try #require(result.json)
    }

    /// The `lockout` object of `status --json`.
    func lockout() async throws -> [String: Any] {
        try #require(try await status()["lockout"] as? [String: Any])
    }

    /// `audit export`, required to succeed: one parsed JSON object per record, oldest first
    /// (the seal, the export's last line, left out).
    func auditTrail() async throws -> [[String: Any]] {
        try Self.exportedRecords(try await run(["audit", "export"]))
    }

    /// The records of an `audit export` run, required to have succeeded and to end in its seal.
    static func exportedRecords(_ export: CLIResult) throws -> [[String: Any]] {
        try #require(export.status == 0, "audit export: \(export.stderrLines)")
        let lines = try export.stdout.split(separator: "\n").map { line in
            try #require((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                         "audit export wrote a line that is not a JSON object: \(line)")
        }
        try #require(lines.last?["seal"] is [String: Any], "audit export did not end in its seal: \(export.stdout)")
        return Array(lines.dropLast())
    }

    /// Runs SQL on the database file with the sqlite3 shell, as an attacker with the file would.
    func sql(_ statement: String) async throws -> String {
        let tool = "/usr/bin/sqlite3"
        try #require(FileManager.default.isExecutableFile(atPath: tool),
                     "these tests edit the database with the sqlite3 shell: apt-get install sqlite3")
        let result = try await runProgram(tool, [databasePath, statement])
        try #require(result.status == 0, "sqlite3 failed on: \(statement): \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension CLIResult {
    /// How many times a finger was asked for.
    var fingerPrompts: Int { stderrLines.filter(VirtualImageFinger.isPrompt).count }
    /// What `secret get` released: the `value` of its `--json` result, or standard output as is.
    var released: String { (json?["value"] as? String) ?? stdout }
    /// The `error` code of a `--json` failure.
    var errorCode: String? { json?["error"] as? String }
}

extension [[String: Any]] {
    /// The audit records whose `fields` have exactly these text values; a `nil` value asks
    /// for the field to be absent.
    func matching(_ fields: [String: String?]) -> [[String: Any]] {
        filter { record in fields.allSatisfy { key, value in record[key] as? String == value } }
    }
}
