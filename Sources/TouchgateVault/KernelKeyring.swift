import CTouchgateSys
import TouchgateBasics
#if canImport(Glibc)
import Glibc
#endif

/// "user" keys in the calling user's kernel keyring (`KEY_SPEC_USER_KEYRING`).
///
/// The keyring keeps key material off disk and outside this process: it lives as long
/// as the user's keyring (until reboot, or until it expires or is invalidated), is
/// shared by the user's processes, and is never swapped to a file. Every call goes
/// through ``check(_:_:)``, which turns `-errno` into ``VaultError/system(operation:code:)``.
enum KernelKeyring {
    /// Creates or replaces the key `description` with `payload`, readable only by this
    /// uid, expiring `timeout` seconds from now.
    static func store(_ description: String, payload: SecretBytes, timeout: UInt32) throws {
        let serial = try payload.withUnsafeBytes { bytes in
            try check(CTouchgateSys_key_add_user(description, bytes.baseAddress, bytes.count), "store the key in the kernel keyring")
        }
        let id = Int32(truncatingIfNeeded: serial)
        do {
            _ = try check(CTouchgateSys_key_restrict_to_user(id), "set the permissions of the keyring key")
            _ = try check(CTouchgateSys_key_set_timeout(id, timeout), "set the keyring key's timeout")
        } catch {
            // No key is left behind without its permissions and its timeout.
            discard(id)
            // The process does not possess what it just added to its user's keyring: its
            // session keyring is gone (revoked when the login that made it ended).
            if case VaultError.system(_, EACCES) = error { throw VaultError.keyringUnusable }
            throw error
        }
    }

    /// Fails with ``VaultError/keyringUnusable`` (or another system error) when this
    /// process cannot keep a key here, leaving nothing: what `touchgate init` checks before
    /// it makes a vault that it would then leave unlocked.
    static func checkUsable() throws {
        let description = "touchgate:probe:\(getpid())"
        try store(description, payload: SecretBytes(copying: [0]), timeout: 5)
        try remove(description)
    }

    /// Makes the key `serial` unreachable: invalidated, or, where this process may not
    /// (it does not possess the key), unlinked from the user's keyring, which needs no
    /// permission on the key.
    private static func discard(_ serial: Int32) {
        if CTouchgateSys_key_invalidate(serial) < 0 { _ = CTouchgateSys_key_unlink_user(serial) }
    }

    /// The key's serial and payload (at most `capacity` bytes), or `nil` when it is
    /// absent, expired or revoked.
    static func read(_ description: String, capacity: Int) throws -> (serial: Int32, payload: SecretBytes)? {
        let found = CTouchgateSys_key_search_user(description)
        if isGone(found) { return nil }
        let serial = Int32(truncatingIfNeeded: try check(found, "search the kernel keyring"))
        var length = 0
        let payload = try SecretBytes.make(count: capacity) { buffer in
            let count = CTouchgateSys_key_read(serial, buffer.baseAddress, buffer.count)
            if isGone(count) { length = -1; return }
            length = Int(try check(count, "read the keyring key"))
        }
        guard length >= 0 else { return nil }
        guard length <= capacity else { return (serial, SecretBytes(copying: [])) }  // not ours: caller rejects it
        let exact = payload.withUnsafeBytes { bytes in
            SecretBytes.make(count: length) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<length])) }
        }
        return (serial, exact)
    }

    /// Sets the key to expire `timeout` seconds from now; `false` if it is already gone.
    static func setTimeout(_ serial: Int32, _ timeout: UInt32) throws -> Bool {
        let result = CTouchgateSys_key_set_timeout(serial, timeout)
        if isGone(result) { return false }
        _ = try check(result, "set the keyring key's timeout")
        return true
    }

    /// Invalidates the key `description` (gone at once); `false` if there was none.
    @discardableResult
    static func remove(_ description: String) throws -> Bool {
        let found = CTouchgateSys_key_search_user(description)
        if isGone(found) { return false }
        let serial = Int32(truncatingIfNeeded: try check(found, "search the kernel keyring"))
        var result = CTouchgateSys_key_invalidate(serial)
        if result == -Int(EACCES) { result = CTouchgateSys_key_unlink_user(serial) }  // not possessed: see discard
        if isGone(result) { return false }
        _ = try check(result, "remove the key from the kernel keyring")
        return true
    }

    /// Whether a result means "no such key any more" (absent, expired, revoked).
    private static func isGone(_ result: Int) -> Bool {
        result == -Int(ENOKEY) || result == -Int(EKEYEXPIRED) || result == -Int(EKEYREVOKED)
    }

    /// The error funnel: a negative result is `-errno`.
    private static func check(_ result: Int, _ operation: String) throws -> Int {
        guard result >= 0 else { throw VaultError.system(operation: operation, code: Int32(-result)) }
        return result
    }
}
