import Testing
import TouchgateAPI
import TouchgatePolicy

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
}
