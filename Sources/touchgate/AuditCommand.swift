import ArgumentParser
import Foundation
import TouchgateVault

/// `touchgate audit`: the hash-chained record of every decision.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show, verify and export the audit trail.",
        subcommands: [Show.self, Verify.self, Export.self, Prune.self])

    /// `touchgate audit show`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show audit records, oldest first (as stored: run `audit verify` to trust them).")

        @OptionGroup var common: CommonOptions
        @Option(help: "Only the last N records.")
        var limit: Int?

        func run() async throws {
            let limit = self.limit
            try await CommandRunner.run(json: common.json) { console in
                let records = try VaultContext.open().audit.records(limit: limit)
                let text = records.map { record in
                    let time = record.time.formatted(.iso8601)
                    let item = record.item.map { " '\($0)'" } ?? ""
                    return "#\(record.sequence) \(time) \(record.loginName) \(record.event) \(record.outcome)\(item): \(record.reason)"
                }.joined(separator: "\n")
                console.result([("records", .array(records.map(Self.json)))], text: records.isEmpty ? "no records" : text)
                return Exit.success
            }
        }

        static func json(_ record: AuditRecord) -> JSON {
            .object([
                ("seq", .int(Int(record.sequence))), ("time", .string(record.time.formatted(.iso8601))),
                ("boot-time", .number(record.bootTime)), ("uid", .int(Int(record.uid))),
                ("login", .string(record.loginName)), ("vault-user", .optional(record.vaultUser)),
                ("event", .string(record.event.rawValue)), ("item", .optional(record.item)),
                ("outcome", .string(record.outcome.rawValue)), ("reason", .string(record.reason)),
            ])
        }
    }

    /// `touchgate audit verify`.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the audit chain.",
            discussion: """
                Exit status 0 when every record and the head row check out; 6 when a record was \
                edited, inserted, deleted or reordered, naming the first record that cannot be trusted.
                """)

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                switch try VaultContext.open().audit.verify() {
                case .intact(let count):
                    console.result([("result", "intact"), ("records", .int(count))],
                                   text: "audit log intact: \(count) records")
                    return Exit.success
                case .broken(let sequence, let reason):
                    throw Failure(code: "audit-broken",
                                  message: "audit log broken at record \(sequence): \(reason)",
                                  status: Exit.dataError)
                }
            }
        }
    }

    /// `touchgate audit prune`.
    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete audit records older than a date (kept six years unless forced).",
            discussion: """
                Records younger than six years (HIPAA retention) are refused unless --force is given. \
                Needs the passphrase (terminal or --passphrase-fd N); the chain stays verifiable and the \
                prune itself is recorded. Export the trail first if it must be archived.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var passphrase: PassphraseOptions
        @Option(help: ArgumentHelp("Delete records before this day (UTC).", valueName: "YYYY-MM-DD"))
        var before: String
        @Flag(help: "Also delete records younger than six years.")
        var force = false

        var cutoff: Date? {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let parts = before.split(separator: "-").compactMap { Int($0) }
            guard parts.count == 3,
                  let date = calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2])),
                  calendar.component(.day, from: date) == parts[2] else { return nil }
            return date
        }

        func validate() throws {
            if cutoff == nil { throw ValidationError("--before takes a day as YYYY-MM-DD, such as 2019-01-31") }
        }

        func run() async throws {
            let (cutoff, force, input) = (self.cutoff!, force, passphrase.input())
            try await CommandRunner.run(json: common.json) { console in
                let context = try VaultContext.open()
                try context.checkPassphrase(input, purpose: "prune the audit trail")
                let removed = try context.audit.prune(before: cutoff, force: force, vaultUser: context.vault.owner)
                console.result([("result", "pruned"), ("removed", .int(removed))],
                               text: "removed \(removed) audit record(s) older than \(before)")
                return Exit.success
            }
        }
    }

    /// `touchgate audit export`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every record as one JSON object per line, with its chain MACs.")

        func run() async throws {
            try await CommandRunner.run(json: false) { _ in
                try VaultContext.open().audit.exportJSONLines { Console.write($0, to: 1) }
                return Exit.success
            }
        }
    }
}
