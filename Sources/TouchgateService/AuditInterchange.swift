import FoundationEssentials
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
        var event: [String: Field] = [
            "class_uid": 3002, "class_name": "Authentication",
            "category_uid": 3, "category_name": "Identity & Access Management",
            "activity_id": .int(activityID), "activity_name": .text(activity),
            "type_uid": .int(300_200 + activityID), "type_name": .text("Authentication: \(activity)"),
            "time": .int(milliseconds(record)), "severity_id": .int(severityID), "severity": .text(severity),
            "status_id": .int(statusID), "status": .text(status), "status_detail": .text(record.reason),
            "message": .text(message(record)),
            "auth_protocol_id": 99, "auth_protocol": "Touchgate",
            "user": user(record, idKey: "uid"),
            "actor": ["user": ["name": .text(record.login), "uid": .text(String(record.uid))]],
            "device": ["hostname": .text(host), "type_id": 0, "type": "Unknown"],
            "metadata": [
                "version": .text(ocsfVersion), "log_name": "touchgate-audit", "sequence": .int(record.seq),
                "uid": .text(uid(record)),
                "product": ["name": "Touchgate", "vendor_name": "Touchgate"],
            ],
            "unmapped": touchgateFields(record),
        ]
        if let item = record.item { event["service"] = ["name": .text(item)] }
        return line(.object(event))
    }

    /// One ECS document for `record`, as one JSON line.
    static func ecs(_ record: AuditRecordReport, host: String) -> String {
        let (category, type) = ecsCategory(record.event)
        var hostFields: [String: Field] = ["hostname": .text(host)]
        if let bootID = record.bootID { hostFields["boot"] = ["id": .text(bootID)] }
        let document: Field = [
            "@timestamp": .text(timestamp(record)),
            "ecs": ["version": .text(ecsVersion)],
            "message": .text(message(record)),
            "event": [
                "kind": "event", "category": .list(category.map(Field.text)), "type": .list(type.map(Field.text)),
                "action": .text(record.event), "outcome": .text(ecsOutcome(record.outcome)), "reason": .text(record.reason),
                "sequence": .int(record.seq), "provider": "touchgate", "module": "touchgate",
                "dataset": "touchgate.audit", "severity": .int(severityNumber(record)), "id": .text(uid(record)),
            ],
            "user": user(record, idKey: "id"),
            "host": .object(hostFields),
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
    private static func user(_ record: AuditRecordReport, idKey: String) -> Field {
        if let vaultUser = record.vaultUser, vaultUser != record.login { return ["name": .text(vaultUser)] }
        return .object(["name": .text(record.login), idKey: .text(String(record.uid))])
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
    private static func touchgateFields(_ record: AuditRecordReport) -> Field {
        var fields: [String: Field] = ["event": .text(record.event), "outcome": .text(record.outcome),
                                       "seq": .int(record.seq), "uid": .int(record.uid),
                                       "login": .text(record.login), "boot_time": .number(record.bootTime)]
        fields["item"] = record.item.map(Field.text)
        fields["vault_user"] = record.vaultUser.map(Field.text)
        fields["trail"] = record.trail.map(Field.text)
        fields["mac"] = record.mac.map(Field.text)
        fields["prev_mac"] = record.prevMAC.map(Field.text)
        fields["chain"] = record.chain.map(Field.text)
        fields["prev_chain"] = record.prevChain.map(Field.text)
        return .object(fields)
    }

    private static func milliseconds(_ record: AuditRecordReport) -> Int64 {
        Int64(((record.unixTime ?? record.time.timeIntervalSince1970) * 1000).rounded(.down))
    }

    /// ISO 8601 with milliseconds, UTC: made once, not per record.
    private static let timestampStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    private static func timestamp(_ record: AuditRecordReport) -> String {
        Date(timeIntervalSince1970: Double(milliseconds(record)) / 1000).formatted(timestampStyle)
    }

    /// Keys sorted by their UTF-8 bytes (JSONEncoder's order; the keys here, lowercase ASCII,
    /// `_` and `@`, sort the same under JSONSerialization's collation, which wrote them before).
    private static func line(_ object: Field) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(object) else { preconditionFailure("an audit interchange object failed to encode") }
        return String(decoding: data, as: UTF8.self)
    }

    /// One value of a line: text, a number, a list or an object.
    private enum Field: Encodable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
                        ExpressibleByDictionaryLiteral {
        case text(String)
        case integer(Int64)
        case number(Double)
        case list([Field])
        case object([String: Field])

        static func int(_ value: some BinaryInteger) -> Field { .integer(Int64(value)) }

        init(stringLiteral value: String) { self = .text(value) }
        init(integerLiteral value: Int64) { self = .integer(value) }
        init(dictionaryLiteral elements: (String, Field)...) { self = .object(Dictionary(uniqueKeysWithValues: elements)) }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            case .list(let values): try container.encode(values)
            case .object(let fields): try container.encode(fields)
            }
        }
    }
}
