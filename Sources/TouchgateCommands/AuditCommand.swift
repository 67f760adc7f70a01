public import ArgumentParser
import FoundationEssentials
import Synchronization
import TouchgateClient
import TouchgateAPI
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate audit`: the hash-chained record of every decision.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Show, verify and export the audit trail.",
        subcommands: [Show.self, Verify.self, Export.self, PublicKey.self, Ship.self, Prune.self])

    /// `touchgate audit show`.
    struct Show: AsyncParsableCommand {
        /// How many records a terminal gets without `--limit` or `--all`.
        static let terminalLimit = 50

        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show audit records (as stored: run `audit verify` to trust them).",
            discussion: """
                On a terminal: the newest \(terminalLimit) records first, then a line saying how many \
                more there are, through a pager ($PAGER, else less -FRX) when they do not fit the \
                window. Otherwise (a pipe, a file, --json): every record, oldest first. --limit N keeps \
                the N most recent matching records in either case; --oldest-first and --newest-first \
                choose the order. Times are UTC.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var filters: AuditFilterOptions
        @Flag(help: "Every matching record, even on a terminal.")
        var all = false
        @Flag var order: RecordOrder?
        @Flag(help: "Write to the terminal directly, never through a pager.")
        var noPager = false

        func validate() throws {
            if all && filters.limit != nil { throw ValidationError("--all and --limit cannot be used together") }
        }

        func run() async throws {
            let terminal = !common.json && isatty(1) == 1
            var filter = filters.filter(now: Date())
            filter.order = order?.wire ?? (terminal ? .newestFirst : .oldestFirst)
            if terminal && filter.limit == nil && !all { filter.limit = Self.terminalLimit }
            let (request, unfiltered) = (filter, filters.isEmpty)
            let page = PageText()
            try await CommandRunner.run(json: common.json) { console in
                let records = try await service.auditShow(request)
                guard terminal else {
                    console.result("records", RecordList(records: records),
                                   text: records.isEmpty ? Self.none(unfiltered) : records.map(Self.line).joined(separator: "\n"))
                    return ExitStatus.success
                }
                var lines = [records.isEmpty ? Self.none(unfiltered) : Self.table(records)]
                if let limit = request.limit, records.count == limit {
                    let more = try await service.auditCount(request) - records.count
                    if more > 0 {
                        lines.append("… \(more) older record\(more == 1 ? "" : "s") not shown: --limit N or --all shows "
                                     + "more; --since, --until, --item, --event and --outcome narrow them")
                    }
                }
                page.text = lines.joined(separator: "\n") + "\n"
                return ExitStatus.success
            }
            // Paged once the request is over, so that Ctrl-C in the pager cancels nothing.
            if let text = page.text { await Pager.show(text, allowed: !noPager) }
        }

        /// The records as a table, for a terminal (a pipe gets ``line(_:)``s, for grep).
        static func table(_ records: [AuditRecordReport]) -> String {
            var table = TextTable("SEQ", "TIME", "USER", "EVENT", "OUTCOME", "ITEM", "REASON")
            for record in records {
                table.add("#\(record.seq)", record.time.formatted(.iso8601), StoredText.escaped(record.login),
                          StoredText.escaped(record.event), StoredText.escaped(record.outcome),
                          record.item.map { StoredText.escaped($0) } ?? "", StoredText.escaped(record.reason))
            }
            return table.text
        }

        /// One record on one line: `#seq time login event outcome 'item': reason`.
        @Sendable static func line(_ record: AuditRecordReport) -> String {
            let item = record.item.map { " '\($0)'" } ?? ""
            return StoredText.escaped("#\(record.seq) \(record.time.formatted(.iso8601)) \(record.login) "
                                      + "\(record.event) \(record.outcome)\(item): \(record.reason)")
        }

        /// What is said when nothing is shown.
        @Sendable static func none(_ unfiltered: Bool) -> String {
            unfiltered ? "no records" : "no matching records"
        }
    }

    /// `touchgate audit verify`.
    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check the audit chain.",
            discussion: """
                Exit status 0 when every record, the head row and the authenticated state check out; 6 \
                when a record was edited, inserted, deleted or reordered, the log was wiped, or the \
                state was edited outside touchgate, naming the first thing that cannot be trusted.

                With --public-key FILE, checks an export instead (`touchgate audit export`, read from \
                --input FILE or standard input) against the public key of the machine that wrote it \
                (`touchgate audit public-key` there), holding no secret: every record must be one the \
                machine signed, none edited, inserted, removed or reordered, none missing at the end, \
                and none missing at the beginning but those a prune recorded in the trail removed (each \
                such prune is listed: when, how many records, up to which). \
                This needs no vault and no daemon, so an auditor can run it anywhere.
                """)

        @OptionGroup var common: CommonOptions
        @Option(help: ArgumentHelp("Check an export against this public key file instead of the local trail.",
                                   valueName: "FILE"))
        var publicKey: String?
        @Option(help: ArgumentHelp("The export to check with --public-key (default: standard input).",
                                   valueName: "FILE"))
        var input: String?

        func validate() throws {
            if input != nil && publicKey == nil { throw ValidationError("--input needs --public-key") }
        }

        func run() async throws {
            let (publicKeyFile, input) = (publicKey, input)
            try await CommandRunner.run(json: common.json) { console in
                if let publicKeyFile {
                    let report = try ServiceChoice.requiredHost.checkExport(input: input, publicKeyFile: publicKeyFile)
                    let first = report.first.map { "records \($0)…\(report.signedThrough)" } ?? "no records"
                    var text = "export intact: \(report.records) records (\(first)) signed by the registered key, "
                        + "trail \(report.trail)"
                    for prune in report.prunes {
                        text += "\npruned by record \(prune.seq) on \(prune.time.formatted(.iso8601)): "
                            + "\(prune.removed) record(s), up to record \(prune.through)"
                    }
                    console.result("intact", report, text: text)
                    return ExitStatus.success
                }
                let count = try await service.auditVerify()
                console.result("intact", RecordCount(records: count), text: "audit log intact: \(count) records")
                return ExitStatus.success
            }
        }
    }

    /// `touchgate audit public-key`.
    struct PublicKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "public-key",
            abstract: "Print the public key that signs this trail, to register with a verifier.",
            discussion: """
                The Ed25519 public key (64 hex digits) whose signature seals the trail's public chain. \
                Give it to whoever checks exports (`touchgate audit verify --public-key FILE`) or runs \
                the fleet collector. It reveals nothing secret. It changes only when the signing key \
                file was lost; the trail then records that, with the new key.
                """)

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let key = try await service.auditPublicKey()
                console.result("public-key", PublicKeyReport(publicKey: key), text: key)
                return ExitStatus.success
            }
        }
    }

    /// `touchgate audit prune`.
    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
            abstract: "Delete audit records older than a date (never younger than six years).",
            discussion: """
                Records are kept at least six years (HIPAA retention; longer where root configured \
                touchgated so): a date inside the retention is refused (exit status 11), naming the \
                latest date allowed, and nothing is removed; --force does not change that. On a machine \
                that ships its trail to a fleet collector, records the collector has not confirmed are \
                kept too, unless --force is given. Needs the passphrase (terminal or --passphrase-fd N); \
                the chain stays verifiable and the prune itself is recorded with how many records it \
                removed, which `audit verify --public-key` shows. Export the trail first if it must be \
                archived.
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var passphrase: PassphraseOptions
        @Option(help: ArgumentHelp("Delete records before this day (UTC).", valueName: "YYYY-MM-DD"))
        var before: String
        @Flag(help: "Also delete records the fleet collector has not confirmed (never records inside the retention).")
        var force = false

        var cutoff: Date? {
            var calendar = Calendar(identifier: .gregorian)
            // GMT by value: without ICU no zone is known by name (TimeZone(identifier: "UTC") is nil).
            calendar.timeZone = .gmt
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
                let removed = try await service.auditPrune(before: cutoff, force: force,
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
            commandName: "export",
            abstract: "Write audit records as JSON lines, with their chain fields.",
            discussion: """
                One JSON object per line, oldest first: the keys of `audit show --json` plus \
                unix-time (the exact stored time), boot-id, prev-mac and mac (lowercase hex): \
                everything each record's MAC covers; and trail, prev-chain and chain, the public \
                chain. The last line is {"seal": {...}}, the signed head that `audit verify \
                --public-key` checks an unfiltered export against. JSON is the only format, so \
                --json changes only the form of an error. The filters are those of `audit show`; \
                without them every record is written. --format ocsf and --format ecs write the same \
                records for a SIEM, one event per line, without the seal (docs/AUDIT-FORMATS.md \
                describes every field).
                """)

        @OptionGroup var common: CommonOptions
        @OptionGroup var filters: AuditFilterOptions
        @Option(help: ArgumentHelp("json (Touchgate's records and seal), ocsf (OCSF 1.1 Authentication, class 3002) "
                                   + "or ecs (Elastic Common Schema 8.11).", valueName: "FORMAT"))
        var format: AuditExportFormat = .json

        func run() async throws {
            let (filter, format) = (filters.filter(now: Date()), format)
            try await CommandRunner.run(json: common.json) { _ in
                _ = try await service.auditExport(filter, format: format) { Console.write($0, to: 1) }
                return ExitStatus.success
            }
        }
    }
}

extension Audit {
    /// `touchgate audit ship`.
    struct Ship: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ship",
            abstract: "Send the records the fleet collector does not hold yet, then the seal.",
            discussion: """
                Reads the root-owned fleet configuration (default \(Vocabulary.fleetConfiguration); \
                docs/FLEET.md) and sends this trail's new records to the collector's PostgreSQL \
                database in batches, one transaction each, then the signed seal. A local cursor moves only after \
                each commit, so an interrupted shipment loses nothing and repeats nothing: run it again. \
                Through touchgated, the daemon ships with its own configuration: your trail, or \
                as root every user's (one line, or JSON line, per trail). \
                After each batch the collector must prove, against the fleet log checkpoint kept \
                here from the shipment before, that its log only grew and holds the batch; only then \
                does the cursor move. \
                Exit status 0 when everything up to the seal is shipped; 6 when the collector's log \
                was cut, rewritten or replaced, or it holds other records at this trail's sequence \
                numbers (nothing is marked shipped; audited here as audit.ship); 69 when the database \
                cannot be reached (the records stay queued here); 12 when that happens with more \
                records waiting than the backlog limit; 11 when the configuration file is not owned \
                by root or others can write it.
                """)

        @OptionGroup var common: CommonOptions
        @Option(help: ArgumentHelp("The fleet configuration file (root-owned; default \(Vocabulary.fleetConfiguration)). "
                                   + "Not with touchgated, which ships with its own.", valueName: "FILE"))
        var config: String?
        @Flag(help: ArgumentHelp("Forget the fleet log checkpoint kept here and accept the collector's log as it is "
                                 + "now: only after the collector was rebuilt on purpose (through touchgated: root only)."))
        var newLog = false

        func run() async throws {
            let (path, newLog) = (config, newLog)
            try await CommandRunner.run(json: common.json) { console in
                let reports: [AuditShipReport]
                if service.mode == .personal {
                    reports = [try await ServiceChoice.requiredHost.shipPersonalAudit(configurationPath: path, newLog: newLog)]
                } else if let daemon = service as? DaemonClient {
                    // The daemon's configuration decides where its trails go: a client
                    // naming another collector could move the cursor past records the
                    // fleet never got.
                    guard path == nil else {
                        throw ServiceError(.usage, "touchgated ships to the collector of its own fleet configuration; "
                                           + "drop --config (or run in personal mode with TOUCHGATE_SOCKET=)")
                    }
                    reports = try await daemon.shipAudit(newLog: newLog)
                } else {
                    throw ServiceError(.usage, "audit ship needs the personal store or touchgated")
                }
                for report in reports {
                    console.result("shipped", report, text: "shipped \(report.shipped) record(s) of \(report.user)'s trail "
                                   + "\(report.trail) as machine \(report.machine): the collector holds records up to "
                                   + "\(report.through), sealed"
                                   + (report.logSize.map { "; its fleet log (\($0) entries) proved to hold them" } ?? ""))
                }
                return ExitStatus.success
            }
        }
    }
}

/// The filters `audit show` and `audit export` share.
struct AuditFilterOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Only records from this moment on: \(TimeArgument.forms).", valueName: "time"))
    var since: String?
    @Option(help: ArgumentHelp("Only records before this moment (the same forms as --since).", valueName: "time"))
    var until: String?
    @Option(help: ArgumentHelp("Only records about this item.", valueName: "name"))
    var item: String?
    @Option(help: ArgumentHelp(
        "Only this event: \(Vocabulary.auditEvents.joined(separator: ", ")). Repeat it, or separate "
            + "names with commas, for several.",
        valueName: "event"))
    var event: [String] = []
    @Option(help: ArgumentHelp(
        "Only this outcome: success, failure, denied or error. Repeat it, or separate names with commas, for several.",
        valueName: "outcome"))
    var outcome: [String] = []
    @Option(help: ArgumentHelp("Only the N most recent matching records.", valueName: "N"))
    var limit: Int?

    func validate() throws {
        for (name, value) in [("--since", since), ("--until", until)] {
            if let value, TimeArgument.parse(value, now: Date()) == nil {
                throw ValidationError("\(name) takes \(TimeArgument.forms), not \(value.debugDescription)")
            }
        }
        if let limit, limit < 1 { throw ValidationError("--limit takes a number of records, 1 or more") }
    }

    /// Whether no condition was given (a limit is not one).
    var isEmpty: Bool { since == nil && until == nil && item == nil && event.isEmpty && outcome.isEmpty }

    /// The filter these options ask for, oldest first; times ago count back from `now`.
    func filter(now: Date) -> AuditFilter {
        func names(_ values: [String]) -> [String] {
            values.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces() }
                .filter { !$0.isEmpty }
        }
        return AuditFilter(since: since.flatMap { TimeArgument.parse($0, now: now) },
                           until: until.flatMap { TimeArgument.parse($0, now: now) },
                           item: item, events: names(event), outcomes: names(outcome), limit: limit)
    }
}

/// `--oldest-first` or `--newest-first`.
enum RecordOrder: String, EnumerableFlag {
    case oldestFirst, newestFirst

    /// The order on the wire.
    var wire: AuditFilter.Order { self == .oldestFirst ? .oldestFirst : .newestFirst }

    static func help(for value: RecordOrder) -> ArgumentHelp? {
        value == .oldestFirst ? "Oldest first (the default when not on a terminal)."
            : "Newest first (the default on a terminal)."
    }
}

/// Text a command shows once its request is over (see ``Pager``).
final class PageText: Sendable {
    // The text, only touched under its lock.
    private let stored = Mutex<String?>(nil)

    /// The text, once set.
    var text: String? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
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

extension AuditExportFormat: ExpressibleByArgument {}
