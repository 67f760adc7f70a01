/// A login session as systemd-logind describes it (`org.freedesktop.login1.Session`).
public struct LogindSession: Sendable, Equatable {
    /// The session's id (`Id`), as `loginctl` shows it.
    public let id: String
    /// Whether logind counts the session as remote (`Remote`): opened over the network,
    /// as by sshd, with the remote host given to PAM.
    public let remote: Bool
    /// The remote host, when logind knows it (`RemoteHost`); empty otherwise.
    public let remoteHost: String
    /// The seat the session sits at (`Seat`, such as `seat0`: a screen and keyboard of this
    /// machine); empty for a session on none.
    public let seat: String

    /// A session with these properties.
    public init(id: String, remote: Bool, remoteHost: String, seat: String = "seat0") {
        self.id = id
        self.remote = remote
        self.remoteHost = remoteHost
        self.seat = seat
    }
}

extension LogindClient {
    static let sessionInterface = "org.freedesktop.login1.Session"
    /// logind's answer to `GetSessionByPID` for a process in no session.
    static let noSessionForPID = "org.freedesktop.login1.NoSessionForPID"

    /// The session process `pid` belongs to (`GetSessionByPID`, then the session's
    /// properties), or nil when it belongs to none (a system service, a process started
    /// outside any login).
    ///
    /// Ask only about a pid the kernel vouched for (`SO_PEERCRED`): logind answers about
    /// whatever pid it is given.
    /// - Throws: ``LogindError`` when logind is absent (``LogindError/isAbsent``) or fails.
    public func session(ofProcess pid: Int32) async throws(LogindError) -> LogindSession? {
        let path: String
        do {
            path = try await bus.call(Self.service, Self.managerPath, Self.managerInterface, "GetSessionByPID",
                                      [.uint32(UInt32(bitPattern: pid))]) { reply in
                guard case .string(let path) = Variant.child(reply, 0) else {
                    throw LogindError(description: "systemd-logind answered GetSessionByPID without a session path")
                }
                return path
            }
        } catch FprintdError.failed(name: Self.noSessionForPID, detail: _) {
            return nil
        } catch let error as LogindError {
            throw error
        } catch {
            throw LogindError(error)
        }
        let properties = try await properties(of: path, Self.sessionInterface)
        guard case .bool(let remote)? = properties["Remote"] else {
            throw LogindError(description: "systemd-logind's session \(path) has no Remote property")
        }
        var id = path
        if case .string(let text)? = properties["Id"] { id = text }
        var host = "", seat = ""
        if case .string(let text)? = properties["RemoteHost"] { host = text }
        if case .string(let text)? = properties["Seat"] { seat = text }
        return LogindSession(id: id, remote: remote, remoteHost: host, seat: seat)
    }
}

/// The laptop's lid as systemd-logind reports it (`LidClosed`, `Docked` of its manager):
/// whether it is closed (false on a machine without one), and whether the machine is docked
/// or has more than one display connected, so that a closed lid may still leave the person
/// working (at an external keyboard, perhaps with a reader).
public typealias LidState = (closed: Bool, docked: Bool)

extension LogindClient {
    /// The lid's state now (the manager's properties, read afresh), or nil when logind
    /// reports no lid at all (a stand-in without the property).
    /// - Throws: ``LogindError`` when logind is absent (``LogindError/isAbsent``) or fails.
    public func lid() async throws(LogindError) -> LidState? {
        let properties = try await properties(of: Self.managerPath, Self.managerInterface)
        guard case .bool(let closed)? = properties["LidClosed"] else { return nil }
        var docked = false
        if case .bool(let value)? = properties["Docked"] { docked = value }
        return (closed, docked)
    }

    /// Every property of `interface` on logind's object at `path`.
    func properties(of path: String, _ interface: String) async throws(LogindError) -> [String: Variant.Value] {
        do {
            return try await bus.call(Self.service, path, "org.freedesktop.DBus.Properties", "GetAll",
                                      [.string(interface)]) { reply in
                Variant.dictionary(reply, 0)
            }
        } catch {
            throw LogindError(error)
        }
    }
}

extension LogindClient {
    /// The users at the machine: the uid of every session logind lists that sits at a seat,
    /// is active (in the foreground of its seat) and is not remote (`ListSessions`, then each
    /// such session's properties). Empty when nobody is at any seat.
    /// - Throws: ``LogindError`` when logind is absent (``LogindError/isAbsent``) or fails.
    public func activeSeatUsers() async throws(LogindError) -> Set<UInt32> {
        Set(try await seatSessions().filter(\.active).map(\.uid))
    }

    /// The users with a session at a seat, in the foreground or not (a second user at the
    /// seat whose session was switched away from still has one): each local session's uid.
    /// - Throws: ``LogindError`` when logind is absent (``LogindError/isAbsent``) or fails.
    public func seatUsers() async throws(LogindError) -> Set<UInt32> {
        Set(try await seatSessions().map(\.uid))
    }

    /// Every session logind lists that sits at a seat and is not remote, with its uid and
    /// whether it is the seat's active one (`ListSessions`, then each one's properties).
    private func seatSessions() async throws(LogindError) -> [(uid: UInt32, active: Bool)] {
        let sessions: [[Variant.Value]]
        do {
            sessions = try await bus.call(Self.service, Self.managerPath, Self.managerInterface, "ListSessions") { reply in
                Variant.rows(reply, 0)
            }
        } catch {
            throw LogindError(error)
        }
        var seated: [(uid: UInt32, active: Bool)] = []
        // (id, uid, user name, seat id, object path)
        for session in sessions where session.count == 5 {
            guard case .int(let uid) = session[1], case .string(let seat) = session[3], !seat.isEmpty,
                  case .string(let path) = session[4] else { continue }
            let properties = try await properties(of: path, Self.sessionInterface)
            guard case .bool(false)? = properties["Remote"] else { continue }
            seated.append((UInt32(truncatingIfNeeded: uid), properties["Active"] == .bool(true)))
        }
        return seated
    }
}
