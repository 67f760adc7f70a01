import ArgumentParser
import FoundationEssentials
import TouchgateFleet
import TouchgateShipping
import TouchgateVault
import TouchgateAPI
import TouchgateBasics

/// `touchgate-collector`: the fleet's central verifier and query tool (docs/FLEET.md).
@main
struct Collector: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchgate-collector",
        abstract: "Verify and query the audit trails every machine shipped to PostgreSQL.",
        discussion: """
            The database is named by --database (a libpq connection string or postgresql:// URL, \
            TLS settings included) or, without it, by $TOUCHGATE_COLLECTOR_DATABASE, else libpq's PG* \
            variables. Exit status: 0 success; 6 verify found a broken trail or log, or a witness \
            refused to cosign; 64 usage; 69 the database cannot be reached or refused a statement.
            """,
        version: Release.version,
        subcommands: [Init.self, Keygen.self, Register.self, Verify.self, Witness.self, Publish.self, ShowCheckpoint.self, Proof.self,
                      Query.self, Archive.self])
}

/// The options every subcommand shares.
struct DatabaseOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The collector's database (libpq connection string or URL).", valueName: "CONNINFO"))
    var database: String = ProcessInfo.processInfo.environment["TOUCHGATE_COLLECTOR_DATABASE"] ?? ""
    @Flag(help: "JSON lines on standard output instead of text.")
    var json = false

    /// Runs `body` with a connected collector; a failure is printed and becomes its exit status.
    func run(_ body: (FleetCollector) throws(ServiceError) -> Int32) throws {
        let status: Int32
        do {
            let collector = try FleetCollector(database: database)
            defer { collector.close() }
            status = try body(collector)
        } catch {
            let message = json ? WireCoding.line(error) : "touchgate-collector: \(error.message)"
            FileOutput.write(message + "\n", to: 2)
            throw ExitCode(error.exitStatus)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Writes a line to standard output.
    func say(_ line: String) {
        FileOutput.write(line + "\n", to: 1)
    }
}

extension Collector {
    /// `touchgate-collector init`.
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or upgrade the collector's tables (safe to run again).",
            discussion: """
                Also makes the group role touchgate_shipper, its grants and the row-level security \
                policies that let each machine (a role of that name in the group) add only its own \
                records; the fleet log starts empty with a random origin. Needs a role that may \
                create roles and tables.
                """)

        @OptionGroup var options: DatabaseOptions
        @Flag(help: "Print the schema's SQL instead, for a database administrator to apply.")
        var print = false

        func run() throws {
            if print {
                for migration in FleetSchema.migrations {
                    options.say("-- version \(migration.version)\n\(migration.sql)")
                }
                return
            }
            try options.run { collector throws(ServiceError) in
                let (before, after) = try collector.initialize()
                options.say(before == after ? "schema already at version \(after)"
                            : "schema upgraded from version \(before) to \(after)")
                try collector.keepMonths()
                return 0
            }
        }
    }

    /// `touchgate-collector register`.
    struct Register: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a public key that signs a machine's trails.",
            discussion: """
                The file holds what `touchgate audit public-key` printed on the machine. With the \
                system daemon, one key signs every trail of the machine; in personal mode each user's \
                store has its own key: register each of them under the same machine name. The \
                registration is a statement signed by the enrollment key (touchgate-collector keygen \
                --enrollment; keep it offline) and appended to the fleet log, so that an auditor \
                verifying with the enrollment key's public half trusts no key the database's \
                administrator added.
                """)

        @OptionGroup var options: DatabaseOptions
        @Option(help: "The machine's name, as its fleet.conf says (default there: its host name).")
        var machine: String
        @Option(help: ArgumentHelp("The public key file.", valueName: "FILE"))
        var publicKey: String
        @Option(help: ArgumentHelp("The enrollment key's private key file.", valueName: "FILE"))
        var enrollmentKey: String

        func run() throws {
            try options.run { collector throws(ServiceError) in
                let key = try PublicAuditCheck.publicKey(fromFile: publicKey)
                let enrollment = try KeyFiles.signer(enrollmentKey, type: SignedNote.ed25519, what: "enrollment")
                let added = try collector.register(machine: machine, publicKey: key, enrollment: enrollment)
                options.say(added ? "registered the key for machine \(machine) in the fleet log"
                            : "the key was already registered for machine \(machine)")
                return 0
            }
        }
    }

    /// `touchgate-collector keygen`.
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an enrollment key or a witness key.",
            discussion: """
                Writes the private key to FILE (mode 0600; an existing file is never overwritten) and its \
                public half, a verifier key, to FILE.pub and standard output. Give the public half to \
                auditors: `verify --enrollment-key FILE.pub`, `verify --witness-key FILE.pub`.
                """)

        @Option(help: "The key's name (a witness's: a name such as witness.example.org/audit).")
        var name: String
        @Flag(help: "A witness's key (cosignature/v1) instead of an enrollment key.")
        var witness = false
        @Option(help: ArgumentHelp("Where to write the private key.", valueName: "FILE"))
        var out: String

        func validate() throws {
            guard !name.isEmpty, !name.contains("+"), !name.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7f })
            else { throw ValidationError("--name takes printable ASCII without spaces or +") }
        }

        func run() throws {
            let (signer, text) = NoteSigner.generate(name: name, type: witness ? SignedNote.cosignature : SignedNote.ed25519)
            do throws(ServiceError) {
                try KeyFiles.writePrivate(text, to: out)
                try KeyFiles.replace(out + ".pub", with: signer.verifierKey + "\n")
            } catch {
                FileOutput.write("touchgate-collector: \(error.message)\n", to: 2)
                throw ExitCode(error.exitStatus)
            }
            FileOutput.write(signer.verifierKey + "\n", to: 1)
        }
    }

    /// `touchgate-collector verify`.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify the fleet log and every machine's trails against their registered keys.",
            discussion: """
                Recomputes the fleet log (an RFC 9162 Merkle tree over every shipment and key \
                registration) and checks every checkpoint, every witness cosignature given with \
                --witness-key and every checkpoint given with --checkpoint against it. Then, for each \
                trail, recomputes its public chain over the stored records in sequence order, checks \
                every stored seal against the registered key and the link it names, that every record \
                is in a shipment the log names and every shipment it names is there, and that the \
                newest seal names the newest record. One line per trail and one for the log (--json: \
                one object each); exit status 6 when the log or any trail is broken: a record edited, \
                inserted or deleted, the tail or the first records removed, a trail deleted, a key not \
                registered by the enrollment key, the log cut or rewritten. Records after the newest \
                seal (a shipment under way) are reported as unsealed, not broken.
                """)

        @OptionGroup var options: DatabaseOptions
        @Option(help: "Only this machine's trails (the log is always checked whole).")
        var machine: String?
        @Option(help: ArgumentHelp("The enrollment key's public half: only keys it registered are trusted.",
                                   valueName: "FILE"))
        var enrollmentKey: String?
        @Option(help: ArgumentHelp("A witness's public key: report how far it vouched (repeat for several).",
                                   valueName: "FILE"))
        var witnessKey: [String] = []
        @Option(help: ArgumentHelp("A checkpoint kept from earlier (a witness's state file, `touchgate-collector "
                                   + "checkpoint` output): the log must still agree with it (repeat for several).",
                                   valueName: "FILE"))
        var checkpoint: [String] = []
        @Option(help: ArgumentHelp("How many of the --witness-key witnesses must have cosigned one size of the log "
                                   + "(default: none): the log fails unless they did, so a fork shown to you alone "
                                   + "cannot pass.", valueName: "N"))
        var witnessQuorum: Int?
        @Option(help: ArgumentHelp("The log's public key (`publish --key`): checkpoints it signed must verify.",
                                   valueName: "FILE"))
        var logKey: String?
        @Option(help: ArgumentHelp("Where archived months are (`archive --out`): each is checked against the log and "
                                   + "the database.", valueName: "DIR"))
        var archive: String?

        func validate() throws {
            if let witnessQuorum, witnessQuorum < 1 || witnessQuorum > witnessKey.count {
                throw ValidationError("--witness-quorum takes 1 up to the number of --witness-key files given "
                                      + "(\(witnessKey.count))")
            }
        }

        func run() throws {
            try options.run { collector throws(ServiceError) in
                let trust = FleetTrust(
                    enrollment: try enrollmentKey.map { file throws(ServiceError) in
                        try KeyFiles.verifier(file, type: SignedNote.ed25519, what: "enrollment") },
                    witnesses: try witnessKey.map { file throws(ServiceError) in
                        try KeyFiles.verifier(file, type: SignedNote.cosignature, what: "witness") },
                    checkpoints: try checkpoint.map { file throws(ServiceError) in try KeyFiles.checkpoint(file) },
                    quorum: witnessQuorum ?? 0,
                    log: try logKey.map { file throws(ServiceError) in
                        try KeyFiles.verifier(file, type: SignedNote.ed25519, what: "log") })
                let (reports, log) = try collector.verify(machine: machine, trust: trust) { trail in
                    if options.json {
                        options.say(WireCoding.line(trail))
                        return
                    }
                    let range = (trail.first.map { "records \($0)…\(trail.last!)" } ?? "no records")
                        + (trail.archivedThrough.map { ", records up to \($0) archived" } ?? "")
                    let detail = trail.problem.map { ": \(StoredText.escaped($0))" } ?? ""
                    options.say("\(StoredText.escaped(trail.machine)) trail \(trail.trail) \(trail.status.rawValue) "
                                + "(\(trail.records) records, \(range))\(detail)")
                }
                var broken = reports.filter { $0.status == .broken }.map(\.machine)
                let archives = try archive.map { directory throws(ServiceError) in try collector.checkArchives(in: directory) } ?? []
                broken += archives.filter { $0.status == .broken }.map { "archive \($0.month)" }
                if options.json {
                    for check in archives { options.say(WireCoding.line(["archive": check])) }
                    options.say(WireCoding.line(["log": log]))
                } else {
                    options.say("fleet log \(log.status.rawValue): \(log.size) entries, \(log.checkpoints) checkpoints, "
                                + "root \(log.root)" + (log.problem.map { ": \(StoredText.escaped($0))" } ?? ""))
                    for witness in log.witnesses {
                        options.say("witness \(witness.name) "
                                    + (witness.vouchedThrough.map { "vouched through \($0) of \(log.size) entries" }
                                       ?? "has cosigned nothing"))
                    }
                    if let quorum = log.quorum {
                        options.say(log.witnessedThrough.map { "quorum of \(quorum) witnesses: through \($0) of \(log.size) "
                                                               + "entries" + ($0 < log.size ? " (the rest not yet witnessed)" : "") }
                                    ?? "quorum of \(quorum) witnesses: not met at any size")
                    }
                    if let signed = log.logSigned {
                        options.say("\(signed) checkpoint(s) signed by the log's key")
                    }
                    // A machine with more than one key: keys added or swapped, each attributable.
                    let byMachine = Dictionary(grouping: log.registrations, by: \.machine)
                    for (name, keys) in byMachine.sorted(by: { $0.key < $1.key }) where keys.count > 1 {
                        options.say("machine \(StoredText.escaped(name)) has \(keys.count) keys registered: "
                                    + keys.map { "\($0.key.prefix(16))… (entry \($0.entry), \($0.time.formatted(.iso8601)))" }
                                        .joined(separator: ", "))
                    }
                    if !log.registrationsChecked {
                        options.say("note: keys were taken as registered in the database; pass --enrollment-key to "
                                    + "trust only those the enrollment key registered")
                    }
                    let machines = Set(reports.map(\.machine)).count
                    for check in archives {
                        options.say("archive \(check.month) \(check.status.rawValue) (\(check.rows) records)"
                                    + (check.problem.map { ": \(StoredText.escaped($0))" } ?? ""))
                    }
                    options.say(broken.isEmpty
                                ? "\(reports.count) trail(s) of \(machines) machine(s) verified: none broken"
                                : "\(broken.count) of \(reports.count + archives.count) trail(s)"
                                    + (archives.isEmpty ? "" : " and archive(s)") + " broken, on "
                                    + Set(broken).sorted().joined(separator: ", "))
                }
                return broken.isEmpty && log.status != .broken ? 0 : ExitStatus.dataError
            }
        }
    }

    /// `touchgate-collector witness`.
    struct Witness: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cosign the fleet log's newest checkpoint after checking it only grew.",
            discussion: """
                Run by an auditor on another host (from cron or a timer), with a witness key from \
                `keygen --witness` and a state file of its own: checks that the log's newest checkpoint \
                is the tree its nodes give and extends the checkpoint in the state file (a consistency \
                proof), cosigns it (C2SP cosignature/v1), files the cosignature in the database and \
                keeps the checkpoint in the state file. A log cut back, rewritten or replaced is \
                refused with exit status 6 and the state file is left as it was.
                """)

        @OptionGroup var options: DatabaseOptions
        @Option(help: ArgumentHelp("The witness's private key file.", valueName: "FILE"))
        var key: String
        @Option(help: ArgumentHelp("The witness's state file: the last checkpoint it cosigned.", valueName: "FILE"))
        var state: String

        func run() throws {
            try options.run { collector throws(ServiceError) in
                let signer = try KeyFiles.signer(key, type: SignedNote.cosignature, what: "witness")
                let previous = FileManager.default.fileExists(atPath: state) ? try KeyFiles.checkpoint(state) : nil
                let checkpoint = try collector.witness(signer: signer, previous: previous)
                try KeyFiles.replace(state, with: checkpoint.body)
                if options.json {
                    options.say(WireCoding.line(["witness": signer.name, "size": String(checkpoint.size),
                                                 "previous": previous.map { String($0.size) } ?? ""]))
                } else {
                    options.say("cosigned the fleet log at \(checkpoint.size) entries"
                                + (previous.map { " (it held \($0.size) when this witness last cosigned)" } ?? ""))
                }
                return 0
            }
        }
    }

    /// `touchgate-collector publish`.
    struct Publish: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign the fleet log's tree head with the log's key; write the log as C2SP tiles.",
            discussion: """
                Run by the collector's operator (from a timer), with the log's key (`keygen --name \
                NAME --out FILE`; give FILE.pub to auditors and witnesses). Checks that the tree \
                extends the checkpoint the key signed last and that its new entries are the leaves \
                it holds, signs it (a C2SP checkpoint) and files it. With --tiles DIR, writes the log \
                there as C2SP tlog-tiles (checkpoint, tile/<L>/<N>, tile/entries/<N>) for any web \
                server to serve: full tiles once, the right edge anew; the checkpoint file carries \
                the witnesses' cosignatures of that size. With --witness URL and --witness-key FILE \
                (repeat), asks each witness to cosign by the C2SP tlog-witness protocol (add-checkpoint, \
                with a consistency proof from the size it cosigned last) and files its cosignature. \
                Exit status 6 when the log no longer extends what the key signed (nothing is signed) or \
                a witness refused it; 69 when a witness could not be reached.
                """)

        @OptionGroup var options: DatabaseOptions
        @Option(help: ArgumentHelp("The log's private key file.", valueName: "FILE"))
        var key: String
        @Option(help: ArgumentHelp("Where to write the tiles.", valueName: "DIR"))
        var tiles: String?
        @Option(help: ArgumentHelp("A witness's submission URL (http://host:port/prefix) to ask for a cosignature by "
                                   + "the C2SP tlog-witness protocol; repeat, each with its --witness-key.", valueName: "URL"))
        var witness: [String] = []
        @Option(help: ArgumentHelp("The public key of the --witness at the same position.", valueName: "FILE"))
        var witnessKey: [String] = []
        @Option(help: ArgumentHelp("How long one witness may take to answer, whole, before it counts as out of reach.",
                                   valueName: "SECONDS"))
        var witnessTimeout = 30

        func validate() throws {
            if witnessTimeout < 1 || witnessTimeout > 3600 {
                throw ValidationError("--witness-timeout takes 1 to 3600 seconds, not \(witnessTimeout)")
            }
            if witness.count != witnessKey.count {
                throw ValidationError("give one --witness-key FILE for each --witness URL (\(witness.count) URL(s), "
                                      + "\(witnessKey.count) key(s))")
            }
        }

        func run() throws {
            try options.run { collector throws(ServiceError) in
                let signer = try KeyFiles.signer(key, type: SignedNote.ed25519, what: "log")
                var witnesses: [(url: String, key: NoteVerifier)] = []
                for (url, file) in zip(witness, witnessKey) {
                    witnesses.append((url, try KeyFiles.verifier(file, type: SignedNote.cosignature, what: "witness")))
                }
                try collector.keepMonths()
                let published = try collector.publish(signer: signer, tiles: tiles, witnesses: witnesses,
                                                      witnessTimeout: witnessTimeout)
                let size = SignedNote.parse(published.note).flatMap { Checkpoint(body: $0.body) }?.size ?? 0
                if options.json {
                    options.say(WireCoding.line(PublishReport(
                        size: size, files: published.files,
                        cosignedBy: published.witnessed.filter { $0.failure == nil }.map(\.name),
                        refusals: published.witnessed.compactMap { $0.failure?.message })))
                } else {
                    options.say("signed the fleet log at \(size) entries"
                                + (tiles.map { "; wrote \(published.files) file(s) to \($0)" } ?? ""))
                    for (name, failure) in published.witnessed {
                        options.say(failure.map { "witness \(name) did not cosign: \($0.message)" } ?? "witness \(name) cosigned it")
                    }
                }
                return published.failure?.exitStatus ?? 0
            }
        }

        struct PublishReport: Encodable {
            var size: Int64
            var files: Int
            var cosignedBy: [String]
            var refusals: [String]
        }
    }

    /// `touchgate-collector archive`.
    struct Archive: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take the months before a retention floor out of the database, into files an auditor keeps.",
            discussion: """
                Records are kept in one partition a month. Each month before --before, oldest first, \
                goes to DIR/records-YYYY-MM.jsonl (one JSON object a record, as stored) with \
                DIR/archive-YYYY-MM.json beside it (the file's SHA-256, each trail's first and last \
                record archived with its public link, the log's tree head); then the month's \
                partition is dropped, in one transaction. Log entries and nodes stay, so every proof \
                still verifies; `verify` takes each trail up after its last record archived, and \
                `verify --archive DIR` checks the files. A month is archived only whole: every record \
                named by a batch head in the log, and no trail with earlier records in a later month \
                (exit 11, nothing touched).
                """)

        @OptionGroup var options: DatabaseOptions
        @Option(help: ArgumentHelp("The retention floor: months before it are archived.", valueName: "YYYY-MM"))
        var before: String
        @Option(help: ArgumentHelp("Where to write the archive files (kept by the auditor).", valueName: "DIR"))
        var out: String

        func run() throws {
            try options.run { collector throws(ServiceError) in
                let reports = try collector.archive(before: before, directory: out)
                for report in reports {
                    options.say(options.json ? WireCoding.line(report)
                                : "archived \(report.month): \(report.rows) records of \(report.trails) trail(s) to \(report.file)")
                }
                if reports.isEmpty, !options.json { options.say("nothing to archive before \(before)") }
                return 0
            }
        }
    }

    /// `touchgate-collector proof`.
    struct Proof: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the fleet log's proofs against its newest checkpoint, as JSON.",
            discussion: """
                With --leaf N: entry N and its inclusion proof (RFC 9162 §2.1.3); with --from SIZE: the \
                consistency proof from the log of SIZE entries (§2.1.4), for anyone holding an older \
                checkpoint to check with a tool of their own. Hashes in base64: \
                {"checkpoint": …, "entry": …, "inclusion": […], "consistency": […]}.
                """)

        @OptionGroup var options: DatabaseOptions
        @Option(help: "The entry to prove included.")
        var leaf: Int64?
        @Option(help: "The size of an older checkpoint to prove the log consistent with.")
        var from: Int64?

        func validate() throws {
            if leaf == nil, from == nil { throw ValidationError("give --leaf N, --from SIZE or both") }
            if let leaf, leaf < 0 { throw ValidationError("--leaf takes an entry's index, 0 or more") }
            if let from, from < 0 { throw ValidationError("--from takes a log size, 0 or more") }
        }

        func run() throws {
            try options.run { collector throws(ServiceError) in
                let proofs = try collector.proofs(leaf: leaf, from: from)
                let encode = { (hashes: [[UInt8]]) in hashes.map { Data($0).base64EncodedString() } }
                options.say(WireCoding.line(ProofReport(checkpoint: proofs.checkpoint, entry: proofs.entry,
                                                        inclusion: encode(proofs.inclusion),
                                                        consistency: encode(proofs.consistency))))
                return 0
            }
        }

        struct ProofReport: Encodable {
            var checkpoint: String
            var entry: String?
            var inclusion: [String]
            var consistency: [String]
        }
    }

    /// `touchgate-collector checkpoint`.
    struct ShowCheckpoint: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "checkpoint",
            abstract: "Print the fleet log's newest checkpoint (a signed note), to keep for a later verify --checkpoint.")

        @OptionGroup var options: DatabaseOptions

        func run() throws {
            try options.run { collector throws(ServiceError) in
                FileOutput.write(try collector.newestCheckpoint(), to: 1)
                return 0
            }
        }
    }

    /// `touchgate-collector query`.
    struct Query: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show collected records, oldest first (as stored: run verify to trust them).")

        @OptionGroup var options: DatabaseOptions
        @Option(help: "Only records of this login or vault user.")
        var user: String?
        @Option(help: "Only records of this machine.")
        var machine: String?
        @Option(help: "Only records about this item.")
        var item: String?
        @Option(help: "Only this event (repeat, or separate with commas, for several).")
        var event: [String] = []
        @Option(help: "Only this outcome: success, failure, denied or error (repeat for several).")
        var outcome: [String] = []
        @Option(help: ArgumentHelp("Only records from this moment on: YYYY-MM-DD or an ISO 8601 time (UTC).",
                                   valueName: "time"))
        var since: String?
        @Option(help: ArgumentHelp("Only records before this moment (the same forms).", valueName: "time"))
        var until: String?
        @Option(help: "At most N records.")
        var limit: Int?

        func validate() throws {
            for (name, value) in [("--since", since), ("--until", until)] {
                if let value, Self.time(value) == nil {
                    throw ValidationError("\(name) takes YYYY-MM-DD or an ISO 8601 time such as 2026-11-23T05:00:00Z")
                }
            }
            if let limit, limit < 1 { throw ValidationError("--limit takes a number of records, 1 or more") }
        }

        /// A day (midnight UTC) or an ISO 8601 time.
        static func time(_ text: String) -> Date? {
            if let date = try? Date(text, strategy: .iso8601) { return date }
            return try? Date(text + "T00:00:00Z", strategy: .iso8601)
        }

        func run() throws {
            func names(_ values: [String]) -> [String] {
                values.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces() }
            }
            let query = FleetQuery(user: user, machine: machine, item: item, events: names(event),
                                   outcomes: names(outcome), since: since.flatMap(Self.time),
                                   until: until.flatMap(Self.time), limit: limit)
            try options.run { collector throws(ServiceError) in
                var lines: [[String]] = []
                let count = try collector.query(query) { record in
                    if options.json {
                        options.say(WireCoding.line(record))
                    } else {
                        lines.append([record.time.formatted(.iso8601), record.machine, "#\(record.seq)",
                                      record.vaultUser.map { "\(record.login)/\($0)" } ?? record.login, record.event,
                                      record.outcome, record.item ?? "-", record.reason].map { StoredText.escaped($0) })
                    }
                }
                if !options.json {
                    if count == 0 {
                        options.say("no matching records")
                    } else {
                        Self.table(["TIME", "MACHINE", "SEQ", "USER", "EVENT", "OUTCOME", "ITEM", "REASON"], lines)
                            .forEach(options.say)
                    }
                }
                return 0
            }
        }

        /// Rows under a header, columns padded to their widest value (the last left as is).
        static func table(_ header: [String], _ rows: [[String]]) -> [String] {
            let all = [header] + rows
            let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
            return all.map { row in
                row.enumerated().map { column, value in
                    column == row.count - 1 ? value : padded(value, to: widths[column])
                }.joined(separator: "  ")
            }
        }

        /// `value` cut or filled with spaces to `length` UTF-16 units, as `NSString`'s
        /// `padding(toLength:withPad:startingAt:)` did (the widths count characters: a value
        /// holding characters outside the BMP is cut, as before).
        static func padded(_ value: String, to length: Int) -> String {
            let units = value.utf16.count
            if units < length { return value + String(repeating: " ", count: length - units) }
            return units == length ? value : String(decoding: value.utf16.prefix(length), as: UTF16.self)
        }
    }
}
