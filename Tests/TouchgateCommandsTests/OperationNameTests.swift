import ArgumentParser
import Foundation
import Testing
@testable import TouchgateCommands
import TouchgateAPI

/// One name per operation: its wire name (`secret.get`), its table entry
/// (`Operations.SecretGet`), its case and its use case on `TouchgateRequests` (`secretGet`),
/// and its command (`touchgate secret get`).
@Suite struct OperationNameTests {
    /// `a.b-c` as `aBC`.
    static func camel(_ wire: String) -> String {
        var out = "", upper = false
        for character in wire {
            if character == "." || character == "-" { upper = true; continue }
            out += upper ? character.uppercased() : String(character)
            upper = false
        }
        return out
    }

    /// Swift reserves `init`: that operation's case and use case are `initialize`.
    static func swiftName(_ operation: DaemonOperation) -> String {
        operation == .initialize ? "initialize" : camel(operation.rawValue)
    }

    @Test("every case and table entry is named after its wire name")
    func casesAndEntries() {
        for operation in DaemonOperation.allCases {
            #expect(String(describing: operation) == Self.swiftName(operation), "\(operation.rawValue)")
            let entry = String(describing: Operations.spec(operation))
            #expect(entry.prefix(1).lowercased() + entry.dropFirst() == camel(operation.rawValue), "\(operation.rawValue): \(entry)")
        }
    }

    private func camel(_ wire: String) -> String { Self.camel(wire) }

    @Test("every use case of TouchgateRequests is named after its operation's wire name")
    func useCases() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: root.appendingPathComponent("Sources/TouchgateAPI/TouchgateRequests.swift"), encoding: .utf8)
        let start = try #require(source.range(of: "public protocol TouchgateRequests"))
        let end = try #require(source[start.upperBound...].range(of: "\n}\n"))
        let requirements = source[start.upperBound..<end.lowerBound].split(separator: "\n")
            .compactMap { line -> String? in
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard trimmed.hasPrefix("func ") else { return nil }
                return String(trimmed.dropFirst(5).prefix { $0 != "(" })
            }
        let names = Set(DaemonOperation.allCases.map(Self.swiftName))
        #expect(!requirements.isEmpty)
        for requirement in requirements {
            #expect(names.contains(requirement), "TouchgateRequests.\(requirement) is named after no operation")
        }
    }

    @Test("every operation a person asks for is the command of the same words")
    func commands() {
        // Asked as part of another command: the count beside `audit show`'s page, and the
        // orphans `prints delete --orphans` removes; a key is added and a signature asked
        // through `touchgate agent` (ssh-add, ssh), and through its Secret Service (secret-tool, libsecret);
        // ssh-agent's confirmation of a key added with -c through `touchgate askpass`; a match
        // the PAM module did not use; a passkey's verification, registration, sign-in and
        // renaming, asked by a browser through the authenticator (`touchgate passkey serve`).
        let notCommands: Set<DaemonOperation> = [.auditCount, .printsDeleteOrphans, .sshAdd, .sshSign, .sshSkEnroll, .sshSkSign,
                                                 .sshConfirm, .verifyUnused, .passkeyVerify, .passkeyMake, .passkeyAssert,
                                                 .passkeyUpdate,
                                                 .secretServiceSearch, .secretServiceStore, .secretServiceRead, .secretServiceDelete]
        for operation in DaemonOperation.allCases where !notCommands.contains(operation) {
            var command: any ParsableCommand.Type = Touchgate.self
            for word in operation.rawValue.split(separator: ".") {
                guard let next = command.configuration.subcommands.first(where: { $0._commandName == word }) else {
                    Issue.record("\(operation.rawValue): no command '\(word)' under '\(command._commandName)'")
                    break
                }
                command = next
            }
        }
    }
}
