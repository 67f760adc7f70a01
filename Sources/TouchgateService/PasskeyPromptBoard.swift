public import TouchgateAPI
import Synchronization

/// Where touchgated's passkey devices say what they wait for, per user: the daemon has no
/// terminal or desktop of the user's, so each event goes to every `passkey.prompts` request
/// that user has open (`touchgate passkey prompts` in her session shows them as desktop
/// notices). One board per process, as the devices are the host's.
public final class PasskeyPromptBoard: Sendable {
    public static let shared = PasskeyPromptBoard()

    private struct Watcher: Sendable {
        let uid: UInt32
        let interaction: any Interaction
    }

    private let watchers = Mutex<(next: UInt64, all: [UInt64: Watcher])>((0, [:]))
    /// Watchers one user may have at once (a connection each, within her connection limit).
    static let limitPerUser = 8

    /// Tells `event` to every watcher of `uid`; how many there were.
    @discardableResult
    public func post(_ event: InteractionEvent, to uid: UInt32) -> Int {
        let targets = watchers.withLock { $0.all.values.filter { $0.uid == uid } }
        for watcher in targets { watcher.interaction.event(event) }
        return targets.count
    }

    /// Adds a watcher; nil when `uid` has ``limitPerUser`` already.
    func watch(uid: UInt32, interaction: any Interaction) -> UInt64? {
        watchers.withLock { state in
            guard state.all.values.filter({ $0.uid == uid }).count < Self.limitPerUser else { return nil }
            state.next += 1
            state.all[state.next] = Watcher(uid: uid, interaction: interaction)
            return state.next
        }
    }

    func unwatch(_ token: UInt64) {
        _ = watchers.withLock { $0.all.removeValue(forKey: token) }
    }
}

extension TouchgateService {
    /// `passkey.prompts`: what this user's passkey devices wait for, told to `interaction`
    /// until the request is cancelled (the client stops or goes).
    public func passkeyPrompts(interaction: any Interaction) async throws(ServiceError) {
        guard let token = PasskeyPromptBoard.shared.watch(uid: principal.uid, interaction: interaction) else {
            throw ServiceError(.limit, "\(PasskeyPromptBoard.limitPerUser) passkey prompt watchers of yours are open "
                               + "already; stop one (touchgate passkey prompts) first")
        }
        defer { PasskeyPromptBoard.shared.unwatch(token) }
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3_600))
        }
        throw .cancelled
    }
}
