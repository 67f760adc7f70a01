import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgatePasskeys
import TouchgatePolicy
import TouchgateTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `touchgate passkey`: the vault's passkeys, and the authenticator browsers and FIDO tools use.
struct PasskeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey",
        abstract: "Passkeys: sign in to websites with your finger (a FIDO2 authenticator over your vault).",
        discussion: """
            The authenticator speaks CTAP 2.1 as a USB security key would; every registration \
            and sign-in asks for a touch of an enrolled finger, names the site, and is recorded \
            in the audit trail. Passkeys are vault items (kind passkey): listed here, removed \
            here, never exported but for their public keys.
            """,
        subcommands: [List.self, Delete.self, ExportPublic.self, Serve.self, Prompts.self, Enable.self, Disable.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the passkeys: site, account, algorithm, item name.",
            discussion: "--json also gives each credential id and COSE public key (base64).")

        @OptionGroup var common: CommonOptions

        @Option(help: ArgumentHelp("Only this site's (relying party id, as example.org).", valueName: "SITE"))
        var site: String?

        func run() async throws {
            let site = site
            try await CommandRunner.run(json: common.json) { console in
                let listing = try await service.passkeyList(PasskeyListRequest(rpID: site))
                console.result("passkeys", listing, text: listing.passkeys.isEmpty
                               ? "No passkeys\(site.map { " for \(StoredText.escaped($0))" } ?? "") (a site makes one when "
                                   + "you register with a security key while touchgate passkey serve runs)."
                               : listing.passkeys.map(Self.line).joined(separator: "\n"))
                return ExitStatus.success
            }
        }

        static func line(_ passkey: PasskeyReport) -> String {
            "\(StoredText.escaped(passkey.rpID))  \(passkey.userName.map(StoredText.escaped) ?? "(no name)")  "
                + "\(passkey.algorithm)  \(StoredText.escaped(passkey.name))"
                + (passkey.discoverable ? "" : "  (server-side)") + (passkey.usable ? "" : "  (invalidated)")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Remove a passkey (by the item name passkey list shows).",
            discussion: "Asks for confirmation (--yes to skip). The site keeps its public key: remove it there too.")

        @OptionGroup var common: CommonOptions

        @Argument(help: ArgumentHelp("The passkey's item name (passkey-…).", valueName: "NAME"))
        var name: String

        @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
        var yes = false

        func run() async throws {
            let (name, yes) = (name, yes)
            try await CommandRunner.run(json: common.json) { console in
                let removed = try await service.passkeyDelete(PasskeyDeleteRequest(name: name),
                                                              interaction: TerminalInteraction(console: console, assumeYes: yes))
                console.result("passkey", removed, text: "Deleted the passkey for \(StoredText.escaped(removed.rpID))"
                               + (removed.userName.map { " (\(StoredText.escaped($0)))" } ?? "") + ".")
                return ExitStatus.success
            }
        }
    }

    struct ExportPublic: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export-public", abstract: "Print a passkey's public key (COSE, base64) and credential id.",
            discussion: "What a site stores of it: for checking a site's record, or moving an account by hand.")

        @OptionGroup var common: CommonOptions

        @Argument(help: ArgumentHelp("The passkey's item name (passkey-…).", valueName: "NAME"))
        var name: String

        func run() async throws {
            let name = name
            try await CommandRunner.run(json: common.json) { console in
                guard let passkey = try await service.passkeyList(PasskeyListRequest()).passkeys.first(where: { $0.name == name })
                else {
                    throw ServiceError(.notFound, "no passkey named '\(StoredText.escaped(name))'; touchgate passkey list "
                                       + "shows their names")
                }
                console.result("passkey", passkey, text: "site: \(StoredText.escaped(passkey.rpID))\n"
                               + "credential-id: \(Self.base64URL(passkey.credentialID))\n"
                               + "algorithm: \(passkey.algorithm)\n"
                               + "public-key: \(passkey.publicKey.base64EncodedString())")
                return ExitStatus.success
            }
        }

        /// WebAuthn names a credential id in base64url without padding.
        static func base64URL(_ data: Data) -> String {
            String(data.base64EncodedString().compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 })
        }
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve the passkey authenticator until stopped.",
            discussion: """
                On --socket PATH (a SOCK_SEQPACKET socket, one 64-byte CTAPHID report per \
                message; only you can connect): for FIDO tools with transport hooks (libfido2's \
                fido_dev_set_io_functions, python-fido2's CtapHidConnection) and for tests. \
                Requests go where your other commands' go: touchgated, else touchgate agent, \
                else the store in this process (unlock it first: touchgate unlock). Every \
                registration and sign-in waits for a touch of an enrolled finger; what it waits \
                for is printed here.
                """)

        @OptionGroup var common: CommonOptions

        @Option(help: ArgumentHelp("The socket to listen on.", valueName: "PATH"))
        var socket: String?

        @Flag(help: ArgumentHelp("Appear as a USB security key through /dev/uhid (what browsers find), for as long "
                                 + "as this runs; its /dev/hidraw node is yours alone (udev rule 69-touchgate-passkey)."))
        var uhid = false

        @Option(help: ArgumentHelp("The policy of the passkeys it makes: biometry-any (any enrolled finger) or "
                                   + "biometry-current-set (the fingers enrolled now: enrolling or removing one "
                                   + "invalidates them).", valueName: "POLICY"))
        var policy: String?

        func validate() throws {
            guard (socket != nil) != uhid else { throw ValidationError("give one of --socket PATH and --uhid") }
            if let policy, !["biometry-any", "biometry-current-set"].contains(policy) {
                throw ValidationError("a passkey's policy is biometry-any or biometry-current-set (its verification is a "
                                      + "finger), not '\(policy)'")
            }
        }

        func run() async throws {
            let (chosen, uhid, policy) = (socket, uhid, policy)
            try await CommandRunner.run(json: common.json) { console in
                let log: @Sendable (String) -> Void = { console.event(InteractionEvent(.notice, $0)) }
                guard let path = chosen, !uhid else {
                    let device = try Self.device(requests: { ServiceChoice.resolve(for: $0) }, policy: policy, console: console)
                    await Self.waitUntilStopped()
                    await device.stop()
                    return ExitStatus.success
                }
                let notices = PasskeyNotices(console: console)
                let server = try PasskeySocketServer(path: path, requests: { ServiceChoice.resolve(for: $0) },
                                                     interaction: { _ in notices.prompts },
                                                     policy: policy, log: log)
                console.event(InteractionEvent(.notice, "passkey authenticator listening at \(path)"))
                let serving = Task { await server.run() }
                await Self.waitUntilStopped()
                server.stop()
                await serving.value
                return ExitStatus.success
            }
        }

        /// This user's passkey device on /dev/uhid, serving `requests` until stopped, its
        /// prompts on `console` and as desktop notices (`serve --uhid`, `agent --passkeys`).
        static func device(requests: @escaping RequestsForCaller, policy: String? = nil,
                           console: Console) throws(ServiceError) -> ServedDevice {
            let device = try UhidDevice(owner: UInt32(getuid()))
            console.event(InteractionEvent(.notice, "passkey device made (\(device.name), USB "
                                           + "\(UhidDevice.vendor.zeroPadded(4, radix: 16)):\(UhidDevice.product.zeroPadded(4, radix: 16))); "
                                           + "browsers list it as a security key while this runs"))
            let notices = PasskeyNotices(console: console)
            let serving = Task {
                await PasskeySocketServer.serveDevice(device, requests: requests, interaction: notices.prompts, policy: policy,
                                                      log: { console.event(InteractionEvent(.notice, $0)) })
            }
            return ServedDevice(device: device, serving: serving)
        }

        /// A device and the task serving it.
        struct ServedDevice: Sendable {
            let device: UhidDevice
            let serving: Task<Void, Never>

            func stop() async {
                device.stop()
                await serving.value
            }
        }

        /// Returns at SIGTERM or Ctrl-C, which the command's run turns into cancellation.
        static func waitUntilStopped() async {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
        }
    }
}

extension PasskeyCommand {
    struct Prompts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prompts",
            abstract: "Show what touchgated's passkey device of yours waits for, until stopped.",
            discussion: """
                touchgated makes your passkey device (touchgate passkey enable) but has no terminal or \
                desktop of yours: this shows each request for a finger (naming the site) on its output \
                and as a desktop notification, withdrawn when the wait is over. The unit \
                touchgate-passkey-prompts.service runs it in your graphical session. With --json, one \
                event per line. Needs touchgated (exit 75 without it); Ctrl-C or SIGTERM stops it (exit 0).
                """)

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                guard Invocation.daemonSocket() != nil else {
                    throw ServiceError(.daemonUnavailable, "touchgated is not running here, and only its passkey devices "
                                       + "need this: touchgate passkey serve shows its own prompts")
                }
                let prompts = PasskeyNotices(console: console).prompts
                // The daemon's events into the notices: `touch-ended` takes the touch notice down,
                // and the board's notices are its devices' refusals.
                let relay = PasskeyPrompts { event in
                    switch event.event {
                    case .touchEnded: prompts.event(event); prompts.ended()
                    case .notice: prompts.refused(event.message)
                    default: prompts.event(event)
                    }
                }
                console.event(InteractionEvent(.notice, "showing what your passkey device waits for; Ctrl-C stops"))
                do {
                    try await service.passkeyPrompts(interaction: relay)
                } catch let error as ServiceError where error.code == .cancelled {
                    // Stopped (Ctrl-C, SIGTERM): what it is for.
                }
                return ExitStatus.success
            }
        }

    }
}

/// What `passkey serve` and `passkey prompts` show of a ceremony: each event on the output,
/// and as desktop notifications (the person is looking at the browser, not at this terminal)
/// the request for a finger, which names the site, taken down when the verification is over,
/// and why a ceremony was refused, which stays until dismissed or replaced.
///
/// The notices are shown and withdrawn in order by one task (an event arrives synchronously,
/// from the service's thread; showing one is a `gdbus` call).
final class PasskeyNotices: Sendable {
    private enum Step: Sendable { case show(String, String, sticky: Bool), withdraw }
    private let steps: AsyncStream<Step>.Continuation
    private let console: Console

    init(console: Console) {
        self.console = console
        let (stream, steps) = AsyncStream.makeStream(of: Step.self)
        self.steps = steps
        Task {
            var shown: (notice: DesktopNotice, sticky: Bool)?
            for await step in stream {
                switch step {
                case .show(let summary, let body, let sticky):
                    await shown?.notice.withdraw()
                    shown = await DesktopNotice.show(summary: summary, body: body).map { ($0, sticky) }
                case .withdraw:
                    guard let touch = shown, !touch.sticky else { continue }
                    await touch.notice.withdraw()
                    shown = nil
                }
            }
            if let shown, !shown.sticky { await shown.notice.withdraw() }
        }
    }

    deinit { steps.finish() }

    /// The interaction for one device or connection; it keeps these notices (and their
    /// task) for as long as it is held.
    var prompts: PasskeyPrompts {
        PasskeyPrompts(ended: { self.steps.yield(.withdraw) },
                       refused: { why in
                           self.console.event(InteractionEvent(.notice, why))
                           self.steps.yield(.show("Passkey refused", why, sticky: true))
                       }) { event in
            self.console.event(event)
            if event.event == .touchNeeded {
                self.steps.yield(.show(event.message, "Touchgate passkey authenticator", sticky: false))
            }
        }
    }
}
