import CPWQuality
import FoundationEssentials
import Synchronization
import TouchgateAPI
import TouchgateVault

/// How well a new passphrase protects the vault, judged by libpwquality (the checks
/// `passwd` and cryptsetup use: length, character classes, the cracklib dictionary, the
/// user's name) with the system's `/etc/security/pwquality.conf`.
///
/// The passphrase is all that protects the data at rest (the fingerprint is only a yes/no),
/// so what libpwquality refuses is refused here too, and a low score is a warning.
enum PassphraseStrength {
    /// The verdict.
    enum Verdict: Equatable {
        /// Refused, with libpwquality's reason.
        case rejected(String)
        /// Accepted with a warning.
        case weak(String)
        /// Accepted.
        case strong
        /// Not judged: libpwquality could not run its checks (cracklib's dictionary missing).
        case uncheckable(String)
    }

    /// Scores below this (0–100) are accepted with a warning.
    static let weakBelow: Int32 = 50

    /// cracklib, behind libpwquality's dictionary check, is not thread-safe: one check at a time.
    private static let lock = Mutex(())

    /// Judges `passphrase` for `user`. The bytes go to libpwquality as a C string made in
    /// guarded memory; a passphrase holding a NUL byte is refused.
    static func assess(_ passphrase: SecretBytes, user: String) -> Verdict {
        lock.withLock { _ in check(passphrase, user: user) }
    }

    private static func check(_ passphrase: SecretBytes, user: String) -> Verdict {
        guard let settings = pwquality_default_settings() else { return .strong }
        defer { pwquality_free_settings(settings) }
        _ = pwquality_read_config(settings, nil, nil)
        let verdict: Verdict? = passphrase.withUnsafeBytes { bytes in
            guard !bytes.contains(0) else { return .rejected("the passphrase contains a NUL byte") }
            let text = SecretBytes.make(count: bytes.count + 1) { out in
                out.copyMemory(from: bytes)
                out[bytes.count] = 0
            }
            return text.withUnsafeBytes { terminated in
                var auxiliary: UnsafeMutableRawPointer?
                let score = pwquality_check(settings, terminated.baseAddress!.assumingMemoryBound(to: CChar.self),
                                            nil, user, &auxiliary)
                // cracklib answers this for every passphrase when its dictionary is not
                // installed: the system's fault, not the passphrase's.
                if score == PWQ_ERROR_CRACKLIB_CHECK, let auxiliary,
                   String(cString: auxiliary.assumingMemoryBound(to: CChar.self)) == "error loading dictionary" {
                    return .uncheckable("cracklib's dictionary, which libpwquality checks it against, did not load")
                }
                if score < 0 {
                    return .rejected(reason(score, auxiliary))
                }
                return score < weakBelow ? .weak("libpwquality scores it \(score) of 100") : .strong
            }
        }
        return verdict ?? .strong
    }

    private static func reason(_ code: Int32, _ auxiliary: UnsafeMutableRawPointer?) -> String {
        guard let message = pwquality_strerror(nil, 0, code, auxiliary) else { return "libpwquality error \(code)" }
        let text = String(cString: message)
        // libpwquality's sentences start with a capital and end without a full stop.
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
