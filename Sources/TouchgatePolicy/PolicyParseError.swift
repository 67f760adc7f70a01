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
    /// A one-line explanation naming the position of the problem.
    public var description: String {
        switch self {
        case .empty:
            "empty access policy"
        case .tooLong(let length):
            "access policy is \(length) characters long (at most \(AccessPolicy.maximumStringLength))"
        case .nestedTooDeeply(let offset):
            "access policy nests parentheses too deeply at offset \(offset) (at most \(AccessPolicy.maximumNesting))"
        case .unknownFlag(let word, let offset):
            "unknown access flag '\(word)' at offset \(offset) (expected biometry-any, biometry-current-set, passphrase or user-presence)"
        case .expectedFlag(let offset):
            "expected an access flag or '(' at offset \(offset)"
        case .unexpectedCharacter(let character, let offset):
            "unexpected character '\(character)' at offset \(offset)"
        case .unclosedParenthesis(let offset):
            "parenthesis opened at offset \(offset) is not closed"
        }
    }
}
