import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A bash command run on a new pseudo-terminal, as in a terminal window: script(1)
/// (util-linux) makes the terminal and runs the command as its session's foreground job;
/// the test reads everything the terminal shows and types on its keyboard.
///
/// Whenever the terminal shows one of the `answers` prompts (a passphrase prompt on
/// `/dev/tty`), the reply is typed with Enter. The command starts in `directory` with
/// exactly `environment`.
final class TerminalSession: Sendable {
    private let screen: Screen
    private let process: BackgroundProcess

    /// Starts `command` (a bash command line) on a new terminal.
    init(_ command: String, directory: String, environment: [String: String],
         answers: [(prompt: String, reply: String)] = []) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
                     "this test needs script from bsdutils: apt-get install bsdutils")
        let screen = Screen(answers: answers)
        self.screen = screen
        // -e: script exits with the command's status; -c runs it with $SHELL -c.
        process = try await BackgroundProcess.start(
            "/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"],
            environment: environment.merging(["SHELL": "/bin/bash"]) { _, new in new },
            workingDirectory: directory, holdingInputOpen: true,
            output: .chunks { screen.show($0) }, error: .sameAsOutput)
        screen.connect(process)
    }

    /// What the terminal showed so far, with `\r` removed.
    var output: String { screen.output }

    /// Types `text` on the terminal's keyboard (`"\u{03}"` is Ctrl-C).
    func type(_ text: String) {
        try? process.write(text)
    }

    /// Waits until the terminal has shown a line for which `matches` is true; false after
    /// `timeout` seconds.
    func waitForLine(timeout: TimeInterval = 60, where matches: (String) -> Bool) async throws -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if output.split(separator: "\n").contains(where: { matches(String($0)) }) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits for the command to end; returns its exit status, or 128 + N when signal N
    /// ended it. After `timeout` seconds the command's process group and script(1) are
    /// killed (SIGHUP is not enough: the test process blocks it, and children inherit
    /// that) and the result is 128 + SIGKILL.
    func finish(timeout: TimeInterval) async -> Int32 {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            let script = process.processIdentifier
            // script's child leads the terminal's session and its foreground group.
            let children = (try? String(contentsOfFile: "/proc/\(script)/task/\(script)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ pid_t($0) }) { kill(-child, SIGKILL) }
            await process.terminate()
            process.closeInput()
            return 128 + SIGKILL
        }
        process.closeInput()
        return await process.ended()
    }
}

/// What a terminal showed, and the typing of the answers to the prompts it showed.
private final class Screen: @unchecked Sendable {
    // @unchecked Sendable: everything but `answers` is only touched under `lock`.
    private let lock = NSLock()
    /// Every byte the terminal showed.
    private var shown: [UInt8] = []
    /// How many bytes of `shown` were searched for prompts and answered.
    private var answered = 0
    /// Replies due before the keyboard was connected.
    private var pending: [String] = []
    private var keyboard: BackgroundProcess?
    private let answers: [(prompt: String, reply: String)]

    init(answers: [(prompt: String, reply: String)]) {
        self.answers = answers
    }

    var output: String {
        lock.withLock { String(decoding: shown, as: UTF8.self) }.replacingOccurrences(of: "\r", with: "")
    }

    /// Types the replies due so far, and from now on each as soon as it is due.
    func connect(_ process: BackgroundProcess) {
        let due = lock.withLock {
            keyboard = process
            defer { pending = [] }
            return pending
        }
        for reply in due { try? process.write(reply + "\n") }
    }

    func show(_ chunk: [UInt8]) {
        let (replies, connected) = lock.withLock { () -> ([String], BackgroundProcess?) in
            shown += chunk
            var replies: [String] = []
            while let (reply, end) = nextPrompt() {
                replies.append(reply)
                answered = end
            }
            if keyboard == nil { pending += replies }
            return (replies, keyboard)
        }
        if let connected {
            for reply in replies { try? connected.write(reply + "\n") }
        }
    }

    /// The reply to the first prompt shown since the last one answered, and the offset
    /// just past that prompt.
    private func nextPrompt() -> (String, Int)? {
        answers.compactMap { answer -> (String, Range<Int>)? in
            let prompt = Array(answer.prompt.utf8)
            guard shown.count - answered >= prompt.count else { return nil }
            return (answered...(shown.count - prompt.count))
                .first { shown[$0..<($0 + prompt.count)].elementsEqual(prompt) }
                .map { (answer.reply, $0..<($0 + prompt.count)) }
        }.min { $0.1.lowerBound < $1.1.lowerBound }.map { ($0.0, $0.1.upperBound) }
    }
}
