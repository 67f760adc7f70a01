public import TouchgateAPI
import TouchgateVault

extension Caller {
    /// The principal the caller is when it acts for itself.
    public var principal: Principal { Principal(uid: uid, loginName: loginName) }

    /// How the trail names the caller: who, which process asked, through which door, and
    /// what the door or a helper said of the program it serves.
    var auditClient: AuditClient {
        AuditClient(uid: uid, loginName: loginName, process: process, requester: requester)
    }
}
