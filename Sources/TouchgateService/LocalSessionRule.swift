package import FingerprintKit
public import Logging
public import TouchgateAPI

/// The one rule for a `local-only` request (the PAM module's `verify` and `secret.get`): no
/// finger is asked for a process whose login session systemd-logind counts as remote, or
/// which sits at no seat (no screen and keyboard of this machine: whoever runs it is not
/// where the reader is, as in a session opened by `machinectl shell`).
///
/// The session is looked up from the caller's pid as the kernel recorded it at connect
/// time (`SO_PEERCRED`, which the adapter passes), never from anything the client says, so
/// a client cannot claim to be local. Where logind cannot tell, because it is not on the system bus or the process is
/// in no session (a system service, a container), the request proceeds as it would without
/// the argument and the daemon's log says so; the PAM module's own `PAM_RHOST` check still
/// applies. Any other failure of logind refuses: the stack falls back to the password.
///
/// Except on someone else's behalf: a set-user-ID root program started by one user that asks
/// for another user's finger (su, polkit's agent helper asking for an administrator) is
/// refused when logind knows it in no session. A touch goes to whichever request holds the
/// reader, so such a request from a cron job or a `systemd-run --user` service could take the
/// touch its user meant for a prompt of their own; from a local session, the person asking
/// is at the machine.
public struct LocalSessionRule: Sendable {
    /// Where the session of a process is looked up: nil when the process is in none; throws
    /// ``LogindAbsent`` when logind cannot be asked or does not know the process.
    package typealias Lookup = @Sendable (Int32) async throws -> LogindSession?

    /// logind cannot tell (not on the bus, or it does not know the process): the request
    /// proceeds as it would without `local-only`.
    package struct LogindAbsent: Error, CustomStringConvertible {
        package let description: String
        package init(_ description: String) { self.description = description }
    }

    let logger: Logger
    private let lookup: Lookup

    /// A rule that asks systemd-logind on the system bus and says what it decided in `logger`.
    public init(logger: Logger) {
        self.init(logger: logger) { pid in
            let logind: LogindClient
            do {
                logind = try await LogindClient.connect()
            } catch {
                throw LogindAbsent("cannot ask systemd-logind (\(error))")
            }
            do {
                let session = try await logind.session(ofProcess: pid)
                await logind.close()
                return session
            } catch {
                await logind.close()
                if let error = error as? LogindError, error.isAbsent { throw LogindAbsent("\(error)") }
                throw error
            }
        }
    }

    /// A rule that looks sessions up with `lookup` (a test's sessions).
    package init(logger: Logger, lookup: @escaping Lookup) {
        self.logger = logger
        self.lookup = lookup
    }

    /// Returns when the process `pid` (`caller` describes it in the log) may be asked for a
    /// finger; throws `remote-session` otherwise, before any reader is used. `onBehalfOf` is
    /// the real uid of a process that asks for another user's finger (``ServiceGate``).
    public func check(pid: Int32, caller: String, onBehalfOf requester: UInt32? = nil) async throws(ServiceError) {
        let session: LogindSession?
        do {
            session = try await lookup(pid)
        } catch let absent as LogindAbsent {
            return logger.warning("\(caller): local-only: \(absent); proceeding, the PAM module's PAM_RHOST check still applies")
        } catch {
            throw ServiceError(.remoteSession, "systemd-logind could not say whether the session of pid \(pid) is "
                               + "local (\(error)), so it counts as remote: no fingerprint is asked; use the password, "
                               + "and see `journalctl -u systemd-logind`")
        }
        guard let session else {
            if let requester {
                logger.notice("\(caller): local-only: pid \(pid), started by uid \(requester), asks for another user's finger from no systemd-logind session; refused")
                throw ServiceError(.remoteSession, "the process that asked (pid \(pid)) was started by another user "
                                   + "(uid \(requester)) and is in no login session, so nobody at this machine is known "
                                   + "to be asking: no finger is asked on their behalf; use the password instead")
            }
            return logger.notice("""
                \(caller): local-only: pid \(pid) is in no systemd-logind session; proceeding, \
                the PAM module's PAM_RHOST check still applies
                """)
        }
        guard session.remote else {
            guard session.seat.isEmpty else {
                return logger.info("\(caller): local-only: logind session \(session.id) is local, at \(session.seat)")
            }
            logger.notice("\(caller): local-only: logind session \(session.id) is at no seat; refused")
            throw ServiceError(.remoteSession, "the request comes from login session \(StoredText.escaped(session.id)), "
                               + "which sits at no seat (no screen and keyboard of this machine), so no finger can be "
                               + "asked there: use the password instead")
        }
        let from = session.remoteHost.isEmpty ? "" : " from \(StoredText.escaped(session.remoteHost))"
        logger.notice("\(caller): local-only: logind session \(session.id) is remote\(from); refused")
        throw ServiceError(.remoteSession, "the request comes from login session \(StoredText.escaped(session.id)), which "
                           + "systemd-logind counts as remote\(from): a fingerprint is asked only of someone at this "
                           + "machine; use the password instead")
    }
}
