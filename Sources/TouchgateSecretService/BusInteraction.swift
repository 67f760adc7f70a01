import FoundationEssentials
import TouchgateAPI
import TouchgateBasics

/// The person behind a Secret Service request: nobody types here, so what the service
/// says (touch the reader, no match) is shown as a desktop notification on the same bus
/// (`org.freedesktop.Notifications`), replaced as it changes and withdrawn when the request
/// ends (``finish()``); and written to the agent's log, where a terminal session sees it.
/// A passphrase cannot be asked: the answer says to run `touchgate unlock`.
final class BusInteraction: Interaction, Sendable {
    private let notices: NoticeBoard
    private let report: @Sendable (InteractionEvent) -> Void
    /// Whether a change that loses data was asked for by the client itself (a Delete).
    private let confirmed: Bool

    init(bus: BusConnection, application: String, confirmed: Bool,
         report: @escaping @Sendable (InteractionEvent) -> Void) {
        notices = NoticeBoard(bus: bus, application: application)
        self.report = report
        self.confirmed = confirmed
    }

    func event(_ event: InteractionEvent) {
        let text = event.message
        report(event)
        let notices = notices
        Task { await notices.show(text) }
    }

    func passphrase(prompt: String, again: Bool) async throws -> SecretBytes {
        throw ServiceError(.passphraseRequired, "the Secret Service cannot ask for the passphrase; run touchgate unlock "
                           + "in a terminal, then try again")
    }

    func newPassphrase(prompt: String) async throws -> SecretBytes {
        try await passphrase(prompt: prompt, again: false)
    }

    func repeatPassphrase(prompt: String) async throws -> SecretBytes {
        try await passphrase(prompt: prompt, again: false)
    }

    var canAskAgain: Bool { false }

    func confirm(_ question: String, details: [String]) async throws -> Bool { confirmed }

    /// Says why the request was refused, in a notification that expires by itself.
    func refused(_ message: String) async {
        await notices.withdraw()
        await NoticeBoard(bus: notices.bus, application: notices.application).show(message, expiry: 8_000)
    }

    /// Withdraws the notification, if one is shown.
    func finish() async {
        await notices.withdraw()
    }
}

/// One request's notification: shown on the first event, replaced on the next ones,
/// withdrawn at the end. A bus without a notification server costs nothing but the notice.
actor NoticeBoard {
    let bus: BusConnection
    let application: String
    private var id: UInt32 = 0
    private var withdrawn = false

    init(bus: BusConnection, application: String) {
        self.bus = bus
        self.application = application
    }

    func show(_ text: String, expiry: Int32 = 120_000) {
        guard !withdrawn else { return }
        // Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout).
        // Body markup is allowed by servers: the texts are escaped. Normal urgency, so that
        // the expiry (the longest a finger is waited for) holds should the withdrawal not come.
        let reply = try? bus.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications",
                                  "org.freedesktop.Notifications", "Notify",
                                  [.string("touchgate"), .uint32(id), .string("dialog-password"),
                                   .string("Touchgate: \(Self.escaped(application))"), .string(Self.escaped(text)),
                                   .array(elementType: "s", []),
                                   .dictionary(keyType: "s", valueType: "v", [(.string("urgency"), .variant(.byte(1)))]),
                                   .int32(expiry)], timeout: .seconds(2))
        if case .uint32(let given)? = reply?.first, given > 0 { id = given }
    }

    func withdraw() {
        withdrawn = true
        guard id > 0 else { return }
        _ = try? bus.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications",
                          "org.freedesktop.Notifications", "CloseNotification", [.uint32(id)], timeout: .seconds(2))
        id = 0
    }

    /// Plain text as notification markup, control characters shown escaped.
    static func escaped(_ text: String) -> String {
        StoredText.escaped(text).replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
    }
}
