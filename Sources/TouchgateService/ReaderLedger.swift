import CSodium
import FingerprintKit
import Foundation
import TouchgateVault
import TouchgateWire

/// What Touchgate wrote to one reader's own storage (match-on-chip readers): the
/// enrollments under way and the label of each enrolled print, kept in the authenticated
/// state so that it is read without the vault key and edits to it are detected.
///
/// ## The user id on the chip
/// libfprint's match-on-chip drivers (synaptics, elanmoc, goodixmoc, fpcmoc) build the id
/// they store on the reader with `fpi_print_generate_user_id`:
/// `FP1-<YYYYMMDD>-<finger, hex>-<8 random hex digits>-<username>`, cut at 64 to 100
/// bytes depending on the reader, and set it as the print's description; listing parses
/// it back into date, finger and username (`fpi_print_fill_from_user_id`). A description
/// set before enrolling is overwritten with that id, so the username is the only part a
/// program chooses that reaches the chip. On readers with storage Touchgate sets the
/// username to ``ChipLabel/username(nonce:user:)`` — `touchgate-<nonce>-<user>`, where the
/// nonce is 8 hex digits drawn for this enrollment and `user` the name it is enrolled for —
/// and no description. Neither is secret: the nonce only ties the print to the enrollment
/// that made it, and the user name is what `prints list` shows anyway. The nonce comes
/// first so that a reader that cuts the id cuts the user name, never the nonce.
///
/// ## Interrupted enrollments
/// Before the reader starts, the enrollment is recorded as pending (committed). Saving the
/// print removes that mark in the same transaction, so a mark that is still there means
/// the store never got the print. If saving fails or the request is cancelled after the
/// reader stored it, the print is deleted from the reader at once; if the process dies
/// there (kill -9), the next enroll, list or verify on that reader deletes every print
/// carrying a pending nonce (audited) and drops the marks.
struct ReaderLedger: Codable, Sendable, Equatable {
    /// An enrollment that has started on the reader and not been saved yet.
    struct Pending: Codable, Sendable, Equatable {
        var nonce: String
        var user: String
        var finger: String
        var started: Date
    }

    /// The label of an enrolled print.
    struct Entry: Codable, Sendable, Equatable {
        var user: String
        var finger: String
        var nonce: String
    }

    var pending: [Pending] = []
    var enrolled: [Entry] = []

    /// The state key of the ledger of one reader.
    static func key(driver: String, deviceID: String) -> String {
        "enrollment.chip.\(driver):\(deviceID)"
    }

    static func key(_ info: ReaderInfo) -> String { key(driver: info.driver, deviceID: info.deviceID) }

    /// The nonce recorded for an enrolled print, if any.
    func nonce(user: String, finger: String) -> String? {
        enrolled.first { $0.user == user && $0.finger == finger }?.nonce
    }

    // MARK: Reading and changing it

    /// The ledger of `info`'s reader as stored (empty when none).
    static func read(_ state: StateStore, _ info: ReaderInfo) throws -> ReaderLedger {
        try decode(state.state(key(info)))
    }

    /// Changes the ledger under `key` inside `transaction`; an empty ledger is removed.
    static func update(_ key: String, in transaction: StoreTransaction, _ change: (inout ReaderLedger) -> Void) throws {
        try transaction.updateState(key) { data in
            var ledger = (try? decode(data)) ?? ReaderLedger()
            change(&ledger)
            data = ledger == ReaderLedger() ? nil : try? JSONEncoder().encode(ledger)
        }
    }

    private static func decode(_ data: Data?) throws -> ReaderLedger {
        guard let data else { return ReaderLedger() }
        let decoder = JSONDecoder()
        return try decoder.decode(ReaderLedger.self, from: data)
    }
}

/// The username Touchgate writes to prints on readers with storage; see ``ReaderLedger``.
enum ChipLabel {
    static let prefix = "touchgate-"

    /// A fresh nonce: 8 lowercase hex digits from libsodium's generator.
    static func newNonce() -> String {
        var bytes = [UInt8](repeating: 0, count: 4)
        randombytes_buf(&bytes, bytes.count)
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// `touchgate-<nonce>-<user>`.
    static func username(nonce: String, user: String) -> String {
        "\(prefix)\(nonce)-\(user)"
    }

    /// The nonce in a username Touchgate wrote, or nil for any other (or none).
    static func nonce(in username: String?) -> String? {
        guard let username, username.hasPrefix(prefix) else { return nil }
        let nonce = username.dropFirst(prefix.count).prefix(8)
        guard nonce.count == 8, nonce.allSatisfy(\.isHexDigit) else { return nil }
        return String(nonce)
    }

    /// The user part of a username Touchgate wrote (possibly cut short by the reader).
    static func user(in username: String?) -> String? {
        guard let username, nonce(in: username) != nil else { return nil }
        return String(username.dropFirst(prefix.count + 9))
    }
}

extension ReaderPrintReport {
    /// What a reader says about one of its prints.
    init(_ print: Print, reader info: ReaderInfo) {
        let day = print.enrollDate.flatMap { date -> String? in
            guard let year = date.year, let month = date.month, let day = date.day else { return nil }
            return String(format: "%04d-%02d-%02d", year, month, day)
        }
        self.init(driver: info.driver, deviceID: info.deviceID,
                  finger: print.finger == .unknown ? nil : print.finger.name, chipUser: print.username,
                  enrolled: day, touchgate: ChipLabel.nonce(in: print.username) != nil)
    }

}
