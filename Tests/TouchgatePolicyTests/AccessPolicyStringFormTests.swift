import Foundation
import Testing
import TouchgatePolicy

@Suite("Access policy string form")
struct AccessPolicyStringFormTests {
    @Test(
        "canonical strings parse and print back unchanged",
        arguments: [
            "biometry-any", "biometry-current-set", "passphrase", "user-presence",
            "biometry-any&passphrase", "biometry-current-set|passphrase",
            "biometry-any|passphrase&biometry-current-set",
            "(biometry-any|passphrase)&biometry-current-set",
            "biometry-any&(passphrase&user-presence)",
            "biometry-any|(passphrase|user-presence)",
            "biometry-any&passphrase&user-presence",
            "(biometry-any|passphrase)&(biometry-current-set|user-presence)",
        ])
    func roundTrip(text: String) throws {
        let policy = try AccessPolicy(parsing: text)
        #expect(policy.description == text)
        #expect(try AccessPolicy(parsing: policy.description) == policy)
    }

    @Test("flags map to their cases and & binds tighter than |")
    func structure() throws {
        #expect(try AccessPolicy(parsing: "biometry-any&passphrase") == .and(.biometryAny, .passphrase))
        #expect(try AccessPolicy(parsing: "biometry-current-set|passphrase") == .or(.biometryCurrentSet, .passphrase))
        #expect(
            try AccessPolicy(parsing: "biometry-any|passphrase&user-presence")
                == .or(.biometryAny, .and(.passphrase, .userPresence)))
        #expect(
            try AccessPolicy(parsing: "passphrase|biometry-any|user-presence")
                == .or(.or(.passphrase, .biometryAny), .userPresence))
    }

    @Test("redundant parentheses are dropped from the printed form")
    func canonicalization() throws {
        #expect(try AccessPolicy(parsing: "(biometry-any)").description == "biometry-any")
        #expect(try AccessPolicy(parsing: "((passphrase)|(biometry-any))").description == "passphrase|biometry-any")
        #expect(try AccessPolicy(parsing: "(biometry-any&passphrase)|user-presence").description
            == "biometry-any&passphrase|user-presence")
    }

    @Test("every generated tree survives print then parse")
    func generatedTrees() throws {
        var generator = SplitMix(seed: 42)
        for _ in 0..<500 {
            let policy = randomPolicy(depth: 4, using: &generator)
            #expect(try AccessPolicy(parsing: policy.description) == policy, "\(policy)")
        }
    }

    @Test(
        "malformed strings are rejected with a typed reason",
        arguments: [
            ("", PolicyParseError.empty),
            ("biometry", .unknownFlag("biometry", at: 0)),
            ("biometry-any&fingerprint", .unknownFlag("fingerprint", at: 13)),
            ("biometry-any&", .expectedFlag(at: 13)),
            ("&passphrase", .expectedFlag(at: 0)),
            ("biometry-any||passphrase", .expectedFlag(at: 13)),
            ("()", .expectedFlag(at: 1)),
            ("(passphrase", .unclosedParenthesis(at: 0)),
            ("passphrase)", .unexpectedCharacter(")", at: 10)),
            ("passphrase biometry-any", .unexpectedCharacter(" ", at: 10)),
            ("Passphrase", .unexpectedCharacter("P", at: 0)),
            ("passphrase&biometry_any", .unknownFlag("biometry", at: 11)),
        ])
    func rejection(text: String, expected: PolicyParseError) {
        #expect(throws: expected) { try AccessPolicy(parsing: text) }
    }

    @Test("messages name the character counting from 1, suggest the flag a typo is closest to, and say what a policy is made of")
    func messagesForPeople() {
        let typo = PolicyParseError.unknownFlag("biometry-anyy", at: 0).description
        #expect(typo.hasPrefix("unknown access flag 'biometry-anyy' (did you mean biometry-any?); a policy is"), "\(typo)")
        let second = PolicyParseError.unknownFlag("pasphrase", at: 13).description
        #expect(second.hasPrefix("unknown access flag 'pasphrase' at character 14 (did you mean passphrase?)"), "\(second)")
        // Nothing close: no guess.
        #expect(!PolicyParseError.unknownFlag("fingerprint", at: 0).description.contains("did you mean"))
        #expect(PolicyParseError.unexpectedCharacter(" ", at: 12).description.contains("at character 13"))
        for error in [PolicyParseError.empty, .expectedFlag(at: 0), .unexpectedCharacter("!", at: 0), .unclosedParenthesis(at: 0)] {
            #expect(!error.description.contains("offset"), "\(error.description)")
        }
    }

    @Test("nesting and length are bounded")
    func limits() {
        let deep = String(repeating: "(", count: 17) + "passphrase" + String(repeating: ")", count: 17)
        #expect(throws: PolicyParseError.nestedTooDeeply(at: 16)) { try AccessPolicy(parsing: deep) }
        let allowed = String(repeating: "(", count: 16) + "passphrase" + String(repeating: ")", count: 16)
        #expect((try? AccessPolicy(parsing: allowed)) == .passphrase)
        let long = Array(repeating: "passphrase", count: 100).joined(separator: "|")
        #expect(throws: PolicyParseError.tooLong(length: long.unicodeScalars.count)) { try AccessPolicy(parsing: long) }
        #expect(AccessPolicy("nonsense") == nil)
    }

    @Test("Codable uses the string form")
    func codable() throws {
        let policy = AccessPolicy.or(.biometryCurrentSet, .passphrase)
        let data = try JSONEncoder().encode([policy])
        #expect(String(decoding: data, as: UTF8.self) == #"["biometry-current-set|passphrase"]"#)
        #expect(try JSONDecoder().decode([AccessPolicy].self, from: data) == [policy])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([AccessPolicy].self, from: Data(#"["biometry"]"#.utf8))
        }
    }

    @Test("currentSet references and passphrase-only satisfiability are derived from the tree")
    func derivedProperties() throws {
        #expect(try AccessPolicy(parsing: "biometry-current-set|passphrase").referencesCurrentSet)
        #expect(!(try AccessPolicy(parsing: "biometry-any|passphrase").referencesCurrentSet))
        #expect(AccessPolicy.userPresence.isSatisfiableWithoutBiometry)
        #expect(!AccessPolicy.and(.biometryAny, .passphrase).isSatisfiableWithoutBiometry)
    }
}

/// A small deterministic generator so generated cases are the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

func randomPolicy(depth: Int, using generator: inout SplitMix) -> AccessPolicy {
    let leaves: [AccessPolicy] = [.biometryAny, .biometryCurrentSet, .passphrase, .userPresence]
    if depth == 0 || Int.random(in: 0..<3, using: &generator) == 0 {
        return leaves.randomElement(using: &generator)!
    }
    let left = randomPolicy(depth: depth - 1, using: &generator)
    let right = randomPolicy(depth: depth - 1, using: &generator)
    return Bool.random(using: &generator) ? .and(left, right) : .or(left, right)
}
