import ArgumentParser
import Foundation
import TouchgateAPI

/// `touchgate status`: locked or not, session, lockout, enrolled fingers, readers.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether the vault is locked, whether a touch is needed, lockout, enrolled fingers and readers.",
        discussion: """
            Reads state only: it never asks for a finger or the passphrase, and does not count as \
            use (it does not delay the idle lock).
            """)

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await CommandRunner.run(json: common.json) { console in
            let status = try await service.status()
            console.result("status", status, text: Self.text(status))
            return ExitStatus.success
        }
    }

    static func text(_ status: StatusReport) -> String {
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
            if let session = status.session {
                lines.append("touch: " + (session.touchReusable
                    ? "not needed for the next \(duration(session.remainingSeconds ?? 0)) (a recent touch is reused)"
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
    static func duration(_ seconds: Int) -> String {
        let (hours, minutes, rest) = (seconds / 3600, seconds % 3600 / 60, seconds % 60)
        if hours > 0 { return minutes > 0 ? "\(hours) h \(minutes) min" : "\(hours) h" }
        if minutes > 0 { return rest > 0 ? "\(minutes) min \(rest) s" : "\(minutes) min" }
        return "\(rest) s"
    }

    /// Why the passphrase is needed, in words, with the command.
    static func passphraseWords(_ requirement: String) -> String {
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
