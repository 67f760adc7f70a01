import FoundationEssentials
import Subprocess
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A desktop notification (`org.freedesktop.Notifications` on the session bus) for a touch
/// that no terminal shows: ssh-agent runs `touchgate askpass` for `ssh-add -c` keys with no
/// terminal, and its standard error goes where nobody looks, so the person at `ssh` saw
/// nothing while the reader waited.
///
/// Sent with GLib's `gdbus` tool (libglib2.0-bin, present wherever a desktop runs a
/// notification server) rather than a D-Bus library linked into every command: only this
/// door needs it, only without a terminal, and then a missing bus or tool costs nothing but
/// the notice. The texts are a prompt's, never a secret.
struct DesktopNotice: Sendable {
    /// The server's id of the notification, to withdraw it.
    let id: UInt32
    /// The session bus it was sent on.
    let bus: String

    static let gdbus = "/usr/bin/gdbus"

    /// Shows `summary` and `body` until ``withdraw()``; nil when there is no session bus
    /// (`bus`: its address, by default `DBUS_SESSION_BUS_ADDRESS`), no notification server or
    /// no `gdbus`.
    static func show(summary: String, body: String,
                     bus: String? = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]) async -> DesktopNotice? {
        guard let bus, !bus.isEmpty, access(gdbus, X_OK) == 0 else { return nil }
        // Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout),
        // typed, so that a server without introspection data parses them too. Normal urgency:
        // servers honour the expiry (the longest a finger is waited for) should the
        // withdrawal never arrive; critical ones stay until dismissed.
        let reply = await call("Notify", on: bus, ["touchgate", "uint32 0", "dialog-password",
                                                   Self.literal(Self.plain(summary)), Self.literal(Self.plain(body)),
                                                   "@as []", "@a{sv} {'urgency': <byte 1>}", "int32 120000"])
        // "(uint32 7,)"
        guard let reply, let digits = reply.split(whereSeparator: { !$0.isNumber }).last, let id = UInt32(digits),
              id > 0 else { return nil }
        return DesktopNotice(id: id, bus: bus)
    }

    /// Takes the notification off the screen.
    func withdraw() async {
        _ = await Self.call("CloseNotification", on: bus, [String(id)])
    }

    /// Runs `body` with the notice shown meanwhile, and withdraws it after. The notice never
    /// holds `body`: it is sent beside it, and given at most `grace` after `body` ends to
    /// arrive and be withdrawn (a session bus that hangs leaves one that expires by itself).
    static func during<T: Sendable>(summary: String, body text: String, grace: Duration = .seconds(2),
                                    bus: String? = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"],
                                    _ body: () async throws -> T) async throws -> T {
        let shown = Arrival<DesktopNotice?>()
        Task { await shown.set(await show(summary: summary, body: text, bus: bus)) }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        if let notice = await shown.value(within: grace) ?? nil {
            let withdrawn = Arrival<Bool>()
            Task { await notice.withdraw(); await withdrawn.set(true) }
            _ = await withdrawn.value(within: grace)
        }
        return try outcome.get()
    }

    /// `gdbus call` on the notification server; its standard output, or nil when it failed.
    private static func call(_ method: String, on bus: String, _ arguments: [String]) async -> String? {
        let command = ["call", "--address", bus, "--timeout", "2", "--dest", "org.freedesktop.Notifications",
                       "--object-path", "/org/freedesktop/Notifications",
                       "--method", "org.freedesktop.Notifications." + method] + arguments
        do {
            let result = try await Subprocess.run(.path(FilePath(gdbus)), arguments: Arguments(command),
                                                  output: .string(limit: 4096), error: .discarded)
            guard result.terminationStatus.isSuccess else { return nil }
            return result.standardOutput
        } catch {
            return nil
        }
    }

    /// `text` shown as text by a server that reads the body as markup (the specification
    /// allows `<b>`, `<a href>`, `<img>`): `&`, `<` and `>` as entities, and no format
    /// characters (bidirectional overrides) or line and paragraph separators, which could
    /// make a key's comment, chosen by whoever made the key, look like something else.
    static func plain(_ text: String) -> String {
        rewritten(text) { scalar in
            switch scalar {
            case "&": "&amp;"
            case "<": "&lt;"
            case ">": "&gt;"
            case "\u{2028}", "\u{2029}": " "
            default: scalar.properties.generalCategory == .format ? "" : nil
            }
        }
    }

    /// `text` as a GVariant string literal, which `gdbus call` parses: single-quoted, with
    /// backslashes and quotes escaped and control characters dropped.
    static func literal(_ text: String) -> String {
        let escaped = rewritten(text) { scalar in
            switch scalar {
            case "\\": "\\\\"
            case "'": "\\'"
            case "\n": "\\n"
            default: scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) ? "" : nil
            }
        }
        return "'" + escaped + "'"
    }

    /// `text` with each scalar replaced by what `rule` gives: a replacement (empty: dropped),
    /// or nil to keep it.
    private static func rewritten(_ text: String, _ rule: (Unicode.Scalar) -> String?) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if let replacement = rule(scalar) { result += replacement } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }
}

/// A value another task delivers, waited for with a limit (a task group would wait for a
/// child that never ends).
actor Arrival<Value: Sendable> {
    private var value: Value?

    func set(_ value: Value) { self.value = value }

    /// The value once delivered, or nil after `limit`.
    func value(within limit: Duration) async -> Value? {
        let deadline = ContinuousClock.now + limit
        while value == nil, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return value
    }
}
