// The stable string form of an access policy, as stored beside each item and bound into
// the item's associated data. Grammar (no spaces; `&` binds tighter than `|`, both
// associate to the left):
//
//     policy := term ('|' term)*
//     term   := factor ('&' factor)*
//     factor := flag | '(' policy ')'
//     flag   := 'biometry-any' | 'biometry-current-set' | 'passphrase' | 'user-presence'

extension AccessPolicy {
    /// The longest policy string ``init(parsing:)`` accepts.
    public static let maximumStringLength = 1024
    /// The deepest parenthesis nesting ``init(parsing:)`` accepts.
    public static let maximumNesting = 16

    /// The storage name of a leaf flag.
    var flagName: String? {
        switch self {
        case .biometryAny: "biometry-any"
        case .biometryCurrentSet: "biometry-current-set"
        case .passphrase: "passphrase"
        case .userPresence: "user-presence"
        case .and, .or: nil
        }
    }

    /// Parses the stable string form, e.g. `biometry-any&passphrase`.
    ///
    /// Whitespace is not allowed: the stored form is canonical, so that
    /// `AccessPolicy(parsing: p.description) == p` and equal policies print alike.
    /// - Throws: ``PolicyParseError`` naming the offending position.
    public init(parsing string: String) throws(PolicyParseError) {
        var parser = Parser(string)
        self = try parser.parseWhole()
    }
}

extension AccessPolicy: CustomStringConvertible {
    /// The stable string form, with parentheses only where the grammar needs them.
    public var description: String {
        switch self {
        case .biometryAny, .biometryCurrentSet, .passphrase, .userPresence:
            return flagName!
        case .or(let left, let right):
            let rightText = if case .or = right { "(\(right))" } else { right.description }
            return "\(left)|\(rightText)"
        case .and(let left, let right):
            let leftText = if case .or = left { "(\(left))" } else { left.description }
            let rightText: String
            switch right {
            case .and, .or: rightText = "(\(right))"
            default: rightText = right.description
            }
            return "\(leftText)&\(rightText)"
        }
    }
}

extension AccessPolicy: LosslessStringConvertible {
    /// Parses the stable string form, or returns nil; use ``init(parsing:)`` for the reason.
    public init?(_ description: String) {
        guard let policy = try? AccessPolicy(parsing: description) else { return nil }
        self = policy
    }
}

extension AccessPolicy: Codable {
    /// Decodes the stable string form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try AccessPolicy(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: error.description)
        }
    }

    /// Encodes the stable string form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// A recursive-descent parser over the Unicode scalars of a policy string.
private struct Parser {
    private let scalars: [Unicode.Scalar]
    private var position = 0
    private var depth = 0

    init(_ string: String) {
        scalars = Array(string.unicodeScalars)
    }

    mutating func parseWhole() throws(PolicyParseError) -> AccessPolicy {
        guard !scalars.isEmpty else { throw .empty }
        guard scalars.count <= AccessPolicy.maximumStringLength else {
            throw .tooLong(length: scalars.count)
        }
        let policy = try parseOr()
        if position < scalars.count {
            throw .unexpectedCharacter(Character(scalars[position]), at: position)
        }
        return policy
    }

    private mutating func parseOr() throws(PolicyParseError) -> AccessPolicy {
        var policy = try parseAnd()
        while peek == "|" {
            position += 1
            policy = .or(policy, try parseAnd())
        }
        return policy
    }

    private mutating func parseAnd() throws(PolicyParseError) -> AccessPolicy {
        var policy = try parseFactor()
        while peek == "&" {
            position += 1
            policy = .and(policy, try parseFactor())
        }
        return policy
    }

    private mutating func parseFactor() throws(PolicyParseError) -> AccessPolicy {
        guard let scalar = peek else { throw .expectedFlag(at: position) }
        if scalar == "(" {
            let open = position
            depth += 1
            guard depth <= AccessPolicy.maximumNesting else { throw .nestedTooDeeply(at: open) }
            position += 1
            let inner = try parseOr()
            guard peek == ")" else {
                if position < scalars.count {
                    throw .unexpectedCharacter(Character(scalars[position]), at: position)
                }
                throw .unclosedParenthesis(at: open)
            }
            position += 1
            depth -= 1
            return inner
        }
        let start = position
        while let next = peek, next == "-" || ("a"..."z").contains(next) {
            position += 1
        }
        guard position > start else {
            if scalar == "&" || scalar == "|" || scalar == ")" { throw .expectedFlag(at: start) }
            throw .unexpectedCharacter(Character(scalar), at: start)
        }
        var word = String.UnicodeScalarView()
        word.append(contentsOf: scalars[start..<position])
        switch String(word) {
        case "biometry-any": return .biometryAny
        case "biometry-current-set": return .biometryCurrentSet
        case "passphrase": return .passphrase
        case "user-presence": return .userPresence
        case let other: throw .unknownFlag(other, at: start)
        }
    }

    private var peek: Unicode.Scalar? {
        position < scalars.count ? scalars[position] : nil
    }
}
