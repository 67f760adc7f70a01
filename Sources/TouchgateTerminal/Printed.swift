import FoundationEssentials
public import TouchgateAPI
#if canImport(Glibc)
import Glibc
#endif

/// What `status`, `secret list`, `verify` and `secret get` do and print, in one place for
/// every executable that runs them: the commands of `touchgate-cli` and `touchgate-client`,
/// and the `touchgate` front, which serves these through touchgated itself so that they
/// start in a few milliseconds (docs/ARCHITECTURE.md).
public enum Printed {
    /// `touchgate status`.
    public static func status(_ service: any TouchgateRequests, console: Console) async throws -> Int32 {
        status(try await service.status(), console: console)
    }

    /// Prints a `status` report.
    public static func status(_ status: StatusReport, console: Console) -> Int32 {
        console.result("status", status, text: StatusText.text(status))
        return ExitStatus.success
    }

    /// `touchgate secret list`.
    public static func secretList(_ service: any TouchgateRequests, console: Console) async throws -> Int32 {
        secretList(try await service.secretList(), console: console)
    }

    /// Prints a `secret list` report.
    public static func secretList(_ items: [ItemReport], console: Console) -> Int32 {
        console.result("items", ItemList(items: items), text: ItemList.text(items))
        return ExitStatus.success
    }

    /// `touchgate verify`: 0 on a match, 1 on none.
    public static func verify(_ service: any TouchgateRequests, user: String?, finger: String?, device: String?,
                              console: Console) async throws -> Int32 {
        let report = try await service.verify(user: user, finger: finger, device: device,
                                              interaction: TerminalInteraction(console: console))
        return match(report, console: console) { TerminalText.verified(user: $0.user, finger: $0.finger) }
    }

    /// Prints the result of a match and returns its exit status (0 match, 1 no match).
    public static func match(_ report: MatchReport, console: Console, text: (MatchReport) -> String) -> Int32 {
        guard report.match else {
            console.result("no-match", report, text: TerminalText.noMatch(attemptsLeft: report.attemptsLeft))
            return ExitStatus.noMatch
        }
        console.result("match", report, text: text(report))
        return ExitStatus.success
    }

    /// `touchgate secret get`: the value alone on standard output, or with `--json` one
    /// result whose `value` holds it (base64 when it is not UTF-8 text).
    public static func secretGet(_ service: any TouchgateRequests, name: String, device: String?, input: PassphraseInput,
                               console: Console) async throws -> Int32 {
        let value = try await service.secretGet(name, device: device,
                                              interaction: TerminalInteraction(console: console, input: input))
        if console.json {
            console.result("released", SecretValue.report(name: name, value: value), text: nil)
        } else {
            try SecretValue.writeStandardOutput(value)
        }
        return ExitStatus.success
    }
}

/// `{"items": [...]}`.
public struct ItemList: Encodable, Sendable {
    public var items: [ItemReport]

    public init(items: [ItemReport]) {
        self.items = items
    }

    /// `secret list` for people: a table of the items, their policies and what to know of them.
    public static func text(_ items: [ItemReport]) -> String {
        guard !items.isEmpty else { return "no secrets stored" }
        var table = TextTable("NAME", "POLICY", "NOTES")
        for item in items {
            var notes: [String] = []
            if item.fresh { notes.append("a touch every time (--fresh)") }
            if item.invalidated { notes.append("invalidated: fingers changed; store it again") }
            table.add(StoredText.escaped(item.name), StoredText.escaped(item.policy), notes.joined(separator: "; "))
        }
        return table.text
    }
}

/// `status` for people.
public enum StatusText {
    public static func text(_ status: StatusReport) -> String {
        var lines: [String] = []
        if status.initialized {
            if status.locked == false {
                let until = status.keyExpires.map {
                    " until \(ShownTime.text($0)) at the latest (sooner when idle)"
                } ?? ""
                lines.append("vault: unlocked: the key is kept\(until); touchgate lock forgets it now")
            } else {
                lines.append("vault: locked: run touchgate unlock")
            }
            if let problem = status.problem {
                lines.append("problem: \(problem)")
            }
            if let tpm = status.tpm {
                lines.append("tpm: \(tpm)")
            }
            if let session = status.session {
                lines.append("touch: " + (session.touchReusable
                    ? "not needed for the next \(duration(session.remainingSeconds ?? 0)) (a recent touch is reused; secrets stored with --fresh still ask every time)"
                    : "needed for finger-guarded secrets"))
            }
            if let lockout = status.lockout {
                if lockout.lockedOut {
                    lines.append("lockout: " + (lockout.passphraseOnly
                        ? "until the passphrase is entered (touchgate unlock)"
                        : "\(duration(lockout.remainingSeconds ?? 0)) left (touchgate unlock lifts it now)"))
                } else {
                    lines.append("lockout: none")
                }
                lines.append("failed touches: \(lockout.consecutiveFailures) in a row (lockout at \(lockout.threshold)), "
                             + "\(lockout.cumulativeFailures) since the passphrase was entered")
            }
            if let requirement = status.passphraseRequired {
                lines.append("passphrase: " + passphraseWords(requirement))
            }
        } else if status.mode == "system", let personal = Invocation.personalDatabase() {
            // The person's vault is still the personal one: moving it in is the step, not init.
            lines.append("vault: none in touchgated yet; yours is still in your home (\(StoredText.escaped(personal))): "
                         + "move it in with touchgate migrate")
        } else {
            lines.append("vault: none yet (run: touchgate init)")
        }
        lines.append("enrolled: " + (status.enrolled.isEmpty ? "none (run: touchgate enroll)" : status.enrolled
            .map { StoredText.escaped("\($0.finger) of \($0.user)") }.joined(separator: ", ")))
        lines.append("readers: " + (status.readers.isEmpty ? "none" : status.readers
            .map { $0.backend == "fprintd" ? "\(StoredText.escaped($0.name)) (through fprintd)"
                : "\(StoredText.escaped($0.name)) (\(StoredText.escaped($0.deviceID)))" }
            .joined(separator: ", ")))
        if let mode = status.mode {
            lines.append("mode: \(mode == "system" ? "system (touchgated)" : "personal (this process)"); "
                         + (status.trustBoundary ?? ""))
        }
        return lines.joined(separator: "\n")
    }

    /// `14 min 49 s`, `2 min`, `45 s`, `1 h 5 min`.
    public static func duration(_ seconds: Int) -> String {
        let (hours, minutes, rest) = (seconds / 3600, seconds % 3600 / 60, seconds % 60)
        if hours > 0 { return minutes > 0 ? "\(hours) h \(minutes) min" : "\(hours) h" }
        if minutes > 0 { return rest > 0 ? "\(minutes) min \(rest) s" : "\(minutes) min" }
        return "\(rest) s"
    }

    /// Why the passphrase is needed, in words, with the command.
    public static func passphraseWords(_ requirement: String) -> String {
        switch requirement {
        case "not-entered-since-boot":
            "not entered since this computer started: a fingerprint alone opens nothing until you run touchgate unlock"
        case "expired":
            "last entered over 72 hours ago: a fingerprint alone opens nothing until you run touchgate unlock"
        default:
            "needed (\(requirement)): run touchgate unlock"
        }
    }
}
