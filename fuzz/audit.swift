// Fuzz target: how audit records are made and authenticated, built by `make fuzz` with
// TouchgateVault's AuditEntry.swift, AuditEvent.swift and AuditMAC.swift (and libsodium).
// From arbitrary text:
// - the names and reason of an entry are cleaned as stored: no control or line-separator
//   character, at most the documented UTF-8 bytes, and cleaning twice changes nothing;
// - an event or outcome name read back from a record is accepted only in its documented
//   form;
// - the canonical encoding a record's MAC covers is unambiguous: parsed back field by
//   field it gives exactly the fields encoded, so no two records share a MAC input.
//
// The MAC key is replaced by one whose "MAC" is the encoded input itself, which is what
// the harness parses.
import Foundation

/// The harness's audit key: hands back the bytes it is asked to authenticate.
struct AuditKey {
    func mac(_ bytes: [UInt8]) -> [UInt8] { bytes }
}

private struct Reader {
    var bytes: [UInt8]
    var offset = 0
    mutating func take(_ count: Int) -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else { fatalError("encoding ends early") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }
    mutating func integer() -> UInt64 { take(8).reduce(0) { $0 << 8 | UInt64($1) } }
    mutating func blob() -> [UInt8] { take(Int(take(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })) }
    mutating func text() -> String {
        let bytes = blob()
        guard let text = String(validating: bytes, as: UTF8.self) else { fatalError("text that is not UTF-8") }
        return text
    }
    mutating func optionalText() -> String? {
        switch take(1)[0] {
        case 0: nil
        case 1: text()
        default: fatalError("a bad optional tag")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzAudit(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    // Up to six text fields, separated by 0xFF (never in UTF-8).
    let parts = input.split(separator: 0xFF, maxSplits: 5, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    let text = { (index: Int) in index < parts.count ? parts[index] : "" }

    for (value, limit) in [(text(0), AuditEntry.maximumNameBytes), (text(1), AuditEntry.maximumReasonBytes)] {
        let cleaned = AuditEntry.clean(value, maximumBytes: limit)
        guard cleaned.utf8.count <= limit else { fatalError("cleaned to \(cleaned.utf8.count) bytes, over \(limit)") }
        guard !cleaned.unicodeScalars.contains(where: {
            [.control, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory)
        }) else { fatalError("a control character survived cleaning") }
        guard AuditEntry.clean(cleaned, maximumBytes: limit) == cleaned else { fatalError("cleaning is not stable") }
        if value.utf8.count <= limit, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
           !value.unicodeScalars.contains(where: { [.lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) }) {
            guard cleaned == value else { fatalError("a clean, short text was changed") }
        }
    }
    let entry = AuditEntry(event: .authAttempt, outcome: .failure, vaultUser: text(0), item: text(2), reason: text(1))
    guard entry.vaultUser!.utf8.count <= AuditEntry.maximumNameBytes, entry.item!.utf8.count <= AuditEntry.maximumNameBytes,
          entry.reason.utf8.count <= AuditEntry.maximumReasonBytes else { fatalError("an entry over its limits") }

    if AuditEvent.isValidName(text(3)) {
        let name = Array(text(3).utf8)
        guard (1...64).contains(name.count), name.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0)
            || [0x2E, 0x5F, 0x2D].contains($0) }), (0x61...0x7A).contains(name[0]) else {
            fatalError("event name \(text(3).debugDescription) accepted")
        }
    }
    if let outcome = AuditOutcome(rawValue: text(4)) {
        guard ["success", "failure", "denied", "error"].contains(outcome.rawValue) else { fatalError("outcome accepted") }
    }

    let numbers = input.prefix(40) + [UInt8](repeating: 0, count: max(0, 40 - input.count))
    func number(_ index: Int) -> UInt64 { numbers.dropFirst(index * 8).prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
    let fields = AuditMAC.Fields(
        sequence: Int64(bitPattern: number(0)), unixTime: Double(bitPattern: number(1)),
        bootTime: Double(bitPattern: number(2)), bootID: text(5), uid: Int64(bitPattern: number(3)),
        loginName: text(0), vaultUser: size % 2 == 0 ? nil : text(1), event: text(3),
        item: size % 3 == 0 ? nil : text(2), outcome: text(4), reason: text(1),
        previousMAC: Array(input.suffix(Int(number(4) % 65)))
    )
    var reader = Reader(bytes: AuditMAC.record(fields, key: AuditKey()))
    guard reader.take(8) == Array("TGAUDR01".utf8) else { fatalError("record domain") }
    guard Int64(bitPattern: reader.integer()) == fields.sequence,
          reader.integer() == fields.unixTime.bitPattern, reader.integer() == fields.bootTime.bitPattern,
          reader.text() == fields.bootID, Int64(bitPattern: reader.integer()) == fields.uid,
          reader.text() == fields.loginName, reader.optionalText() == fields.vaultUser,
          reader.text() == fields.event, reader.optionalText() == fields.item,
          reader.text() == fields.outcome, reader.text() == fields.reason,
          reader.blob() == fields.previousMAC, reader.offset == reader.bytes.count
    else { fatalError("the record encoding does not parse back to its fields") }
    return 0
}
