import ArgumentParser
import FingerprintKit
import TouchgateVault

/// How many poor scans a match operation restarts after before giving up (fprintd restarts too).
let maximumScanAttempts = 5

/// Runs `attempt` (one scan), restarting it after a poor scan, up to ``maximumScanAttempts``.
func withScanRetries<T: Sendable>(_ console: Console, _ attempt: () async throws -> T) async throws -> T {
    var tries = 1
    while true {
        do {
            return try await attempt()
        } catch let FingerprintError.retry(reason) where tries < maximumScanAttempts {
            tries += 1
            console.event("retry", [("reason", .string(Prompter.name(of: reason))),
                                    ("message", .string(reason.message)), ("attempt", .int(tries))],
                          text: "  \(reason.message)")
        } catch FingerprintError.retry(_) {
            throw Failure.readerError("\(maximumScanAttempts) scans in a row were too poor to match; clean the reader and try again")
        }
    }
}

/// The stored prints that can match on `info`'s reader.
func enrolledPrints(_ store: PrintStore, on info: ReaderInfo, user: String?, finger: String?) throws -> [StoredPrint] {
    let prints = try store.prints(user: user, finger: finger, driver: info.driver, deviceID: info.deviceID)
    if prints.isEmpty {
        let who = [finger, user.map { "of \($0)" }].compactMap { $0 }.joined(separator: " ")
        throw Failure.nothingEnrolled("nothing enrolled\(who.isEmpty ? "" : " for \(who)") on \(info.name) "
                                      + "(\(info.deviceID)); run: touchgate enroll")
    }
    return prints
}

/// Matches one scan against `candidates`, restarting after poor scans.
/// Returns the candidate that matched, or nil.
func match(_ session: ReaderSession, against candidates: [StoredPrint], operation: String,
           finger: String?) async throws -> StoredPrint? {
    var gallery: [Print] = []
    for candidate in candidates { gallery.append(try await Print(serialized: candidate.template)) }
    let prints = gallery
    // With one candidate the prompt can name its finger.
    let named = finger ?? (candidates.count == 1 ? candidates[0].finger : nil)
    let index = try await withScanRetries(session.console) {
        try await session.match(prints, operation: operation, finger: named)
    }
    return index.map { candidates[$0] }
}

/// Prints the result of a match and returns its exit status (0 match, 1 no match).
/// `extra` goes into the JSON of a no-match; `text` words a match for people.
func report(_ matched: StoredPrint?, console: Console, extra: [(String, JSON)] = [],
            text: (StoredPrint) -> String) -> Int32 {
    guard let matched else {
        console.result([("result", "no-match"), ("match", false)] + extra, text: "no match")
        return Exit.noMatch
    }
    console.result([("result", "match"), ("match", true), ("user", .string(matched.user)),
                    ("finger", .string(matched.finger))], text: text(matched))
    return Exit.success
}

/// `touchgate verify`: does the finger on the reader match an enrolled print?
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a finger against the enrolled prints.",
        discussion: """
            Exit status 0 on a match, 1 on no match; 2 no reader, 3 nothing enrolled, 4 reader \
            disconnected, 5 reader error, 130 cancelled. A poor scan is retried automatically \
            (up to 5 scans).
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions
    @OptionGroup var userOption: UserOption

    @Option(help: "Which finger to check, or `any` for any enrolled finger of the user.")
    var finger: String = "any"

    func validate() throws {
        if finger != "any", Finger(name: finger) == nil {
            throw ValidationError("unknown finger '\(finger)'; use a name like right-index, or any")
        }
    }

    func run() async throws {
        let finger = self.finger == "any" ? nil : Finger(name: self.finger)!.name
        let user = userOption.resolved
        let device = readerOptions.device
        try await CommandRunner.run(json: common.json) { console in
            let store = try Storage.printStore()
            let matched = try await ReaderSession.with(device: device, console: console) { session in
                let candidates = try enrolledPrints(store, on: session.info, user: user, finger: finger)
                return try await match(session, against: candidates, operation: "verify", finger: finger)
            }
            return report(matched, console: console, extra: [("user", .string(user))]) {
                "match: \($0.finger) of \($0.user)"
            }
        }
    }
}

/// `touchgate identify`: whose finger is on the reader?
struct Identify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find which enrolled user and finger is on the reader.",
        discussion: "Exit status 0 when a print matched, 1 when none did; other statuses as for verify.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var readerOptions: ReaderOptions

    func run() async throws {
        let device = readerOptions.device
        try await CommandRunner.run(json: common.json) { console in
            let store = try Storage.printStore()
            let matched = try await ReaderSession.with(device: device, console: console) { session in
                let candidates = try enrolledPrints(store, on: session.info, user: nil, finger: nil)
                return try await match(session, against: candidates, operation: "identify", finger: nil)
            }
            return report(matched, console: console) { "\($0.user) \($0.finger)" }
        }
    }
}
