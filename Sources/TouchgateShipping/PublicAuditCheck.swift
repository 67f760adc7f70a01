import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
public import TouchgateAPI

/// Checks an exported audit trail (`touchgate audit export`) against the public key its
/// machine registered, holding no secret: every record's public link is recomputed from
/// its fields, each must follow the one before, and the last must be the one the signed
/// seal names. Fed one line at a time; memory does not grow with the trail.
///
/// What it proves: the records are those the machine's signing key vouched for, none
/// edited, inserted, removed or reordered, and none missing at the end or at the
/// beginning: the first record exported either starts the trail (it links to the genesis
/// value) or follows the last record a prune removed, as that prune's own `audit.prune`
/// record in the export says (``AuditPruneSummary``). The report lists those prunes.
public struct PublicAuditCheck: Sendable {
    private var verifier: AuditChainVerifier
    private var seal: AuditSeal?
    private var line = 0
    /// Whether the first record links to the genesis value (the trail's beginning).
    private var startsTrail = false
    private var prunes: [AuditPruneReport] = []

    /// A check against `publicKey` (32 bytes).
    public init(publicKey: [UInt8]) {
        verifier = AuditChainVerifier(publicKey: publicKey)
    }

    /// The longest line an export may hold: a record is a few hundred bytes, its reason at
    /// most a few KiB.
    public static let maximumLineBytes = 1 << 20

    /// Reads a public key file: 64 hex digits (what `touchgate audit public-key` prints),
    /// surrounding white space allowed.
    /// - Throws: ``ServiceError`` `usage` saying what is wrong with it.
    public static func publicKey(fromFile path: String) throws(ServiceError) -> [UInt8] {
        // At most a line's worth is read: the path may name anything (/dev/zero, a FIFO, a huge file).
        guard let data = FileInput.read(path, upTo: 4096) else {
            throw ServiceError(.usage, "cannot read the public key file \(StoredText.escaped(path)); give the file "
                                     + "`touchgate audit public-key` wrote on the machine whose trail this is")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingWhitespace()
        guard text.count == 64, let key = Hex.decode(text.lowercased()) else {
            throw ServiceError(.usage, "\(StoredText.escaped(path)) does not hold a public key (64 hex digits, as "
                                     + "`touchgate audit public-key` prints)")
        }
        return key
    }

    /// Checks the next line of the export.
    /// - Throws: ``ServiceError`` `audit-broken` for the first record that cannot be
    ///   trusted, `usage` for a line that is not part of an export.
    public mutating func feed(_ text: some StringProtocol) throws(ServiceError) {
        line += 1
        let data = Data(text.utf8)
        if text.trimmingSpaces().isEmpty { return }
        if seal != nil {
            throw ServiceError(.auditBroken, "line \(line) follows the seal, which must be the export's last line: "
                               + "records were appended to the export")
        }
        // The seal line is the export's own form, `{"seal":…}` (sorted keys): only it is tried as one.
        if text.hasPrefix("{\"seal\":"), let sealLine = try? WireCoding.decoder().decode(AuditSealLine.self, from: data) {
            guard let trail = Hex.decode(sealLine.seal.trail), let chain = Hex.decode(sealLine.seal.chain),
                  let key = Hex.decode(sealLine.seal.publicKey), let signature = Hex.decode(sealLine.seal.signature)
            else { throw malformed("the seal") }
            seal = AuditSeal(trail: trail, sequence: sealLine.seal.seq, chain: chain, publicKey: key, signature: signature)
            return
        }
        guard let report = try? WireCoding.decoder().decode(AuditRecordReport.self, from: data) else {
            throw malformed("a record")
        }
        guard let unixTime = report.unixTime, let bootID = report.bootID,
              let previousMAC = report.prevMAC.flatMap(Hex.decode), let mac = report.mac.flatMap(Hex.decode),
              let trail = report.trail.flatMap(Hex.decode), let previousChain = report.prevChain.flatMap(Hex.decode),
              let chain = report.chain.flatMap(Hex.decode)
        else {
            throw ServiceError(.auditBroken, "record \(report.seq) (line \(line)) lacks its chain fields; verify "
                               + "an export written by `touchgate audit export` of this release or later")
        }
        let record = AuditRecord(
            sequence: report.seq, unixTime: unixTime, bootTime: report.bootTime, bootID: bootID, uid: report.uid,
            loginName: report.login, vaultUser: report.vaultUser, event: AuditEvent(stored: report.event),
            item: report.item, outcome: AuditOutcome(stored: report.outcome), reason: report.reason,
            previousMAC: previousMAC, mac: mac, previousChain: previousChain, chain: chain)
        if let problem = verifier.add(record, trail: trail) { throw Self.broken(problem) }
        if verifier.count == 1 { startsTrail = previousChain == AuditSeal.genesis }
        if let prune = AuditPruneSummary(record) {
            prunes.append(AuditPruneReport(seq: report.seq, time: report.time, removed: prune.removed,
                                           through: prune.through))
        }
    }

    /// Ends the check after the last line.
    /// - Throws: ``ServiceError`` `audit-broken` when the seal is missing, not signed by
    ///   the key, or does not name the last record.
    public func finish() throws(ServiceError) -> PublicVerificationReport {
        guard let seal else {
            throw ServiceError(.auditBroken, "the export has no seal (its last line, {\"seal\": …}): it was cut short, "
                               + "or it was written by an older release")
        }
        if let problem = verifier.finish(seal: seal) { throw Self.broken(problem) }
        if let first = verifier.firstSequence, !startsTrail {
            // Prunes only ever move the start forward, so the latest one says where it is.
            guard let through = prunes.map(\.through).max() else {
                throw ServiceError(.auditBroken, "the export starts at record \(first), which does not begin the trail, "
                                   + "and no prune in it removed the records before: records up to \(first - 1) were "
                                   + "cut from the export (check an unfiltered `touchgate audit export`)")
            }
            guard through == first - 1 else {
                throw ServiceError(.auditBroken, through < first - 1
                    ? "the export starts at record \(first), but its last prune removed records only up to \(through): "
                      + "records \(through + 1)…\(first - 1) were cut from the export"
                    : "record \(first) is present, but a prune in the export says it removed records up to \(through)")
            }
        }
        return PublicVerificationReport(records: verifier.count, first: verifier.firstSequence,
                                        signedThrough: seal.sequence, trail: Hex.encode(seal.trail), prunes: prunes)
    }

    private func malformed(_ what: String) -> ServiceError {
        ServiceError(.usage, "line \(line) is not \(what) of an audit export (JSON lines from `touchgate audit export`)")
    }

    private static func broken(_ problem: (sequence: Int64, reason: String)) -> ServiceError {
        ServiceError(.auditBroken, "audit trail broken at record \(problem.sequence): \(problem.reason)")
    }
}
