/// What is enrolled right now, as the caller (vault or reader) knows it.
///
/// Passed to each evaluation so the policy core can refuse biometric requirements when
/// nothing is enrolled and invalidate items bound to an older ``EnrollmentState``.
public struct EnrollmentStatus: Hashable, Sendable {
    /// The digest of the current enrolled set.
    public var state: EnrollmentState
    /// How many prints are enrolled; zero means biometric requirements cannot be met.
    public var printCount: Int

    /// Creates a status.
    public init(state: EnrollmentState, printCount: Int) {
        self.state = state
        self.printCount = printCount
    }
}
