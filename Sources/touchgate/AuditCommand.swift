import ArgumentParser
import Foundation
import TouchgateService
import TouchgateWire

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
                let records = try await service.auditRecords(AuditFilter(limit: limit))
                let text = records.map { record in
                    let item = record.item.map { " '\($0)'" } ?? ""
                    return StoredText.escaped("#\(record.seq) \(record.time.formatted(.iso8601)) \(record.login) "
                                              + "\(record.event) \(record.outcome)\(item): \(record.reason)")
                }.joined(separator: "\n")
                console.result("records", RecordList(records: records), text: records.isEmpty ? "no records" : text)
                return ExitStatus.success
            }
        }
    }

    /// `touchgate audit verify`.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the audit chain.",
            discussion: """
                Exit status 0 when every record, the head row and the authenticated state check out; 6 \
                when a record was edited, inserted, deleted or reordered, the log was wiped, or the \
                state was edited outside touchgate, naming the first thing that cannot be trusted.
                """)

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let count = try await service.verifyAudit()
                console.result("intact", RecordCount(records: count), text: "audit log intact: \(count) records")
                return ExitStatus.success
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
            let (cutoff, force, input, before) = (cutoff!, force, passphrase.input(), before)
            try await CommandRunner.run(json: common.json) { console in
                let removed = try await service.pruneAudit(before: cutoff, force: force,
                                                           interaction: TerminalInteraction(console: console, input: input))
                console.result("pruned", Removed(removed: removed),
                               text: "removed \(removed) audit record(s) older than \(before)")
                return ExitStatus.success
            }
        }
    }

    /// `touchgate audit export`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every record as one JSON object per line, with its chain MACs.")

        func run() async throws {
            try await CommandRunner.run(json: false) { _ in
                _ = try await service.exportAudit { Console.write($0, to: 1) }
                return ExitStatus.success
            }
        }
    }
}

/// `{"records": [...]}`.
struct RecordList: Encodable, Sendable {
    var records: [AuditRecordReport]
}

/// `{"records": N}`.
struct RecordCount: Encodable, Sendable {
    var records: Int
}

/// `{"removed": N}`.
struct Removed: Encodable, Sendable {
    var removed: Int
}
