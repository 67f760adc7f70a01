public import TouchgateAPI

/// Who may ask for what on behalf of whom, and whose trail records a refusal: the rules a
/// service that serves other users' requests (touchgated) applies around the use cases.
/// The adapter only says who the caller is (its uid, from the kernel) and what was asked.
public enum CallerRules {
    /// Why only root may have `operation` done, or nil when any user may, for themselves.
    public static func rootOnly(_ operation: DaemonOperation) -> String? {
        guard case .rootOnly(let what) = operation.contract.callers else { return nil }
        return what
    }

    /// Refuses `operation` for this caller as its contract says (``OperationContract/callers``):
    /// root-only operations for anyone else (`forbidden`), operations never served by
    /// touchgated, and naming a user for one that works on the caller's own store only
    /// (`usage`), and the agent's own operations for any other program (`forbidden`).
    /// Checked before anything else of the request is looked at.
    public static func admit(_ operation: DaemonOperation, callerIsRoot: Bool, callerIsVerifiedAgent: Bool = false,
                             namedUser: String?) throws(ServiceError) {
        switch operation.contract.callers {
        case .anyone:
            return
        case .rootOnly(let what):
            try requireRoot(callerIsRoot: callerIsRoot, what)
        case .ownStoreOnly:
            guard namedUser == nil else {
                throw ServiceError(.usage, "\(operation.rawValue) works on your own store only; run it as the user whose "
                                   + "store it is, naming no user")
            }
        case .notThroughDaemon(let why):
            throw ServiceError(.usage, why)
        case .agentOnly:
            guard callerIsRoot || callerIsVerifiedAgent else {
                if operation == .approve {
                    throw ServiceError(.forbidden, "approve is touchgate agent's own request (the installed touchgate "
                                       + "program shows the person the command and runs exactly it); another program "
                                       + "may not ask for it. Run the command with touchgate run, touchgate mcp or "
                                       + "touchgate approve")
                }
                throw ServiceError(.forbidden, "\(operation.rawValue) is touchgate agent's own request, which names the "
                                   + "program on the session bus it asks for; another program may not name one. Programs "
                                   + "reach these items through the Secret Service (touchgate agent --secret-service), "
                                   + "people through touchgate secret get")
            }
        }
    }

    /// Refuses `what` (`forbidden`) unless the caller is root.
    public static func requireRoot(callerIsRoot: Bool, _ what: String) throws(ServiceError) {
        guard callerIsRoot else {
            throw ServiceError(.forbidden, "\(what) needs root; ask your administrator (sudo touchgate …)")
        }
    }

    /// Refuses having touchgated forget its fleet checkpoints (`audit ship --new-log`)
    /// unless the caller is root: it accepts whatever log the collector now holds, for
    /// every trail of the machine.
    public static func requireMayAcceptNewFleetLog(callerIsRoot: Bool) throws(ServiceError) {
        guard callerIsRoot else {
            throw ServiceError(.forbidden, "only root may have touchgated accept a new fleet log (audit ship --new-log)")
        }
    }

    /// Refuses acting for a user other than the caller, unless the caller is root.
    public static func requireMayActForAnotherUser(callerIsRoot: Bool) throws(ServiceError) {
        try requireRoot(callerIsRoot: callerIsRoot, "acting for another user")
    }

    /// Whose trail records a refused request.
    public enum RefusalTrail: Sendable, Equatable {
        /// The caller's own (the only store the caller surely has a right to): a request
        /// the caller may not make never writes to another's trail.
        case caller
        /// The trail of the user the request was for, whose finger was asked for: the
        /// caller was entitled to act for them and the session was refused. No store is
        /// made for a user who has none.
        case namedUser
    }

    /// Where `refusal` is recorded; nil when it is not a refusal (every refusal is audited).
    public static func trail(for refusal: ServiceError) -> RefusalTrail? {
        switch refusal.code {
        case .forbidden: .caller
        case .remoteSession: .namedUser
        default: nil
        }
    }

    /// Whether `audit.ship` sends every user's trail (root, naming no user) or the
    /// requester's own.
    public static func shipsEveryTrail(callerIsRoot: Bool, namedUser: String?) -> Bool {
        callerIsRoot && namedUser == nil
    }
}
