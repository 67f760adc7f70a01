import Foundation
import Testing
import TouchgateService
@testable import TouchgateAPI

/// The operation table (``OperationContract``): declared once, read by the daemon's
/// admission rules, and rendered into docs/PROTOCOL.md.
@Suite struct OperationContractTests {
    static let protocolDocument = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")

    @Test("docs/PROTOCOL.md's operation table is the one the contracts render")
    func documentMatchesTable() throws {
        let text = try String(contentsOf: Self.protocolDocument, encoding: .utf8)
        let begin = "<!-- operations: rendered from OperationContract; OperationContractTests keeps them equal -->\n"
        let end = "<!-- operations: end -->"
        let start = try #require(text.range(of: begin), "PROTOCOL.md lacks the line \(begin)")
        let stop = try #require(text.range(of: end, range: start.upperBound..<text.endIndex))
        let table = String(text[start.upperBound..<stop.lowerBound])
        #expect(table == DaemonOperation.markdownTable, """
            PROTOCOL.md's operation table differs from the contracts; replace it with:
            \(DaemonOperation.markdownTable)
            """)
    }

    @Test("every argument a contract names is a field of the request, and every field is some operation's or common")
    func argumentsAreFields() {
        let fields = Set(Mirror(reflecting: RequestArguments()).children.compactMap(\.label).map(WireCoding.kebab))
        let named = Set(DaemonOperation.allCases.flatMap(\.contract.arguments))
        #expect(named.subtracting(fields).isEmpty, "named but not fields: \(named.subtracting(fields))")
        let common = Set(OperationContract.commonArguments)
        #expect(common.isSubset(of: fields))
        #expect(fields.subtracting(named).subtracting(common).isEmpty,
                "fields no operation reads: \(fields.subtracting(named).subtracting(common))")
    }

    @Test("admission: root-only for others is forbidden, capture never through the daemon, migrate never for a named user")
    func admission() {
        for operation in DaemonOperation.allCases {
            switch operation.contract.callers {
            case .anyone:
                #expect(throws: Never.self) { try CallerRules.admit(operation, callerIsRoot: false, namedUser: nil) }
            case .rootOnly:
                #expect(throws: Never.self) { try CallerRules.admit(operation, callerIsRoot: true, namedUser: "ana") }
                #expect(performing: { try CallerRules.admit(operation, callerIsRoot: false, namedUser: nil) },
                        throws: { ($0 as? ServiceError)?.code == .forbidden })
            case .ownStoreOnly:
                #expect(throws: Never.self) { try CallerRules.admit(operation, callerIsRoot: true, namedUser: nil) }
                #expect(performing: { try CallerRules.admit(operation, callerIsRoot: true, namedUser: "ana") },
                        throws: { ($0 as? ServiceError)?.code == .usage })
            case .notThroughDaemon:
                #expect(performing: { try CallerRules.admit(operation, callerIsRoot: true, namedUser: nil) },
                        throws: { ($0 as? ServiceError)?.code == .usage })
            }
        }
        #expect(DaemonOperation.allCases.filter { $0.contract.callers == .ownStoreOnly } == [.migrate])
        #expect(DaemonOperation.allCases.filter(\.contract.takesDescriptors) == [.migrate])
        #expect(DaemonOperation.allCases.filter { !$0.contract.writesRecords }.count == 8,
                "the reads that never count against the request rate")
    }
}
