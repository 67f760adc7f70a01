import Synchronization
import Testing
import TouchgateAPI
@testable import TouchgateService

/// The board touchgated's passkey devices tell their users' prompts watchers through: each
/// user hears of her own devices only, and one user's watchers cannot fill it for another.
@Suite struct PasskeyPromptBoardTests {
    /// An interaction that keeps the events it is told.
    final class Heard: Interaction, Sendable {
        private let events = Mutex<[String]>([])
        var messages: [String] { events.withLock { $0 } }
        func event(_ event: InteractionEvent) { events.withLock { $0.append(event.message) } }
        func passphrase(prompt: String, again: Bool) throws -> SecretBytes { throw ServiceError.cancelled }
        func newPassphrase(prompt: String) throws -> SecretBytes { throw ServiceError.cancelled }
        func repeatPassphrase(prompt: String) throws -> SecretBytes { throw ServiceError.cancelled }
        var canAskAgain: Bool { false }
        func confirm(_ question: String, details: [String]) async throws -> Bool { false }
    }

    @Test func eachUserHearsOfHerOwnDevicesOnly() {
        let board = PasskeyPromptBoard()
        let alice = Heard(), bob = Heard()
        let token = board.watch(uid: 1000, interaction: alice)
        _ = board.watch(uid: 1001, interaction: bob)
        #expect(board.post(InteractionEvent(.touchNeeded, "sign in to example.org"), to: 1000) == 1)
        #expect(alice.messages == ["sign in to example.org"] && bob.messages.isEmpty)
        #expect(board.post(InteractionEvent(.touchNeeded, "nobody"), to: 1002) == 0, "nobody watches uid 1002")
        board.unwatch(try! #require(token))
        #expect(board.post(InteractionEvent(.touchNeeded, "gone"), to: 1000) == 0 && alice.messages.count == 1)
    }

    @Test func oneUsersWatchersNeverFillTheBoardForAnother() {
        let board = PasskeyPromptBoard()
        let tokens = (0..<PasskeyPromptBoard.limitPerUser).map { _ in board.watch(uid: 1000, interaction: Heard()) }
        #expect(tokens.allSatisfy { $0 != nil })
        #expect(board.watch(uid: 1000, interaction: Heard()) == nil, "past the limit")
        #expect(board.watch(uid: 1001, interaction: Heard()) != nil, "another user is not refused")
        board.unwatch(tokens[0]!)
        #expect(board.watch(uid: 1000, interaction: Heard()) != nil, "a freed place is hers again")
    }
}
