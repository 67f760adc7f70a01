/// The authenticated state (lockout counters, policy settings, the enrollment generation,
/// the template-sealing marker) does not match what touchgate last wrote.
///
/// Thrown by every read and update of ``StateStore``, by ``StoreTransaction`` state
/// operations, and by the vault operations that change `templates_sealed`, before
/// anything is written: a failed check never writes. `detail` says what was found; it
/// names tables, keys and record numbers, never a value. The repair command
/// (`touchgate repair`) inspects the state with ``StateStore/unverifiedState()`` and
/// writes chosen values back with ``StateStore/reseal(_:templatesSealed:recording:)``.
public enum IntegrityError: Error, Equatable, CustomStringConvertible {
    /// The state, or the audit head that authenticates it, was edited, removed or swapped
    /// for an older copy outside touchgate.
    case stateTampered(detail: String)

    /// A one-line message saying what was found and what to run (never holds a secret).
    public var description: String {
        switch self {
        case let .stateTampered(detail):
            return "the lockout, settings or enrollment state failed its integrity check: \(detail); nothing was changed. Run `touchgate repair` to inspect and reseal it"
        }
    }
}
