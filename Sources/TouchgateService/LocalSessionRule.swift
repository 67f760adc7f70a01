import FingerprintKit
import Logging
import TouchgateAPI

/// The one rule for a `local-only` request (the PAM module's `verify` and `secret.get`): no
/// finger is asked for a process whose login session systemd-logind counts as remote.
///
/// The session is looked up from the caller's pid as the kernel recorded it at connect
/// time (`SO_PEERCRED`, which the adapter passes), never from anything the client says, so
/// a client cannot claim to be local. Where logind cannot tell, because it is not on the system bus or the process is
/// in no session (a system service, a container), the request proceeds as it would without
/// the argument and the daemon's log says so; the PAM module's own `PAM_RHOST` check still
/// applies. Any other failure of logind refuses: the stack falls back to the password.
public struct LocalSessionRule: Sendable {
    let logger: Logger

    /// A rule that says what it decided in `logger`.
    public init(logger: Logger) {
        self.logger = logger
    }

    /// Returns when the process `pid` (`caller` describes it in the log) may be asked for a
    /// finger; throws `remote-session` otherwise, before any reader is used.
    public func check(pid: Int32, caller: String) async throws(ServiceError) {
        let logind: LogindClient
        do {
            logind = try await LogindClient.connect()
        } catch {
            return logger.warning("""
                \(caller): local-only: cannot ask systemd-logind (\(error)); proceeding, \
                the PAM module's PAM_RHOST check still applies
                """)
        }
        let session: LogindSession?
        do {
            session = try await logind.session(ofProcess: pid)
            await logind.close()
        } catch {
            await logind.close()
            if error.isAbsent {
                return logger.warning("\(caller): local-only: \(error); proceeding, the PAM module's PAM_RHOST check still applies")
            }
            throw ServiceError(.remoteSession, "systemd-logind could not say whether the session of pid \(pid) is "
                               + "local (\(error)), so it counts as remote: no fingerprint is asked; use the password, "
                               + "and see `journalctl -u systemd-logind`")
        }
        guard let session else {
            return logger.notice("""
                \(caller): local-only: pid \(pid) is in no systemd-logind session; proceeding, \
                the PAM module's PAM_RHOST check still applies
                """)
        }
        guard session.remote else {
            return logger.info("\(caller): local-only: logind session \(session.id) is local")
        }
        let from = session.remoteHost.isEmpty ? "" : " from \(StoredText.escaped(session.remoteHost))"
        logger.notice("\(caller): local-only: logind session \(session.id) is remote\(from); refused")
        throw ServiceError(.remoteSession, "the request comes from login session \(StoredText.escaped(session.id)), which "
                           + "systemd-logind counts as remote\(from): a fingerprint is asked only of someone at this "
                           + "machine; use the password instead")
    }
}
