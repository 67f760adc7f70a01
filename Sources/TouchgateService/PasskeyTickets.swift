import CSodium
import Synchronization
import TouchgateAPI

/// The user verifications the service handed out and not yet used: a passkey ceremony
/// needs one, for its user, site and kind, made within ``lifetime``, and uses it up.
///
/// Kept by the service (the process hosting it: touchgated, or the per-user agent), not by
/// a door: a door only carries the ticket from the verification to the ceremony, so it can
/// neither make one up, nor use one twice, nor use one made for another site.
final class PasskeyTickets: Sendable {
    static let shared = PasskeyTickets()

    /// How long a ticket waits for its ceremony: a browser asks for the token and sends the
    /// ceremony at once; CTAP 2.1 gives a token's first use 30 s.
    static let lifetime: Duration = .seconds(30)
    /// At most this many wait at once for one user (each verification was a matched finger):
    /// one user's verifications never push out another's in touchgated.
    static let limit = 64

    private struct Ticket {
        let uid: UInt32
        let rpId: String?
        let ceremony: PasskeyCeremony
        let made: ContinuousClock.Instant
    }

    private let tickets = Mutex<[[UInt8]: Ticket]>([:])

    /// A new ticket for one ceremony of `uid` at `rpId`.
    func issue(uid: UInt32, rpId: String?, ceremony: PasskeyCeremony) -> [UInt8] {
        var ticket = [UInt8](repeating: 0, count: 32)
        randombytes_buf(&ticket, ticket.count)
        let now = ContinuousClock.now
        tickets.withLock { tickets in
            tickets = tickets.filter { now - $0.value.made < Self.lifetime }
            let own = tickets.filter { $0.value.uid == uid }
            if own.count >= Self.limit, let oldest = own.min(by: { $0.value.made < $1.value.made })?.key {
                tickets[oldest] = nil
            }
            tickets[ticket] = Ticket(uid: uid, rpId: rpId, ceremony: ceremony, made: now)
        }
        return ticket
    }

    /// Uses up `ticket` if it was made for this user, site and ceremony and is still fresh.
    /// A ticket shown for anything else is used up too: it was sent to the wrong place.
    func redeem(_ ticket: [UInt8], uid: UInt32, rpId: String?, ceremony: PasskeyCeremony) -> Bool {
        let found = tickets.withLock { $0.removeValue(forKey: ticket) }
        guard let found else { return false }
        return found.uid == uid && found.rpId == rpId && found.ceremony == ceremony
            && ContinuousClock.now - found.made < Self.lifetime
    }
}
