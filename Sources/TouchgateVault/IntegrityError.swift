/// The authenticated state (lockout counters, policy settings, the enrollment generation,
/// the template-sealing marker, the passphrase wrapping, every item's version) does not
/// match what touchgate last wrote.
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
    /// The store is older than the TPM's counter says: an older copy was put back (the
    /// whole data directory, the database, or its WAL cut). Nothing in it was changed.
    case rolledBack(detail: String)

    /// A one-line message saying what was found and what to run (never holds a secret).
    public var description: String {
        switch self {
        case let .stateTampered(detail):
            return "the store's authenticated state (lockout, settings, enrollment, passphrase, item versions) failed its integrity check: \(detail); nothing was changed. Run `touchgate repair` to inspect and reseal it"
        case let .rolledBack(detail):
            return "refusing a rolled-back store: \(detail)"
        }
    }
}
