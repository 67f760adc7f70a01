import Testing
@testable import TouchgateService

/// A long-lived process remembers for a while that the `auto` backend found no fprintd.
struct FprintdAbsenceTests {
    @Test("fprintd found absent is remembered for ten seconds, then asked again")
    func remembersAbsenceForAWhile() {
        let absence = FprintdAbsence()
        let start = ContinuousClock.now
        #expect(!absence.isKnown(at: start), "nothing noted yet")
        absence.note(at: start)
        #expect(absence.isKnown(at: start + .seconds(9)))
        #expect(!absence.isKnown(at: start + .seconds(10)), "asked again once the time is up")
        #expect(!absence.isKnown(at: start + .seconds(1)), "forgotten once expired")
    }
}
