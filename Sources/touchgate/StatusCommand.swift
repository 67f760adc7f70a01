import ArgumentParser
import TouchgateService
import TouchgateWire

/// `touchgate status`: locked or not, session, lockout, enrolled fingers, readers.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether the vault is locked, the session, lockout, enrolled fingers and readers.",
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
            lines.append("vault: \(status.locked == false ? "unlocked" : "locked (run: touchgate unlock)")")
            if let problem = status.problem {
                lines.append("problem: \(problem)")
            }
            if let session = status.session {
                lines.append("session: " + (session.remainingSeconds.map { "active, \($0) s left" } ?? "none"))
            }
            if let lockout = status.lockout {
                if lockout.lockedOut {
                    lines.append("lockout: " + (lockout.passphraseOnly
                        ? "until the passphrase is entered" : "\(lockout.remainingSeconds ?? 0) s left"))
                } else {
                    lines.append("lockout: none")
                }
                lines.append("failures: \(lockout.consecutiveFailures) in a row (lockout at \(lockout.threshold)), "
                             + "\(lockout.cumulativeFailures) since the passphrase")
            }
            if let requirement = status.passphraseRequired {
                lines.append("passphrase: needed before a fingerprint alone opens anything (\(requirement))")
            }
        } else {
            lines.append("vault: none yet (run: touchgate init)")
        }
        lines.append("enrolled: " + (status.enrolled.isEmpty ? "none" : status.enrolled
            .map { StoredText.escaped("\($0.finger) of \($0.user)") }.joined(separator: ", ")))
        lines.append("readers: " + (status.readers.isEmpty ? "none" : status.readers
            .map { "\($0.name) (\($0.deviceID))" }.joined(separator: ", ")))
        return lines.joined(separator: "\n")
    }
}
