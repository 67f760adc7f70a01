import ArgumentParser
import TouchgateAPI
import TouchgateTerminal

/// ``TerminalRun`` for an ArgumentParser command: a failing status becomes its `ExitCode`.
enum CommandRunner {
    static func run(json: Bool, _ body: @escaping @Sendable (Console) async throws -> Int32) async throws {
        let status = await TerminalRun.run(json: json, body)
        if status != ExitStatus.success { throw ExitCode(status) }
    }
}
