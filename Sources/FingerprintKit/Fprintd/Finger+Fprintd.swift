extension Finger {
    /// fprintd's name for the finger: `right-index-finger`, but `right-thumb` (fprintd's
    /// `finger_num_to_name`); nil for ``unknown``, which fprintd has no name for.
    public var fprintdName: String? {
        switch self {
        case .unknown: return nil
        case .leftThumb, .rightThumb: return name
        default: return name + "-finger"
        }
    }
}
