import Foundation
import Testing
import TouchgateTestSupport

/// Reading the audit trail as a new user does: filters, order, a default limit and a pager
/// on a terminal, everything through a pipe, and one JSON form for `show --json` and `export`.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct AuditShowTests {
    /// A vault whose trail holds vault.init, auth.attempt, vault.unlock, then `item.write`
    /// for each of `items` (named `k0`, `k1`, …) and last a refused
    /// prune (`audit.prune`, denied).
    func vault(items: Int) async throws -> VaultRig {
        let vault = try VaultRig()
        try await vault.initAndUnlock()
        for index in 0..<items { try await vault.add("k\(index)", "value \(index)", policy: "passphrase") }
        let refused = try await vault.withPassphrase(["audit", "prune", "--before", Self.day(Date())])
        try #require(refused.status == 11, "the refused prune: \(refused.stderrLines)")
        return vault
    }

    /// `audit show --json` with `arguments`, required to succeed: its records.
    func shown(_ vault: VaultRig, _ arguments: [String] = []) async throws -> [[String: Any]] {
        let result = try await vault.run(["audit", "show", "--json"] + arguments)
        try #require(result.status == 0, "audit show \(arguments): \(result.stderrLines)")
        return try #require(result.json?["records"] as? [[String: Any]])
    }

    /// The sequence numbers of `records`.
    func sequences(_ records: [[String: Any]]) -> [Int] { records.compactMap { $0["seq"] as? Int } }

    /// `date` as YYYY-MM-DD in UTC.
    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }

    /// Runs touchgate on a new pseudo-terminal `rows` high (script(1)); what it printed,
    /// with the terminal's CRLF line ends made LF.
    func onTerminal(_ vault: VaultRig, rows: Int, pager: String?,
                    _ arguments: [String]) async throws -> (status: Int32, stdout: String) {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
                     "this test needs script from bsdutils: apt-get install bsdutils")
        var process = vault.rig.process
        process.environment["PAGER"] = pager
        process.wrapper = ["/bin/sh", "-c",
                           "/usr/bin/script -q -e -c \"stty rows \(rows) cols 250; $*\" /dev/null < /dev/null", "sh"]
        let result = try await process.run(arguments)
        return (result.status, result.stdout.replacingOccurrences(of: "\r\n", with: "\n"))
    }

    @Test func eachFilterSelectsInSQLAndBadValuesAreUsageErrors() async throws {
        let vault = try await vault(items: 3)
        defer { vault.home.remove() }
        let all = try await shown(vault)
        let total = all.count
        #expect(sequences(all) == Array(1...total), "a pipe gets every record, oldest first")

        #expect(try await shown(vault, ["--item", "k1"]).map { $0["event"] as? String } == ["item.write"])
        #expect(try await shown(vault, ["--event", "item.write"]).compactMap { $0["item"] as? String } == ["k0", "k1", "k2"])
        #expect(try await shown(vault, ["--event", "vault.init,vault.unlock"]).compactMap { $0["event"] as? String }
            == ["vault.init", "vault.unlock", "vault.unlock"], "init unlocks, then initAndUnlock unlocks again")
        #expect(try await shown(vault, ["--event", "vault.init", "--event", "audit.prune"]).count == 2)
        let denied = try await shown(vault, ["--outcome", "denied"])
        #expect(denied.map { $0["event"] as? String } == ["audit.prune"])
        #expect(try await shown(vault, ["--outcome", "success"]).count == total - 1)
        #expect(try await shown(vault, ["--item", "k1", "--outcome", "denied"]).isEmpty)

        // Wall time: relative, day and ISO-8601 forms.
        #expect(try await shown(vault, ["--since", "1h"]).count == total)
        #expect(try await shown(vault, ["--until", "1h"]).isEmpty)
        #expect(try await shown(vault, ["--since", Self.day(Date())]).count == total)
        #expect(try await shown(vault, ["--until", Self.day(Date())]).isEmpty)
        #expect(try await shown(vault, ["--since", "2099-01-01T00:00:00+01:00"]).isEmpty)
        let none = try await vault.run(["audit", "show", "--since", "2099-01-01"])
        #expect(none.status == 0 && none.stdout == "no matching records\n", "\(none.stdout)")

        // A limit keeps the most recent, in the order asked for.
        #expect(sequences(try await shown(vault, ["--limit", "2"])) == [total - 1, total])
        #expect(sequences(try await shown(vault, ["--limit", "2", "--newest-first"])) == [total, total - 1])
        #expect(sequences(try await shown(vault, ["--newest-first"])) == Array((1...total).reversed()))

        for bad in [["--event", "item-read"], ["--outcome", "failed"], ["--since", "yesterday"], ["--until", "2026-02-30"],
                    ["--limit", "0"], ["--since", "2026-01-02", "--until", "2026-01-01"],
                    ["--all", "--limit", "3"], ["--oldest-first", "--newest-first"]] {
            let refused = try await vault.run(["audit", "show"] + bad)
            #expect(refused.status == 64, "\(bad): \(refused.stderrLines)")
        }
        let unknown = try await vault.run(["audit", "show", "--event", "item-read", "--json"])
        #expect((unknown.json?["message"] as? String)?.contains("item.read") == true, "names the real events: \(unknown.stdout)")
    }

    @Test func theWallClockBoundsAreExact() async throws {
        let vault = try await vault(items: 1)
        defer { vault.home.remove() }
        try await Task.sleep(for: .milliseconds(1100))
        let boundary = Date()
        try await Task.sleep(for: .milliseconds(1100))
        try await vault.add("later", "v", policy: "passphrase")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let iso = formatter.string(from: boundary)
        let after = try await shown(vault, ["--since", iso])
        #expect(after.compactMap { $0["item"] as? String } == ["later"], "since \(iso)")
        let before = try await shown(vault, ["--until", iso])
        #expect(before.count == (try await shown(vault)).count - 1)
        #expect(before.allSatisfy { $0["item"] as? String != "later" })
    }

    @Test func aTerminalGetsTheNewestFiftyFirstAndHowManyMoreThereAre() async throws {
        let vault = try await vault(items: 55)
        defer { vault.home.remove() }
        let total = try await shown(vault).count  // 58
        let pagerLog = vault.home.path("paged.txt")

        // Tall enough: no pager.
        let tall = try await onTerminal(vault, rows: 200, pager: "tee \(pagerLog)", ["audit", "show"])
        #expect(tall.status == 0, "\(tall.stdout)")
        let lines = tall.stdout.split(separator: "\n").map(String.init)
        let records = lines.filter { $0.hasPrefix("#") }
        #expect(records.count == 50)
        // A table: a header, and every record's time, user, event and outcome starting where
        // their headers do.
        let header = Array(try #require(lines.first { $0.hasPrefix("SEQ ") }, "\(tall.stdout)").utf8)
        for column in ["TIME", "USER", "EVENT", "OUTCOME"] {
            let name = Array(column.utf8)
            let start = try #require((0...(header.count - name.count)).first { Array(header[$0..<$0 + name.count]) == name })
            for record in records.map({ Array($0.utf8) }) {
                #expect(record.count > start && record[start] != 0x20 && record[start - 1] == 0x20,
                        "\(column) at \(start): \(String(decoding: record, as: UTF8.self))")
            }
        }
        #expect(records.first?.hasPrefix("#\(total) ") == true, "newest first: \(records.first ?? "")")
        #expect(records.last?.hasPrefix("#\(total - 49) ") == true)
        #expect(lines.last?.hasPrefix("… \(total - 50) older records not shown") == true, "\(lines.last ?? "")")
        #expect(lines.last?.contains("--all") == true)
        #expect(!FileManager.default.fileExists(atPath: pagerLog), "it fits the window: no pager")

        // Too long for the window: through $PAGER, which gets all of it.
        let paged = try await onTerminal(vault, rows: 20, pager: "tee \(pagerLog)", ["audit", "show", "--limit", "30"])
        #expect(paged.status == 0, "\(paged.stdout)")
        let pagerInput = try String(contentsOfFile: pagerLog, encoding: .utf8)
        #expect(pagerInput.split(separator: "\n").filter { $0.hasPrefix("#") }.count == 30)
        #expect(pagerInput.hasSuffix("--outcome narrow them\n"), "the 'more' line is paged too")
        try FileManager.default.removeItem(atPath: pagerLog)

        // A pager that quits early (as `q` in less does): what it did not take is not shown
        // after it, and the command still succeeds.
        let quit = try await onTerminal(vault, rows: 20, pager: "head -n 2", ["audit", "show", "--limit", "30"])
        #expect(quit.status == 0, "\(quit.stdout)")
        #expect(quit.stdout.split(separator: "\n").filter { $0.hasPrefix("#") }.count == 1, "the header and one record: \(quit.stdout)")

        // --no-pager and --all; --oldest-first keeps the limit's most recent records.
        let direct = try await onTerminal(vault, rows: 20, pager: "tee \(pagerLog)", ["audit", "show", "--all", "--no-pager"])
        #expect(direct.stdout.split(separator: "\n").filter { $0.hasPrefix("#") }.count == total)
        #expect(!direct.stdout.contains("not shown"))
        #expect(!FileManager.default.fileExists(atPath: pagerLog))
        let oldest = try await onTerminal(vault, rows: 200, pager: nil, ["audit", "show", "--oldest-first", "--limit", "3"])
        #expect(oldest.stdout.split(separator: "\n").filter { $0.hasPrefix("#") }.map { $0.split(separator: " ")[0] }
            == ["#\(total - 2)", "#\(total - 1)", "#\(total)"])
        #expect(oldest.stdout.contains("\(total - 3) older records not shown"))

        // A pipe gets everything, oldest first, and no 'more' line.
        let piped = try await vault.run(["audit", "show"])
        let pipedRecords = piped.stdout.split(separator: "\n")
        #expect(pipedRecords.count == total)
        #expect(pipedRecords.first?.hasPrefix("#1 ") == true && pipedRecords.last?.hasPrefix("#\(total) ") == true)
    }

    @Test func exportHasShowsKeysPlusTheChainFieldsAndStillVerifies() async throws {
        let vault = try await vault(items: 2)
        defer { vault.home.remove() }
        let shownRecords = try await shown(vault)
        let exported = try await vault.auditTrail()
        try #require(exported.count == shownRecords.count)
        let chain: Set<String> = ["unix-time", "boot-id", "prev-mac", "mac", "trail", "prev-chain", "chain"]
        for (show, export) in zip(shownRecords, exported) {
            #expect(Set(export.keys) == Set(show.keys).union(chain), "\(export.keys.sorted()) vs \(show.keys.sorted())")
            #expect(Set(show.keys).isDisjoint(with: chain))
            for key in show.keys { #expect("\(show[key]!)" == "\(export[key]!)", "\(key)") }
            for key in ["prev-mac", "mac", "prev-chain", "chain"] {
                let hex = try #require(export[key] as? String)
                #expect(hex.count == 64 && hex.allSatisfy { "0123456789abcdef".contains($0) }, "\(key): \(hex)")
            }
        }
        #expect(Set(shownRecords.first!.keys).isSuperset(of: ["seq", "time", "boot-time", "uid", "login", "event", "outcome", "reason"]))
        for (previous, next) in zip(exported, exported.dropFirst()) {
            #expect(next["prev-mac"] as? String == previous["mac"] as? String)
        }

        // --json is accepted (JSON is the only format); filters work as in show.
        let json = try await vault.run(["audit", "export", "--json", "--event", "item.write"])
        #expect(json.status == 0, "\(json.stderrLines)")
        let writes = try VaultRig.exportedRecords(json)
        #expect(writes.compactMap { $0["item"] as? String } == ["k0", "k1"])
        let bad = try await vault.run(["audit", "export", "--json", "--outcome", "nope"])
        #expect(bad.status == 64 && bad.json?["error"] as? String == "usage", "\(bad.stdout)")
        #expect(try await vault.run(["audit", "verify"]).status == 0)
    }

    @Test func anIdleSessionEndIsSessionEndAndAnExplicitLockIsVaultLock() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.enroll("whorl")
        try await vault.add("token", "t0k", policy: "biometry-any")
        let set = try await vault.withPassphrase(["policy", "set", "--idle-timeout", "1", "--json"])
        try #require(set.status == 0, "\(set.stderrLines)")
        #expect(try await vault.get("token", presenting: ["whorl"]).status == 0)
        try await Task.sleep(for: .seconds(2))
        let again = try await vault.get("token", presenting: ["whorl"])
        #expect(again.status == 0, "\(again.stderrLines)")
        #expect(again.fingerPrompts == 1, "the idle session ended: a new touch")

        let ended = try await shown(vault, ["--event", "session.end"])
        #expect(!ended.isEmpty)
        #expect(ended.allSatisfy { ($0["reason"] as? String ?? "").hasPrefix("idle for ") }, "\(ended)")
        #expect(try await shown(vault, ["--event", "vault.lock"]).isEmpty, "nobody locked the vault")

        #expect(try await vault.run(["lock"]).status == 0)
        let locked = try await shown(vault, ["--event", "vault.lock,session.end", "--limit", "1"])
        #expect(locked.map { $0["event"] as? String } == ["vault.lock"])
        #expect(try await vault.run(["audit", "verify"]).status == 0)
    }
}
