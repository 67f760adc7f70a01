import CFPrint

/// A finger, named as people and fprintd name them (`right-index`).
public enum Finger: Int32, CaseIterable, Sendable, Codable, CustomStringConvertible {
    /// `FP_FINGER_UNKNOWN`: prints made by readers that do not record the finger.
    case unknown = 0
    case leftThumb, leftIndex, leftMiddle, leftRing, leftLittle
    case rightThumb, rightIndex, rightMiddle, rightRing, rightLittle

    /// The name used on the command line and in JSON: `left-thumb` … `right-little`.
    public var name: String {
        switch self {
        case .unknown: return "unknown"
        case .leftThumb: return "left-thumb"
        case .leftIndex: return "left-index"
        case .leftMiddle: return "left-middle"
        case .leftRing: return "left-ring"
        case .leftLittle: return "left-little"
        case .rightThumb: return "right-thumb"
        case .rightIndex: return "right-index"
        case .rightMiddle: return "right-middle"
        case .rightRing: return "right-ring"
        case .rightLittle: return "right-little"
        }
    }

    /// The finger with this name (also accepts fprintd's `right-index-finger` form).
    public init?(name: String) {
        var key = name.lowercased()
        if key.hasSuffix("-finger") { key.removeLast("-finger".count) }
        guard let finger = Finger.allCases.first(where: { $0.name == key }) else { return nil }
        self = finger
    }

    public var description: String { name }

    var fpFinger: FpFinger { FpFinger(rawValue: UInt32(rawValue)) }
}
