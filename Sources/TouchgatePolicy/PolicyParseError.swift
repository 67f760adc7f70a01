/// Why a stored policy string could not be parsed into an ``AccessPolicy``.
///
/// Offsets count Unicode scalars from the start of the string.
public enum PolicyParseError: Error, Hashable, Sendable {
    /// The string is empty.
    case empty
    /// The string is longer than ``AccessPolicy/maximumStringLength``.
    case tooLong(length: Int)
    /// Parentheses are nested deeper than ``AccessPolicy/maximumNesting``.
    case nestedTooDeeply(at: Int)
    /// A word that is not one of `biometry-any`, `biometry-current-set`, `passphrase`,
    /// `user-presence`.
    case unknownFlag(String, at: Int)
    /// A flag or `(` was expected (for example after `&`, or at the start).
    case expectedFlag(at: Int)
    /// A character that has no meaning at this place.
    case unexpectedCharacter(Character, at: Int)
    /// A `(` without its `)`.
    case unclosedParenthesis(at: Int)
}

extension PolicyParseError: CustomStringConvertible {
    /// A one-line explanation for a person: what is wrong, where (by character, counting
    /// from 1, when it is not the start), and what a policy is made of.
    public var description: String {
        switch self {
        case .empty:
            "empty access policy; \(Self.grammar)"
        case .tooLong(let length):
            "access policy is \(length) characters long (at most \(AccessPolicy.maximumStringLength))"
        case .nestedTooDeeply(let offset):
            "access policy nests parentheses too deeply\(Self.place(offset)) (at most \(AccessPolicy.maximumNesting))"
        case .unknownFlag(let word, let offset):
            "unknown access flag '\(word)'\(Self.place(offset))"
                + (Self.nearestFlag(to: word).map { " (did you mean \($0)?)" } ?? "") + "; \(Self.grammar)"
        case .expectedFlag(let offset):
            "expected an access flag or '('\(Self.place(offset)); \(Self.grammar)"
        case .unexpectedCharacter(let character, let offset):
            "unexpected character '\(character)'\(Self.place(offset)); \(Self.grammar)"
        case .unclosedParenthesis(let offset):
            "the parenthesis opened at character \(offset + 1) is not closed"
        }
    }

    /// What every message but the length's ends with.
    static let grammar = "a policy is biometry-any, biometry-current-set, passphrase or user-presence, "
        + "joined with & (all of) and | (any of), as in 'biometry-any|passphrase'"

    /// Where, for a person: nothing at the start of the string, else the character counting from 1.
    static func place(_ offset: Int) -> String { offset == 0 ? "" : " at character \(offset + 1)" }

    /// The flag `word` is most likely a typo of: within two edits, the closest.
    static func nearestFlag(to word: String) -> String? {
        let typed = Array(word.lowercased().unicodeScalars)
        guard typed.count <= 64 else { return nil }
        let flags: [AccessPolicy] = [.biometryAny, .biometryCurrentSet, .passphrase, .userPresence]
        let scored = flags.compactMap(\.flagName).map { ($0, editDistance(typed, Array($0.unicodeScalars))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2 else { return nil }
        return best.0
    }

    /// Levenshtein distance, one row at a time (words here are a few dozen characters).
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
