public import TouchgateAPI
public import TouchgateBasics

/// The authenticator's side of a ceremony: it has no terminal of its own, so what the service
/// says (touch the reader to sign in to example.org) goes where `show` sends it (`serve`'s
/// output and a desktop notification; touchgated's log); it cannot ask for a passphrase or a
/// confirmation, and says what to run instead. `ended` is called when a verification is
/// over, matched or not, so a notice asking for the finger can be taken down; `refused` with
/// why a ceremony was refused and what to do (unlock the vault, enroll a finger), which CTAP
/// has no room to tell the browser.
public struct PasskeyPrompts: Interaction {
    private let show: @Sendable (InteractionEvent) -> Void
    public let ended: @Sendable () -> Void
    public let refused: @Sendable (String) -> Void

    public init(ended: @escaping @Sendable () -> Void = {}, refused: (@Sendable (String) -> Void)? = nil,
                _ show: @escaping @Sendable (InteractionEvent) -> Void) {
        self.show = show
        self.ended = ended
        self.refused = refused ?? { show(InteractionEvent(.notice, $0)) }
    }

    public func event(_ event: InteractionEvent) { show(event) }

    public func passphrase(prompt: String, again: Bool) throws -> SecretBytes { throw Self.cannotAsk }
    public func newPassphrase(prompt: String) throws -> SecretBytes { throw Self.cannotAsk }
    public func repeatPassphrase(prompt: String) throws -> SecretBytes { throw Self.cannotAsk }
    public var canAskAgain: Bool { false }
    public func confirm(_ question: String, details: [String]) async throws -> Bool { false }

    static let cannotAsk = ServiceError(.passphraseRequired, "the passkey authenticator cannot ask for the passphrase; "
                                        + "run touchgate unlock, then try again")
}
