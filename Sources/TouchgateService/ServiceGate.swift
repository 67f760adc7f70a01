public import TouchgateAPI
import TouchgateVault

/// Where a host that serves callers other than its own user (touchgated, the per-user
/// agent) hands each request to the service: the one place the who-may-do-what rules are
/// applied, in order, whatever the door.
///
/// For each request it names the caller in every record the request writes, admits or
/// refuses the operation for that caller (``CallerRules``), picks whose service runs it
/// (the caller's, or the user root names), checks a `local-only` request's session, and
/// records a refusal in the right trail. A door only decodes the request, calls
/// ``serve(_:caller:namedUser:localOnly:_:)`` with the use case, and encodes what comes back.
public struct ServiceGate: Sendable {
    private let services: @Sendable (Principal) -> TouchgateService
    private let principals: @Sendable () -> [Principal]
    private let sessions: LocalSessionRule
    /// The one user whose store the host serves (touchgate agent's personal store, the
    /// command's own), or nil for a host of every user's (touchgated).
    private let soleUser: UInt32?
    /// Told of every request the gate admits, with the caller it admitted (tests; a host's log).
    package var observer: (@Sendable (DaemonOperation, Caller) -> Void)?

    /// A gate over a host's stores: `services` gives a principal's service, `principals`
    /// every principal with a store here; `sessions` decides whether a session is local;
    /// `soleUser` is the only user a host of one personal store serves.
    public init(services: @escaping @Sendable (Principal) -> TouchgateService,
                principals: @escaping @Sendable () -> [Principal], sessions: LocalSessionRule, soleUser: UInt32? = nil) {
        self.services = services
        self.principals = principals
        self.sessions = sessions
        self.soleUser = soleUser
    }

    /// Runs `body` with the service that serves `operation` for `caller`.
    ///
    /// - Parameters:
    ///   - namedUser: the user the request names, if any: root acts for them; anyone else
    ///     may name only themself.
    ///   - localOnly: ask for no finger unless the caller's login session is local
    ///     (``LocalSessionRule``), checked before any reader is used or question asked.
    /// - Throws: the refusal (recorded in the caller's trail, or a remote session's in the
    ///   named user's), or what `body` throws.
    public func serve<T: Sendable>(_ operation: DaemonOperation, caller: Caller, namedUser: String?, localOnly: Bool,
                                   _ body: (TouchgateService) async throws -> T) async throws -> T {
        var service: TouchgateService
        do {
            // The contracts say who may ask through a socket; the host's own doors (the
            // command in its own process, the agent's SSH and Secret Service doors) are
            // the user's, and name the program they serve themselves.
            if caller.door.isSocket {
                try CallerRules.admit(operation, callerIsRoot: caller.isRoot,
                                      callerIsVerifiedAgent: caller.isVerifiedAgent, namedUser: namedUser)
            }
            service = try self.service(for: caller, actingFor: namedUser)
            if localOnly {
                try await sessions.check(pid: caller.pid, caller: caller.description,
                                         onBehalfOf: Self.requester(of: caller, askingFor: namedUser))
                // The session was looked up by pid: it was the caller's only if the caller still
                // ran afterwards (a pid freed since may be another process's).
                if caller.hasExited {
                    throw ServiceError(.remoteSession, "the process that asked (pid \(caller.pid)) exited before its login "
                                       + "session could be told; nothing was asked of the reader")
                }
            }
        } catch let refusal as ServiceError {
            // The gate's own refusals are recorded here; a use case records its own.
            await record(refusal, of: operation, caller: caller, namedUser: namedUser)
            throw refusal
        }
        observer?(operation, caller)
        return try await body(service)
    }

    /// The real uid of `caller` when it is a set-user-ID root program that one user started to
    /// ask about another (su for root, polkit's agent helper for an administrator); nil when it
    /// asks about its own user, runs as root through and through, or its real uid is unknown.
    static func requester(of caller: Caller, askingFor namedUser: String?) -> UInt32? {
        guard caller.isRoot, let namedUser, let named = UserDatabase.uid(of: namedUser), let real = caller.realUID,
              real != 0, real != named else { return nil }
        return real
    }

    /// Records `refusal` of `operation` (a request refused before it reached the gate, such as
    /// one over the caller's rate) in the trail of the user it was for, only where that user
    /// has a store: a refusal never makes one.
    public func recordRefusal(_ refusal: ServiceError, of operation: DaemonOperation, caller: Caller,
                              namedUser: String?) async {
        try? await service(for: caller, actingFor: caller.isRoot ? namedUser : nil)
            .recordRefusal(of: operation.rawValue, refusal, onlyIfStoreExists: true)
    }

    /// The trails `audit.ship` sends for `caller`: every user's for root naming no user,
    /// otherwise the one service's, if it has a store. Only root may have the fleet
    /// checkpoints forgotten (`newLog`).
    public func trailsToShip(for caller: Caller, namedUser: String?, service: TouchgateService,
                             newLog: Bool) throws(ServiceError) -> [TouchgateService] {
        if newLog { try CallerRules.requireMayAcceptNewFleetLog(callerIsRoot: caller.isRoot) }
        let every = CallerRules.shipsEveryTrail(callerIsRoot: caller.isRoot, namedUser: namedUser)
        // Never making a store for someone who has none.
        let trails = every ? principals().map { serving($0, for: caller) }.filter(\.hasStore) : [service].filter(\.hasStore)
        guard !trails.isEmpty else {
            throw ServiceError(.notFound, "touchgated holds no audit trail \(caller.isRoot ? "" : "of yours ")yet: "
                               + "nothing to ship")
        }
        return trails
    }

    /// The service for `caller`, or for `user` when root names one.
    func service(for caller: Caller, actingFor user: String?) throws(ServiceError) -> TouchgateService {
        serving(try principal(for: caller, actingFor: user), for: caller)
    }

    /// `principal`'s service, serving `caller`: every record it writes names the caller.
    private func serving(_ principal: Principal, for caller: Caller) -> TouchgateService {
        var service = services(principal)
        service.caller = caller
        return service
    }

    /// Whom `caller` acts for: itself, or the user root names.
    private func principal(for caller: Caller, actingFor user: String?) throws(ServiceError) -> Principal {
        guard let user, user != caller.loginName else { return caller.principal }
        let uid = UserDatabase.uid(of: user)
        // Another name of the caller's own uid is the caller.
        if uid == caller.uid { return caller.principal }
        if soleUser != nil {
            // Even root: this host holds one user's personal store, not the named user's.
            throw ServiceError(.forbidden, "touchgate agent serves its own user's personal store only; another "
                               + "user's store is touchgated's to serve")
        }
        try CallerRules.requireMayActForAnotherUser(callerIsRoot: caller.isRoot)
        guard let uid else {
            throw ServiceError(.usage, "no user named '\(StoredText.escaped(user))' on this system")
        }
        return Principal(uid: uid, loginName: user)
    }

    /// Records `refusal` where ``CallerRules/trail(for:)`` says; nothing for a failure that is not a refusal.
    private func record(_ refusal: ServiceError, of operation: DaemonOperation, caller: Caller, namedUser: String?) async {
        guard let trail = CallerRules.trail(for: refusal) else { return }
        let named = trail == .namedUser
        try? await service(for: caller, actingFor: named ? namedUser : nil)
            .recordRefusal(of: operation.rawValue, refusal, onlyIfStoreExists: named)
    }
}
