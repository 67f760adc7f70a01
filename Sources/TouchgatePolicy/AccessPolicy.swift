/// The access-control requirement guarding one item, like a Keychain access-control list.
///
/// Leaves name one way of authenticating; ``and(_:_:)`` and ``or(_:_:)`` compose them.
/// The policy is stored in its stable string form (see ``description`` and
/// ``init(parsing:)``), for example `biometry-current-set|passphrase`.
///
/// - ``biometryAny``: any enrolled finger, now or later.
/// - ``biometryCurrentSet``: a finger of the set enrolled when the item was written; the
///   item becomes unreadable for good once any finger is enrolled or deleted, even when
///   another branch of the policy could still be satisfied.
/// - ``passphrase``: the vault passphrase.
/// - ``userPresence``: a finger or the passphrase (`biometry-any|passphrase`).
public indirect enum AccessPolicy: Hashable, Sendable {
    /// Any enrolled finger (`biometry-any`).
    case biometryAny
    /// A finger of the set enrolled when the item was bound (`biometry-current-set`).
    case biometryCurrentSet
    /// The vault passphrase (`passphrase`).
    case passphrase
    /// A finger or the passphrase (`user-presence`).
    case userPresence
    /// Both requirements must be met (`left&right`).
    case and(AccessPolicy, AccessPolicy)
    /// Either requirement suffices; the left one is tried first (`left|right`).
    case or(AccessPolicy, AccessPolicy)
}

extension AccessPolicy {
    /// Whether any leaf of the policy is ``biometryCurrentSet``.
    ///
    /// An item whose policy references the current set is bound to an
    /// ``EnrollmentState`` and is invalidated when that state changes.
    public var referencesCurrentSet: Bool {
        switch self {
        case .biometryCurrentSet: true
        case .biometryAny, .passphrase, .userPresence: false
        case .and(let left, let right), .or(let left, let right):
            left.referencesCurrentSet || right.referencesCurrentSet
        }
    }

    /// Whether the policy can be satisfied without a fingerprint.
    public var isSatisfiableWithoutBiometry: Bool {
        satisfied(biometry: false, passphrase: true)
    }

    /// Whether the policy is met by the given proven factors.
    ///
    /// - Parameters:
    ///   - biometry: a finger of the current set matched.
    ///   - passphrase: the passphrase was verified.
    public func satisfied(biometry: Bool, passphrase: Bool) -> Bool {
        switch self {
        case .biometryAny, .biometryCurrentSet: biometry
        case .passphrase: passphrase
        case .userPresence: biometry || passphrase
        case .and(let left, let right):
            left.satisfied(biometry: biometry, passphrase: passphrase)
                && right.satisfied(biometry: biometry, passphrase: passphrase)
        case .or(let left, let right):
            left.satisfied(biometry: biometry, passphrase: passphrase)
                || right.satisfied(biometry: biometry, passphrase: passphrase)
        }
    }

    /// Whether the policy needs the passphrase and nothing else (no biometric leaf).
    var isPassphraseOnly: Bool {
        switch self {
        case .passphrase: true
        case .biometryAny, .biometryCurrentSet, .userPresence: false
        case .and(let left, let right), .or(let left, let right):
            left.isPassphraseOnly && right.isPassphraseOnly
        }
    }
}
