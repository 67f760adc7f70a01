import FingerprintKit
import Testing
import TouchgateAPI
@testable import TouchgateVault

/// The names doors check before sending a request are the ones the service decides with.
@Suite struct VocabularyTests {
    @Test("the finger names are FingerprintKit's, and both read fprintd's long form the same way")
    func fingers() {
        #expect(Vocabulary.fingers == Finger.allCases.filter { $0 != .unknown }.map(\.name))
        for name in Vocabulary.fingers + ["RIGHT-INDEX-FINGER", "left-thumb-finger", "unknown", "thumb", ""] {
            let finger = Finger(name: name)
            #expect(Vocabulary.finger(name) == (finger == .unknown ? nil : finger?.name), "\(name)")
        }
    }

    @Test("the audit event names are the vault's, in its order")
    func auditEvents() {
        #expect(Vocabulary.auditEvents == AuditEvent.known.map(\.rawValue))
    }
}
