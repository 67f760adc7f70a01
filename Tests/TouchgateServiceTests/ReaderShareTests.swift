import Foundation
import Logging
import Synchronization
import Testing
@testable import TouchgateService
import TouchgateAPI

/// Who gets touchgated's reader and for how long (issue 46): the seat's user first, a share
/// per user for everyone else, never past libfprint's heat model, and a PAM request's wait
/// inside the module's own. Pure rules with the time passed in.
@Suite("the reader's share")
struct ReaderShareTests {
    let start = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }
    static let attacker: UInt32 = 1001, seatUser: UInt32 = 1000

    func seconds(_ decision: ReaderShare.Decision) -> Double? {
        guard case .grant(let limit) = decision else { return nil }
        return HeatEstimate.seconds(limit)
    }

    func retryAfter(_ decision: ReaderShare.Decision) -> Int? {
        guard case .refuse(let error) = decision else { return nil }
        #expect(error.code == .limit, "a refusal is a temporary failure (exit 75): \(error)")
        return error.retryAfterSeconds
    }

    @Test("the heat estimate is libfprint's: 180 s of use from the start is exactly HOT, and cooling takes minutes")
    func heatModelMirrorsLibfprint() {
        var heat = HeatEstimate(at: at(0))
        #expect(abs(heat.ratio(at: at(0)) - 0.26894) < 0.0001)
        heat.set(active: true, at: at(0))
        #expect(abs(heat.ratio(at: at(180)) - HeatEstimate.hot) < 0.0001, "one time constant crosses from WARM to HOT")
        #expect(abs(HeatEstimate.seconds(heat.useLeft(below: HeatEstimate.hot, at: at(0))) - 180) < 0.01)
        heat.set(active: false, at: at(180))
        // libfprint keeps it HOT until 0.5: 540·ln(0.731/0.5) = 205 s.
        #expect(abs(HeatEstimate.seconds(heat.cooling(downTo: 0.5, at: at(180))) - 205.1) < 0.5)
    }

    @Test("a user elsewhere gets 20 s of the reader in any minute, then is refused with when to try again")
    func budgetWindow() {
        var share = ReaderShare(at: at(0))
        #expect(seconds(share.admit(Self.attacker, standing: .elsewhere, at: at(0))) == 20)
        share.began(Self.attacker, at: at(0))
        share.ended(at: at(12))
        // 8 s left: a turn of 8 s.
        #expect(seconds(share.admit(Self.attacker, standing: .elsewhere, at: at(13))) == 8)
        share.began(Self.attacker, at: at(13))
        share.ended(at: at(19))
        // 2 s left, under the 5 s a touch needs: refused until the first turn leaves the window
        // far enough that 5 s are free again (at 60 + 3 = 63 s: 9 + 6 = 15 s in the window).
        let refused = retryAfter(share.admit(Self.attacker, standing: .elsewhere, at: at(20)))
        // Found to the tenth of a second, rounded up.
        #expect(refused == 43 || refused == 44, "\(String(describing: refused))")
        #expect(seconds(share.admit(Self.attacker, standing: .elsewhere, at: at(63.2))) ?? 0 >= 5)
        // Another user is untouched by this one's spending, and so is the seat's user.
        #expect(seconds(share.admit(7, standing: .elsewhere, at: at(20))) == 20)
        #expect(seconds(share.admit(Self.seatUser, standing: .atSeat, at: at(20))) ?? 0 > 60)
    }

    @Test("the seat's user goes before, and ends the turn of, only a user who is elsewhere")
    func priority() {
        #expect(ReaderShare.preempts(.atSeat, holder: .elsewhere))
        #expect(!ReaderShare.preempts(.atSeat, holder: .atSeat))
        #expect(!ReaderShare.preempts(.atSeat, holder: .unknown), "without logind nobody is put first")
        #expect(!ReaderShare.preempts(.elsewhere, holder: .elsewhere))
        #expect(!ReaderShare.preempts(.unknown, holder: .elsewhere))
    }

    @Test("users elsewhere looping untouched requests never take the modelled heat past 0.5; the seat's user then still has a minute")
    func manyUsersElsewhereStayCool() {
        var share = ReaderShare(at: at(0))
        var now = 0.0
        var held = 0.0
        // Twenty accounts, each taking every turn it is given, for an hour.
        while now < 3600 {
            var served = false
            for user in UInt32(2000)..<2020 {
                if let limit = seconds(share.admit(user, standing: .elsewhere, at: at(now))) {
                    share.began(user, at: at(now))
                    now += limit
                    held += limit
                    share.ended(at: at(now))
                    #expect(share.heatRatio(at: at(now)) <= 0.5001)
                    served = true
                }
            }
            if !served { now += 1 }
        }
        #expect(held > 600, "they were served, within the bound: \(held) s of an hour")
        #expect(share.heatRatio(at: at(now)) < HeatEstimate.hot)
        let left = seconds(share.admit(Self.seatUser, standing: .atSeat, at: at(now))) ?? 0
        #expect(left >= 60, "the seat's user finds \(left) s")
    }

    @Test("the seat's user alone, never touching: turns are cut at the ceiling, the reader never turns HOT")
    func seatUserAloneStaysBelowHot() {
        var share = ReaderShare(at: at(0))
        var now = 0.0
        var refusals = 0
        while now < 1800 {
            switch share.admit(Self.seatUser, standing: .atSeat, at: at(now)) {
            case .grant(let limit):
                let hold = min(60, HeatEstimate.seconds(limit))  // the finger wait ends it at 60 s
                share.began(Self.seatUser, at: at(now))
                now += hold
                share.ended(at: at(now))
                #expect(share.heatRatio(at: at(now)) <= 0.6501)
            case .refuse(let error):
                refusals += 1
                now += Double(error.retryAfterSeconds ?? 1)
            }
        }
        #expect(refusals > 0, "an untouched loop is held back at some point")
        // The first two turns are whole minutes: a person who walks to the reader is not cut short.
        var fresh = ReaderShare(at: at(0))
        #expect(seconds(fresh.admit(Self.seatUser, standing: .atSeat, at: at(0))) ?? 0 > 60)
        fresh.began(Self.seatUser, at: at(0))
        fresh.ended(at: at(60))
        #expect(seconds(fresh.admit(Self.seatUser, standing: .atSeat, at: at(60))) ?? 0 > 60)
    }

    @Test("a PAM request waits in the queue at most half its module's timeout, leaving at least ten seconds to touch")
    func pamFit() {
        #expect(ReaderShare.queueBound(clientWait: .seconds(30)) == .seconds(15))
        #expect(ReaderShare.queueBound(clientWait: .seconds(60)) == .seconds(30))
        #expect(ReaderShare.queueBound(clientWait: .seconds(15)) == .seconds(5))
        #expect(ReaderShare.queueBound(clientWait: .seconds(8)) == .zero, "too short to wait at all: refused at once")
        for timeout in 1...3600 {
            let bound = ReaderShare.queueBound(clientWait: .seconds(timeout))
            #expect(bound <= .seconds(timeout) - .seconds(10) || bound == .zero)
        }
    }
}

/// ReaderTurns applying the share: the seat's user's request ends a remote holder's turn,
/// and a request whose client waits a short time is refused rather than queued past it.
@Suite("turns at touchgated's reader")
struct ReaderTurnsShareTests {
    static let seatUser: UInt32 = 1000, remoteUser: UInt32 = 1001

    @Test("a request of the seat's user ends the turn of a holder who is elsewhere, who is told why, and is served next")
    func seatUserPreempts() async throws {
        let standings = SeatStandings(logger: Logger(label: "test")) { [Self.seatUser] }
        let turns = ReaderTurns(standings: standings)
        let remote = ReaderTurns.Request(owner: Self.remoteUser)
        let cancelled = Mutex(false)
        remote.onCancel { cancelled.withLock { $0 = true } }
        try await ReaderTurns.$request.withValue(remote) { try await turns.acquire() }
        let seat = ReaderTurns.Request(owner: Self.seatUser)
        let served = Task { try await ReaderTurns.$request.withValue(seat) { try await turns.acquire() } }
        for _ in 0..<100 where !cancelled.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
        #expect(cancelled.withLock { $0 }, "the holder's request was cancelled")
        #expect(remote.interruption == ReaderTurns.preempted)
        #expect(remote.interruption?.code == .limit, "a temporary failure, exit 75")
        // The cancelled request gives its turn back, as its task does on cancellation.
        await turns.release()
        try await served.value
        #expect(seat.interruption == nil)
        await turns.release()
    }

    @Test("a holder at the seat keeps its turn; a request whose client waits 11 s is refused after 1 s in the queue")
    func seatHolderKeepsItsTurn() async throws {
        let standings = SeatStandings(logger: Logger(label: "test")) { [Self.seatUser] }
        let turns = ReaderTurns(standings: standings)
        let seat = ReaderTurns.Request(owner: Self.seatUser)
        try await ReaderTurns.$request.withValue(seat) { try await turns.acquire() }
        let remote = ReaderTurns.Request(owner: Self.remoteUser, clientWait: .seconds(11))
        let started = ContinuousClock.now
        // Its client waits 11 s: it may queue min(5.5, 1) = 1 s, then is refused.
        do {
            try await ReaderTurns.$request.withValue(remote) { try await turns.acquire() }
            Issue.record("a turn was given while the seat's user held the reader")
        } catch let error as ServiceError {
            #expect(error.code == .limit && error.message.contains("waits only 11 s"), "\(error)")
        }
        let waited = started.duration(to: .now)
        #expect(waited >= .seconds(0.9) && waited < .seconds(5), "refused after \(waited)")
        #expect(seat.interruption == nil)
        await turns.release()
    }
}
