import Testing
import TouchgateAPI
import TouchgateService

/// A person at a terminal choosing a passphrase, as the service asks for it: once, judged,
/// then again to confirm. Scripted answers in order, one per question.
final class TypedPassphrases: Interaction, @unchecked Sendable {
    // @unchecked Sendable: the service asks one question at a time.
    private var answers: [String]
    private(set) var asked: [String] = []
    private(set) var notices: [String] = []

    init(_ answers: [String]) { self.answers = answers }

    func event(_ event: InteractionEvent) { notices.append(event.message) }
    var canAskAgain: Bool { true }
    func confirm(_ question: String, details: [String]) throws -> Bool { false }
    func passphrase(prompt: String, again: Bool) throws -> SecretBytes { try next("passphrase") }
    func newPassphrase(prompt: String) throws -> SecretBytes { try next("new") }
    func repeatPassphrase(prompt: String) throws -> SecretBytes { try next("repeat") }

    private func next(_ question: String) throws -> SecretBytes {
        asked.append(question)
        guard !answers.isEmpty else { throw ServiceError(.passphraseInput, "no more answers") }
        let text = Array(answers.removeFirst().utf8)
        return SecretBytes.make(count: text.count) { $0.copyBytes(from: text) }
    }
}

@Suite struct NewPassphraseTests {
    @Test("a weak passphrase is refused before the repeat; a repeat that differs is asked again; three misses make nothing")
    func judgedBeforeTheRepeatAndCompared() async throws {
        let strong = ServiceRig.passphrase
        let rig = try ServiceRig()
        defer { rig.remove() }
        let person = TypedPassphrases(["hunter22", strong, "correct horse battery stapler", strong, strong])
        _ = try await rig.service.initialize(stretching: .minimum, interaction: person)
        #expect(person.asked == ["new", "new", "repeat", "new", "repeat"], "\(person.asked)")
        #expect(person.notices.contains { $0.hasPrefix("passphrase refused") }, "\(person.notices)")
        #expect(person.notices.contains("the two passphrases differ; try again"), "\(person.notices)")
        #expect(try await rig.service.status().initialized)

        // Every try mismatched: refused, and no vault is made.
        let other = try ServiceRig()
        defer { other.remove() }
        let mismatched = TypedPassphrases([strong, strong + "1", strong, strong + "2", strong, strong + "3"])
        await #expect(throws: ServiceError.self) {
            _ = try await other.service.initialize(stretching: .minimum, interaction: mismatched)
        }
        #expect(try await other.service.status().initialized == false, "nothing was made")
    }
}
