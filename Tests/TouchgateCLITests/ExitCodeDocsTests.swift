import Foundation
import Testing
import TouchgateTestSupport

/// `touchgate --help` (and so `man touchgate`, made from it) names the same exit statuses
/// as the table in docs/COMMANDS.md: issue 21 found the two at odds.
struct ExitCodeDocsTests {
    @Test("touchgate --help lists exactly the exit statuses docs/COMMANDS.md's table documents")
    func helpAndTableAgree() async throws {
        let help = try await runProgram(CLIProcess.binary, ["--help"])
        #expect(help.status == 0, "\(help.stderr)")
        // ArgumentParser wraps the discussion: join it back into one line first.
        let text = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        let start = try #require(text.range(of: "Exit codes:"), "\(help.stdout)")
        let end = try #require(text.range(of: "See man touchgate", range: start.upperBound..<text.endIndex))
        let listed = Set(text[start.upperBound..<end.lowerBound].matches(of: /(?:^|[ ,])(\d+) [a-z`]/).compactMap { Int($0.output.1) })
        let table = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/COMMANDS.md"), encoding: .utf8)
        let documented = Set(table.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^\| (\d+) \|/).flatMap { Int($0.output.1) }
        })
        #expect(documented.count > 15, "\(documented)")
        #expect(listed == documented, "only in --help: \(listed.subtracting(documented).sorted()); only in the table: \(documented.subtracting(listed).sorted())")
    }

    @Test("man touchgate's EXIT STATUS (man/extra/touchgate.mdoc) lists exactly the table's statuses")
    func manPageAndTableAgree() throws {
        let extra = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("man/extra/touchgate.mdoc"), encoding: .utf8)
        let part = try #require(extra.components(separatedBy: ".\\\" @exit").last?.components(separatedBy: ".\\\" @before-see-also").first)
        let listed = Set(part.split(separator: "\n").compactMap { $0.firstMatch(of: /^\.It (\d+)$/).flatMap { Int($0.output.1) } })
        let table = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/COMMANDS.md"), encoding: .utf8)
        let documented = Set(table.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^\| (\d+) \|/).flatMap { Int($0.output.1) }
        })
        #expect(listed == documented, "only in the page: \(listed.subtracting(documented).sorted()); only in the table: \(documented.subtracting(listed).sorted())")
    }
}
