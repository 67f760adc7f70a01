import Foundation
import TouchgateVault
import TouchgateAPI

/// Maps audit records to OCSF and ECS. Pure: the same record gives the same line.
enum AuditInterchange {
    /// The OCSF schema version written in `metadata.version`.
    static let ocsfVersion = "1.1.0"
    /// The ECS version written in `ecs.version`.
    static let ecsVersion = "8.11.0"

    /// One OCSF Authentication (3002) event for `record`, as one JSON line.
    static func ocsf(_ record: AuditRecordReport, host: String) -> String {
        let (activityID, activity) = ocsfActivity(record.event)
        let (statusID, status) = ocsfStatus(record.outcome)
        let (severityID, severity) = ocsfSeverity(record)
        var event: [String: Any] = [
            "class_uid": 3002, "class_name": "Authentication",
            "category_uid": 3, "category_name": "Identity & Access Management",
            "activity_id": activityID, "activity_name": activity,
            "type_uid": 300_200 + activityID, "type_name": "Authentication: \(activity)",
            "time": milliseconds(record), "severity_id": severityID, "severity": severity,
            "status_id": statusID, "status": status, "status_detail": record.reason,
            "message": message(record),
            "auth_protocol_id": 99, "auth_protocol": "Touchgate",
            "user": user(record, idKey: "uid"),
            "actor": ["user": ["name": record.login, "uid": String(record.uid)]],
            "device": ["hostname": host, "type_id": 0, "type": "Unknown"],
            "metadata": [
                "version": ocsfVersion, "log_name": "touchgate-audit", "sequence": record.seq,
                "uid": uid(record),
                "product": ["name": "Touchgate", "vendor_name": "Touchgate"],
            ] as [String: Any],
            "unmapped": touchgateFields(record),
        ]
        if let item = record.item { event["service"] = ["name": item] }
        return line(event)
    }

    /// One ECS document for `record`, as one JSON line.
    static func ecs(_ record: AuditRecordReport, host: String) -> String {
        let (category, type) = ecsCategory(record.event)
        var hostFields: [String: Any] = ["hostname": host]
        if let bootID = record.bootID { hostFields["boot"] = ["id": bootID] }
        let document: [String: Any] = [
            "@timestamp": timestamp(record),
            "ecs": ["version": ecsVersion],
            "message": message(record),
            "event": [
                "kind": "event", "category": category, "type": type, "action": record.event,
                "outcome": ecsOutcome(record.outcome), "reason": record.reason, "sequence": record.seq,
                "provider": "touchgate", "module": "touchgate", "dataset": "touchgate.audit",
                "severity": severityNumber(record), "id": uid(record),
            ] as [String: Any],
            "user": user(record, idKey: "id"),
            "host": hostFields,
            "touchgate": touchgateFields(record),
        ]
        return line(document)
    }

    // MARK: Mapping

    private static func ocsfActivity(_ event: String) -> (Int, String) {
        switch event {
        case "auth.attempt", "vault.unlock", "item.read": (1, "Logon")
        case "vault.lock", "session.end": (2, "Logoff")
        default: (99, "Other")
        }
    }

    private static func ocsfStatus(_ outcome: String) -> (Int, String) {
        switch outcome {
        case "success": (1, "Success")
        case "failure", "denied": (2, "Failure")
        default: (99, "Other")
        }
    }

    /// OCSF's severity for the journal's priority of the record.
    private static func ocsfSeverity(_ record: AuditRecordReport) -> (Int, String) {
        switch severityNumber(record) {
        case 2: (5, "Critical")
        case 3: (4, "High")
        case 4: (3, "Medium")
        case 5: (2, "Low")
        default: (1, "Informational")
        }
    }

    /// The syslog priority the journal copy carries (2 critical … 6 informational).
    private static func severityNumber(_ record: AuditRecordReport) -> Int {
        AuditJournal.priority(event: AuditEvent(stored: record.event), outcome: AuditOutcome(stored: record.outcome))
    }

    private static func ecsOutcome(_ outcome: String) -> String {
        switch outcome {
        case "success": "success"
        case "failure", "denied": "failure"
        default: "unknown"
        }
    }

    private static func ecsCategory(_ event: String) -> ([String], [String]) {
        switch event {
        case "auth.attempt", "vault.unlock": (["authentication"], ["start"])
        case "vault.lock", "session.end": (["authentication"], ["end"])
        case "lockout.start", "lockout.end": (["authentication"], ["info"])
        case "item.read": (["authentication"], ["access"])
        case "item.write": (["configuration"], ["change"])
        case "item.delete": (["configuration"], ["deletion"])
        case "finger.enroll", "vault.init": (["iam"], ["creation"])
        case "finger.delete": (["iam"], ["deletion"])
        case "passphrase.change": (["iam"], ["change"])
        case "integrity.failure": (["intrusion_detection"], ["info"])
        default: (["configuration"], ["info"])
        }
    }

    // MARK: Shared fields

    /// The user the record is about: the vault user, else the writer.
    private static func user(_ record: AuditRecordReport, idKey: String) -> [String: Any] {
        if let vaultUser = record.vaultUser, vaultUser != record.login { return ["name": vaultUser] }
        return ["name": record.login, idKey: String(record.uid)]
    }

    /// A stable id: the trail and the sequence.
    private static func uid(_ record: AuditRecordReport) -> String {
        "\(record.trail ?? "local"):\(record.seq)"
    }

    private static func message(_ record: AuditRecordReport) -> String {
        var text = "touchgate audit #\(record.seq): \(record.event) \(record.outcome)"
        if let item = record.item { text += " item \(item)" }
        if !record.reason.isEmpty { text += ": \(record.reason)" }
        return text
    }

    /// Everything Touchgate knows that the schema has no place for, chain fields included.
    private static func touchgateFields(_ record: AuditRecordReport) -> [String: Any] {
        var fields: [String: Any] = ["event": record.event, "outcome": record.outcome, "seq": record.seq,
                                     "uid": record.uid, "login": record.login, "boot_time": record.bootTime]
        fields["item"] = record.item
        fields["vault_user"] = record.vaultUser
        fields["trail"] = record.trail
        fields["mac"] = record.mac
        fields["prev_mac"] = record.prevMAC
        fields["chain"] = record.chain
        fields["prev_chain"] = record.prevChain
        return fields
    }

    private static func milliseconds(_ record: AuditRecordReport) -> Int64 {
        Int64(((record.unixTime ?? record.time.timeIntervalSince1970) * 1000).rounded(.down))
    }

    /// ISO 8601 with milliseconds, UTC: made once, not per record.
    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    private static func timestamp(_ record: AuditRecordReport) -> String {
        Date(timeIntervalSince1970: Double(milliseconds(record)) / 1000).formatted(timestampStyle)
    }

    private static func line(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { preconditionFailure("an audit interchange object failed to encode") }
        return String(decoding: data, as: UTF8.self)
    }
}
