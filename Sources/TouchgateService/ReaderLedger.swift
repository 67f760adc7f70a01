import FoundationEssentials

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

    /// The nonce recorded for an enrolled print, if any.
    func nonce(user: String, finger: String) -> String? {
        enrolled.first { $0.user == user && $0.finger == finger }?.nonce
    }

    /// A stored ledger (empty when none); what is stored is authenticated, but the decoder
    /// still takes any bytes (`make fuzz` feeds it arbitrary ones).
    static func decode(_ data: Data?) throws -> ReaderLedger {
        guard let data else { return ReaderLedger() }
        let decoder = JSONDecoder()
        return try decoder.decode(ReaderLedger.self, from: data)
    }
}

/// The username Touchgate writes to prints on readers with storage; see ``ReaderLedger``.
enum ChipLabel {
    static let prefix = "touchgate-"

    /// `touchgate-<nonce>-<user>`.
    static func username(nonce: String, user: String) -> String {
        "\(prefix)\(nonce)-\(user)"
    }

    /// The nonce in a username Touchgate wrote, or nil for any other (or none): the prefix,
    /// 8 lowercase ASCII hex digits as ``newNonce()`` draws them, then `-` or the end (a
    /// reader that cuts the id may cut there). Compared byte for byte: the name comes from
    /// the reader's storage, which other software can write too.
    static func nonce(in username: String?) -> String? {
        guard let username else { return nil }
        let bytes = Array(username.utf8)
        let start = prefix.utf8.count
        guard bytes.count >= start + 8, bytes.starts(with: prefix.utf8) else { return nil }
        let nonce = bytes[start..<start + 8]
        guard nonce.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }) else { return nil }
        guard bytes.count == start + 8 || bytes[start + 8] == UInt8(ascii: "-") else { return nil }
        return String(decoding: nonce, as: UTF8.self)
    }

    /// The user part of a username Touchgate wrote (possibly cut short by the reader).
    static func user(in username: String?) -> String? {
        guard let username, nonce(in: username) != nil else { return nil }
        return String(decoding: username.utf8.dropFirst(prefix.utf8.count + 9), as: UTF8.self)
    }
}
