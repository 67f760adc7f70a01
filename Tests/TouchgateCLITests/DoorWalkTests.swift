import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Every door of every host, walked with the real clients: each request goes through the
/// host's gate (`ServiceGate`), which names in each record it causes the caller the door
/// found (its process, from the kernel or the bus) and the door itself. A door that reached
/// the service around the gate would leave a record naming neither.
@Suite("Every door goes through the gate", .serialized, .timeLimit(.minutes(4)))
struct DoorWalkTests {
    /// The newest record whose reason contains `text`.
    static func record(_ trail: [[String: Any]], mentioning text: String) -> String? {
        trail.compactMap { $0["reason"] as? String }.last { $0.contains(text) }
    }

    @Test("the personal mode: the command in its own process, the agent's socket, its SSH socket, the Secret Service")
    func thePersonalHostsDoors() async throws {
        for (tool, package) in [("/usr/bin/ssh-keygen", "openssh-client"), ("/usr/bin/secret-tool", "libsecret-tools")] {
            try HelperRig.require(tool, package: package)
        }
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")

        // The command, in its own process.
        let inProcess = try await rig.vault.run(["verify", "--json"], presenting: ["whorl"])
        #expect(inProcess.status == 0, "\(inProcess.stderrLines)")
        let made = try await rig.vault.run(["ssh", "keygen", "walk"])
        try #require(made.status == 0, "\(made.stderrLines)")
        let publicKey = rig.home.path("walk.pub")
        try Data(made.stdout.utf8).write(to: URL(fileURLWithPath: publicKey))
        var trail = try await rig.vault.auditTrail()
        let own = Self.record(trail, mentioning: "verify")
        #expect(own?.contains(" in-process)") == true && own?.contains("touchgate-cli") == true, "\(own ?? "none")")

        // The agent, with the Secret Service on a private bus.
        let bus = try await NotificationRig()
        defer { bus.stop() }
        let socket = rig.home.path("agent.sock")
        let agent = try await BackgroundProgram(rig.bin + "/touchgate", ["agent", "--json", "--socket", socket, "--secret-service"],
                                                environment: rig.environment.merging(bus.environment) { $1 },
                                                finger: rig.vault.finger)
        defer { agent.stopNow() }
        try await waitForSocket(socket)
        for _ in 0..<100 where !agent.errorLines.contains(where: { $0.contains("serving the Secret Service") }) {
            try await Task.sleep(for: .milliseconds(50))
        }

        // Its socket for the commands.
        let throughAgent = try await rig.run(rig.bin + "/touchgate", ["verify", "--json"],
                                             extra: ["TOUCHGATE_SOCKET": rig.home.path("socket")], presenting: ["whorl"])
        #expect(throughAgent.status == 0, "\(throughAgent.stderrLines)")
        // Its SSH socket: ssh-keygen signs a file.
        let message = rig.home.path("message")
        try Data("walked\n".utf8).write(to: URL(fileURLWithPath: message))
        let signed = try await rig.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", publicKey, "-n", "file", message],
                                       extra: ["SSH_AUTH_SOCK": socket], presenting: ["whorl"])
        #expect(signed.status == 0, "\(signed.stderrLines)")
        // The Secret Service: secret-tool stores, then reads after a touch naming it.
        let stored = try await rig.run("/usr/bin/secret-tool", ["store", "--label=Walk", "service", "walk"],
                                       extra: bus.environment, stdin: Data("walk-value".utf8))
        #expect(stored.status == 0, "\(stored.stderrLines)")
        rig.vault.finger.present(["whorl"])
        let read = try await rig.run("/usr/bin/secret-tool", ["lookup", "service", "walk"], extra: bus.environment,
                                     presenting: ["whorl"])
        #expect(read.status == 0 && read.stdout == "walk-value", "\(read.stderrLines) \(agent.errorLines.suffix(4))")

        trail = try await rig.vault.auditTrail()
        let agentSocket = Self.record(trail, mentioning: "at touchgate agent's socket")
        #expect(agentSocket?.contains("verify") == true && agentSocket?.contains("touchgate") == true,
                "\(agentSocket ?? "no record names the agent's socket")")
        let ssh = Self.record(trail, mentioning: "at touchgate agent's SSH socket")
        #expect(ssh?.contains("to sign a file") == true && ssh?.contains("/usr/bin/ssh-keygen") == true,
                "\(ssh ?? "no record names the SSH socket")")
        let secretService = Self.record(trail, mentioning: "on the Secret Service")
        #expect(secretService?.contains("secret-tool") == true, "\(secretService ?? "no record names the Secret Service")")
        // Each names the process the door found: a pid, and the program where /proc shows it.
        for reason in [agentSocket, ssh, secretService].compactMap({ $0 }) {
            #expect(reason.contains("(via pid "), "\(reason)")
        }
        await agent.stop()
    }

    @Test("touchgated: its socket, and the agent's doors forwarding to it")
    func theDaemonsDoors() async throws {
        try HelperRig.require("/usr/bin/ssh-keygen", package: "openssh-client")
        let rig = try await DaemonRig()
        try await rig.start()
        try await rig.initialize()
        let made = try await rig.run(["ssh", "keygen", "walk"])
        try #require(made.status == 0, "\(made.stderrLines)")
        let publicKey = rig.home.path("walk.pub")
        try Data(made.stdout.utf8).write(to: URL(fileURLWithPath: publicKey))
        let verified = try await rig.run(["verify", "--json"], presenting: ["whorl"])
        #expect(verified.status == 0, "\(verified.stderrLines)")

        // The agent forwards its SSH door to the daemon, saying what it found of its client.
        let socket = rig.home.path("walk-agent.sock")
        let agent = try await BackgroundProgram(rig.binDirectory + "/touchgate", ["agent", "--json", "--socket", socket],
                                                environment: ["TOUCHGATE_SOCKET": rig.socketPath, "HOME": rig.home.path("")],
                                                finger: rig.finger)
        defer { agent.stopNow() }
        try await waitForSocket(socket)
        let message = rig.home.path("message")
        try Data("walked\n".utf8).write(to: URL(fileURLWithPath: message))
        rig.finger.present(["whorl"])
        let signed = try await runProgram("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", publicKey, "-n", "file", message],
                                          environment: ["SSH_AUTH_SOCK": socket])
        #expect(signed.status == 0, "\(signed.stderr) \(agent.errorLines.suffix(4))")

        let shown = try await rig.run(["audit", "show", "--json"])
        let trail = shown.json?["records"] as? [[String: Any]] ?? []
        let daemon = Self.record(trail, mentioning: "verify")
        #expect(daemon?.contains("at touchgated's socket)") == true, "\(daemon ?? "none")")
        let forwarded = Self.record(trail, mentioning: "to sign a file")
        #expect(forwarded?.contains("at touchgated's socket, touchgate agent for pid ") == true
                && forwarded?.contains("/usr/bin/ssh-keygen") == true, "\(forwarded ?? "none")")
        await agent.stop()
    }
}
