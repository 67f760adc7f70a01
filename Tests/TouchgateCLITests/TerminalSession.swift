import Foundation
import Testing
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
final class TerminalSession: @unchecked Sendable {
    // @unchecked Sendable: `shown` and `answered` are only touched under `lock`;
    // the other stored properties are set once in init.
    private let lock = NSLock()
    /// Every byte the terminal showed.
    private var shown: [UInt8] = []
    /// How many bytes of `shown` were searched for prompts and answered.
    private var answered = 0
    private let process = Process()
    private let keyboard = Pipe()
    private let answers: [(prompt: String, reply: String)]
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `command` (a bash command line) on a new terminal.
    init(_ command: String, directory: String, environment: [String: String],
         answers: [(prompt: String, reply: String)] = []) throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
                     "this test needs script from bsdutils: apt-get install bsdutils")
        self.answers = answers
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        // -e: script exits with the command's status; -c runs it with $SHELL -c.
        process.arguments = ["-q", "-e", "-c", command, "/dev/null"]
        process.environment = environment.merging(["SHELL": "/bin/bash"]) { _, new in new }
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let screen = Pipe()
        process.standardInput = keyboard
        process.standardOutput = screen
        process.standardError = screen
        try process.run()
        Thread.detachNewThread { [self] in
            let handle = screen.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                show(chunk)
            }
            process.waitUntilExit()
            finished.signal()
        }
    }

    /// What the terminal showed so far, with `\r` removed.
    var output: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: shown, as: UTF8.self).replacingOccurrences(of: "\r", with: "")
    }

    /// Types `text` on the terminal's keyboard (`"\u{03}"` is Ctrl-C).
    func type(_ text: String) {
        keyboard.fileHandleForWriting.write(Data(text.utf8))
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
        let finished = self.finished, process = self.process
        let ended = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let ended = finished.wait(timeout: .now() + timeout) == .success
                if !ended {
                    let script = process.processIdentifier
                    // script's child leads the terminal's session and its foreground group.
                    let children = (try? String(contentsOfFile: "/proc/\(script)/task/\(script)/children", encoding: .utf8)) ?? ""
                    for child in children.split(separator: " ").compactMap({ pid_t($0) }) { kill(-child, SIGKILL) }
                    kill(script, SIGKILL)
                    _ = finished.wait(timeout: .now() + 10)
                }
                continuation.resume(returning: ended)
            }
        }
        try? keyboard.fileHandleForWriting.close()
        guard ended else { return 128 + SIGKILL }
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    private func show(_ chunk: Data) {
        lock.lock()
        shown += chunk
        var replies: [String] = []
        while let (reply, end) = nextPrompt() {
            replies.append(reply)
            answered = end
        }
        lock.unlock()
        for reply in replies { type(reply + "\n") }
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
