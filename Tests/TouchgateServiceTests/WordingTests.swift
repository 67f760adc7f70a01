import Testing
import TouchgateAPI
@testable import TouchgatePolicy
import TouchgateTerminal

/// One thing said one way wherever it is said.
@Suite struct WordingTests {
    @Test("a no-match reads the same from verify, from a refused release and (PAMTests) from the PAM module")
    func noMatchIsWordedOnce() {
        for left in [1, 2, 5] {
            let line = TerminalText.noMatch(attemptsLeft: left)
            let refusal = AuthorizationError.authenticationFailed(.noMatch(attemptsBeforeLockout: left)).userMessage
            #expect(refusal.hasPrefix(line.prefix(1).uppercased() + line.dropFirst() + "."), "\(line) / \(refusal)")
        }
        #expect(TerminalText.noMatch(attemptsLeft: nil) == "no match")
        #expect(AuthorizationError.authenticationFailed(.noMatch(attemptsBeforeLockout: 0)).userMessage.hasPrefix("No match."))
    }

    @Test("the time a lockout has left reads as status shows it, to the second")
    func lockoutTimeIsStatusTime() {
        for seconds in [0, 1, 59, 60, 61, 882, 900, 3599, 3600, 3660, 7325] {
            #expect(AuthorizationError.minutesText(.seconds(seconds)) == StatusText.duration(seconds), "\(seconds) s")
        }
        let info = LockoutInfo(remaining: .seconds(882), passphraseOnly: false)
        #expect(AuthorizationError.lockedOut(info).userMessage.contains("Try again in 14 min 42 s,"))
    }
}
