import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault

// How `biometry-current-set` follows the fingers enrolled in fprintd.
//
// An item bound to the current set stores the enrollment digest of its time (`Vault+Items`,
// `enrollment_digest`, covered by the item's associated data); at every release the policy
// core compares it with the digest of now (`ItemDescriptor.validity`) and refuses a
// mismatch for good. With Touchgate's own prints, the digest covers a change counter and
// the identifiers of the stored prints, and every enroll or delete goes through Touchgate,
// which bumps the counter and destroys the bound keys at once.
//
// Through fprintd, fingers are enrolled and deleted behind Touchgate's back, so the digest
// is computed from what fprintd reports now (`ListEnrolledFingers(user)`), never from
// Touchgate's store. Two rules make that sound:
// 1. The set alone could come back (delete the finger, then enroll the same finger again,
//    a different print under the same name): a bound item must not open again then. So a
//    counter of its own, per user, sits in the authenticated state beside a hash of the set
//    last seen; whenever the set seen differs from it, the counter goes up (and the change is
//    recorded like an enrollment change: the fingerprint session ends, an audit record is
//    written). The digest covers the counter, so a digest that stopped matching never
//    matches again, even when the same finger names return.
// 2. The identifiers carry `@fprintd:<device name>`, so a digest over fprintd's set can
//    never equal one over Touchgate's own prints: a secret stored under one backend is
//    refused under the other instead of opening against the wrong set.
// Keys of such items are not destroyed at the change (the refusal at release is what
// guards them): destroying every key bound to another digest would also destroy the items
// bound to Touchgate's own prints whenever the fprintd set moved. The one change fprintd's
// API cannot show is a finger deleted and enrolled again between two Touchgate requests:
// the names are the same and fprintd publishes nothing else about its prints. docs/READERS.md
// says so.
extension EnrollmentTracker {
    /// The state key of the fprintd counter and last seen set for `user`.
    static func fprintdStateKey(user: String) -> String { "enrollment.fprintd.\(user)" }

    /// The policy core's name for a finger enrolled in fprintd:
    /// `user:right-index-finger@fprintd:<device name>`.
    static func fprintdPrintID(user: String, finger: String, device: FprintdDevice) -> EnrolledPrintID {
        EnrolledPrintID("\(user):\(finger)@fprintd:\(device.info.name)")
    }

    /// What fprintd has enrolled for `user` on the target's reader, as the policy core sees it;
    /// records a change when the set differs from the one seen last (see above).
    /// - Returns: the status and fprintd's names of the fingers enrolled.
    static func fprintdStatus(_ guarded: PolicyGuard, target: FprintdTarget,
                              user: String) async throws -> (status: EnrollmentStatus, fingers: [String]) {
        let fingers = try await target.client.enrolledFingers(user: user, on: target.device)
        let ids = fingers.map { fprintdPrintID(user: user, finger: $0, device: target.device) }
        // The set's own hash: the message EnrollmentState builds, with the counter left at zero.
        let seen = EnrollmentState(generation: 0, printIDs: ids, hash: blake2b).digest
        let key = fprintdStateKey(user: user)
        var generation: UInt64
        if let last = try guarded.stateStore.state(key).flatMap(FprintdSeen.init), last.set == seen {
            generation = last.generation
        } else {
            generation = try guarded.audit.atomically { transaction in
                let last = try transaction.state(key).flatMap(FprintdSeen.init)
                if let last, last.set == seen { return last.generation }  // another request recorded it first
                let next = last.map { $0.generation &+ 1 } ?? 0
                _ = try transaction.updateState(key) { data in data = FprintdSeen(generation: next, count: ids.count, set: seen).encoded }
                if let last {
                    let state = EnrollmentState(generation: next, printIDs: ids, hash: blake2b)
                    let change: EnrollmentChange = ids.count >= last.count ? .enroll : .delete
                    try guarded.evaluator(in: transaction).recordEnrollmentChange(
                        change, print: EnrolledPrintID("\(user):*@fprintd:\(target.info.name)"), newState: state)
                }
                return next
            }
        }
        let state = EnrollmentState(generation: generation, printIDs: ids, hash: blake2b)
        return (EnrollmentStatus(state: state, printCount: ids.count), fingers)
    }
}

/// The fprintd set last seen: the counter, how many fingers, and the set's hash.
private struct FprintdSeen {
    var generation: UInt64
    var count: Int
    var set: [UInt8]

    init(generation: UInt64, count: Int, set: [UInt8]) {
        self.generation = generation
        self.count = count
        self.set = set
    }

    init?(_ data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count == 8 + 4 + 32 else { return nil }
        generation = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        count = Int(bytes[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        set = Array(bytes[12...])
    }

    var encoded: Data {
        let counter = (0..<8).reversed().map { UInt8(truncatingIfNeeded: generation >> (8 * UInt64($0))) }
        let fingers = (0..<4).reversed().map { UInt8(truncatingIfNeeded: UInt32(count) >> (8 * UInt32($0))) }
        return Data(counter + fingers + set)
    }
}
