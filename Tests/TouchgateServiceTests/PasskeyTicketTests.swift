import Testing
import TouchgateAPI
@testable import TouchgateService

/// The service's passkey tickets: a verification is good for one ceremony, of one user, at
/// one site, once; a door that shows it anywhere else has used it up.
@Suite struct PasskeyTicketTests {
    @Test func aTicketServesItsOwnCeremonyOnce() {
        let tickets = PasskeyTickets()
        let ticket = tickets.issue(uid: 1000, rpId: "example.org", ceremony: .signIn)
        #expect(ticket.count == 32)
        #expect(tickets.redeem(ticket, uid: 1000, rpId: "example.org", ceremony: .signIn))
        #expect(!tickets.redeem(ticket, uid: 1000, rpId: "example.org", ceremony: .signIn), "used once")
    }

    @Test func anotherUserSiteOrCeremonyUsesItUpForNothing() {
        let tickets = PasskeyTickets()
        for (uid, rp, ceremony) in [(UInt32(1001), "example.org", PasskeyCeremony.signIn), (1000, "evil.example", .signIn),
                                    (1000, "example.org", .register)] {
            let ticket = tickets.issue(uid: 1000, rpId: "example.org", ceremony: .signIn)
            #expect(!tickets.redeem(ticket, uid: uid, rpId: rp, ceremony: ceremony))
            #expect(!tickets.redeem(ticket, uid: 1000, rpId: "example.org", ceremony: .signIn), "shown elsewhere, gone")
        }
    }

    @Test func aMadeUpTicketIsNothing() {
        let tickets = PasskeyTickets()
        _ = tickets.issue(uid: 1000, rpId: "example.org", ceremony: .signIn)
        #expect(!tickets.redeem([UInt8](repeating: 0, count: 32), uid: 1000, rpId: "example.org", ceremony: .signIn))
        #expect(!tickets.redeem([], uid: 1000, rpId: "example.org", ceremony: .signIn))
    }

    @Test func atMostTheLimitWaitOldestGoFirst() {
        let tickets = PasskeyTickets()
        let first = tickets.issue(uid: 1000, rpId: "a.example", ceremony: .signIn)
        let rest = (0..<PasskeyTickets.limit).map { _ in tickets.issue(uid: 1000, rpId: "a.example", ceremony: .signIn) }
        #expect(!tickets.redeem(first, uid: 1000, rpId: "a.example", ceremony: .signIn), "pushed out by newer ones")
        #expect(tickets.redeem(rest.last!, uid: 1000, rpId: "a.example", ceremony: .signIn))
    }

    @Test func oneUsersTicketsNeverPushOutAnothers() {
        let tickets = PasskeyTickets()
        let hers = tickets.issue(uid: 1001, rpId: "b.example", ceremony: .register)
        for _ in 0...PasskeyTickets.limit { _ = tickets.issue(uid: 1000, rpId: "a.example", ceremony: .signIn) }
        #expect(tickets.redeem(hers, uid: 1001, rpId: "b.example", ceremony: .register))
    }
}
