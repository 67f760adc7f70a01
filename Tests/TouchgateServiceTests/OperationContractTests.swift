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

    @Test("every operation has one entry in the table, whose argument keys are exactly those its contract documents")
    func argumentsAreTyped() throws {
        let entries = Operations.served as [any OperationSpec.Type] + Operations.carrying
        var operations: [String] = []
        for entry in entries { operations.append(entry.operation.rawValue) }
        #expect(operations.sorted() == DaemonOperation.allCases.map(\.rawValue).sorted(), "one table entry per operation")
        let common = Set(OperationContract.commonArguments)
        let commonFields = Set(Mirror(reflecting: RequestArguments()).children.compactMap(\.label).map(WireCoding.kebab))
        #expect(commonFields == common.union(["user"]), "the arguments every request may carry")
        for entry in entries {
            let keys = try KeyRecorder.keys(of: entry)
            // `user` is common: the gate reads it; an operation may read it too (prints.list's filter).
            let documented = Set(entry.operation.contract.arguments).subtracting(["user"])
            #expect(keys.subtracting(["user"]) == documented, "\(entry.operation.rawValue): typed \(keys.sorted()), documented \(documented.sorted())")
        }
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
            case .agentOnly:
                #expect(throws: Never.self) {
                    try CallerRules.admit(operation, callerIsRoot: false, callerIsVerifiedAgent: true, namedUser: nil)
                }
                #expect(throws: Never.self) { try CallerRules.admit(operation, callerIsRoot: true, namedUser: nil) }
                #expect(performing: { try CallerRules.admit(operation, callerIsRoot: false, namedUser: nil) },
                        throws: { ($0 as? ServiceError)?.code == .forbidden })
            }
        }
        #expect(DaemonOperation.allCases.filter { $0.contract.callers == .ownStoreOnly } == [.migrate])
        // Every operation that names a program on the session bus is the agent's alone.
        #expect(Set(DaemonOperation.allCases.filter { $0.contract.callers == .agentOnly })
                    == [.secretServiceSearch, .secretServiceStore, .secretServiceDelete, .secretServiceRead, .approve])
        #expect(DaemonOperation.allCases.filter(\.contract.takesDescriptors) == [.migrate])
        #expect(DaemonOperation.allCases.filter { !$0.contract.writesRecords }.count == 13,
                "the reads that never count against the request rate")
    }
}


/// A decoder that answers every question with an empty value and writes down the top-level
/// keys asked for: the wire keys of a `Decodable` type, without an instance of it.
private final class KeyRecorder: Decoder, @unchecked Sendable {
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]
    var keys: Set<String> = []
    let depth: Int

    init(depth: Int = 0) { self.depth = depth }

    static func keys(of spec: any OperationSpec.Type) throws -> Set<String> {
        try keys(spec)
    }

    private static func keys<Spec: OperationSpec>(_ spec: Spec.Type) throws -> Set<String> {
        let recorder = KeyRecorder()
        _ = try Spec.Arguments(from: recorder)
        return recorder.keys
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed<Key>(recorder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(depth: depth + 1) }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: KeyRecorder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        private func note(_ key: Key) { if recorder.depth == 0 { recorder.keys.insert(WireCoding.kebab(key.stringValue)) } }
        func decodeNil(forKey key: Key) throws -> Bool { note(key); return true }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            note(key)
            return try Single.value(T.self, depth: recorder.depth + 1)
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { note(key); return nil }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            note(key)
            return KeyedDecodingContainer(Keyed<N>(recorder: KeyRecorder(depth: recorder.depth + 1)))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { note(key); return Unkeyed() }
        func superDecoder() throws -> any Decoder { KeyRecorder(depth: recorder.depth + 1) }
        func superDecoder(forKey key: Key) throws -> any Decoder { note(key); return KeyRecorder(depth: recorder.depth + 1) }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        struct Empty: Error {}
        mutating func decodeNil() throws -> Bool { true }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw Empty() }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> { throw Empty() }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Empty() }
        mutating func superDecoder() throws -> any Decoder { throw Empty() }
    }

    struct Single: SingleValueDecodingContainer {
        let depth: Int
        var codingPath: [any CodingKey] { [] }
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try Self.value(T.self, depth: depth) }

        /// An empty value of `type`: zero, false, a string, a date, or the type decoded from another recorder.
        static func value<T: Decodable>(_ type: T.Type, depth: Int) throws -> T {
            switch type {
            // A string that also reads as a time, for arguments read by hand as one.
            case is String.Type: return "1970-01-01T00:00:00Z" as! T
            case is Bool.Type: return false as! T
            case is Int.Type: return 0 as! T
            case is UInt32.Type: return UInt32(0) as! T
            case is UInt8.Type: return UInt8(0) as! T
            case is Date.Type: return Date(timeIntervalSince1970: 0) as! T
            default: return try T(from: KeyRecorder(depth: depth))
            }
        }
    }
}
