import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The passkey authenticator under FIDO2 clients we did not write: python-fido2 2.x (its
/// `Fido2Client`, with an origin, so a browser's relying-party checks run, and its `Ctap2`
/// for exact status codes) and libfido2 (Debian's, through its I/O hooks), over
/// `touchgate passkey serve`'s socket, with the finger played on the virtual reader.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct PasskeyTests {
    static let python = Fixtures.packageRoot.path + "/.build-python/bin/python"
    static let client = Fixtures.packageRoot.path + "/Tests/TouchgateCLITests/PasskeyClients/ctap_client.py"

    /// A vault with whorl enrolled and the authenticator serving it.
    struct Setup {
        let rig: HelperRig
        let server: BackgroundProgram
        let socket: String

        static func make(rig: HelperRig, serving options: [String] = []) async throws -> Setup {
            let found = FileManager.default.isExecutableFile(atPath: PasskeyTests.python)
                ? try await runProgram(PasskeyTests.python, ["-c", "import fido2.hid"]).status : -1
            try #require(found == 0, "python-fido2 is missing: scripts/test.sh installs it into .build-python (pip install 'fido2>=2,<3')")
            try await rig.vault.initAndUnlock()
            try await rig.vault.enroll("whorl")
            return try await serve(rig: rig, options)
        }

        /// The authenticator started (again) over the rig's vault.
        static func serve(rig: HelperRig, _ options: [String] = []) async throws -> Setup {
            let socket = rig.home.path("passkey.sock")
            let server = try await BackgroundProgram(rig.bin + "/touchgate", ["passkey", "serve", "--socket", socket] + options,
                                                     environment: rig.environment, finger: rig.vault.finger)
            try await Self.waitForAuthenticator(socket)
            return Setup(rig: rig, server: server, socket: socket)
        }

        /// Waits (10 s at most) until the authenticator accepts a SOCK_SEQPACKET connection.
        static func waitForAuthenticator(_ path: String) async throws {
            for _ in 0..<200 {
                let probe = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
                defer { close(probe) }
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix(100)) }
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
                if connected == 0 { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            Issue.record("the passkey authenticator did not listen at \(path) within 10 s")
            throw CancellationError()
        }

        /// ctap_client.py `arguments`, the finger presenting `prints` as the authenticator asks.
        func client(_ arguments: [String], presenting prints: [String] = []) async throws -> CLIResult {
            try await rig.run(PasskeyTests.python, [PasskeyTests.client, "--socket", socket] + arguments, presenting: prints)
        }

        /// A registration at example.org for `user`: its JSON.
        func register(_ user: String, resident: Bool = true) async throws -> [String: Any] {
            let made = try await client(["make", "--rp", "example.org", "--user", user] + (resident ? ["--resident"] : []),
                                        presenting: ["whorl"])
            try #require(made.status == 0, "registration: \(made.stdout) \(made.stderrLines); authenticator: \(server.errorLines)")
            return try #require(made.json)
        }
    }

    static func list(_ output: String) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [[String: Any]] ?? []
    }

    @Test func registerAndSignInThroughPythonFido2() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }

        let made = try await setup.register("alice")
        let flags = made["flags"] as? [String: Any] ?? [:]
        // Self attestation, which python-fido2's server checks: the key signed its own making.
        #expect(made["fmt"] as? String == "packed" && made["attestation_type"] as? String == "SELF"
                && made["attestation_trust_path_length"] as? Int == 0 && flags["up"] as? Bool == true && flags["uv"] as? Bool == true
                && made["rp_id_hash_ok"] as? Bool == true && made["public_key_canonical"] as? Bool == true, "\(made)")
        let credential = try #require(made["credential_id"] as? String)
        let publicKey = try #require(made["public_key"] as? String)

        // Signed in with the same finger; python-fido2 checks the signature with the registered key.
        let signed = try await setup.client(["assert", "--rp", "example.org", "--public-key", "\(credential):\(publicKey)"],
                                            presenting: ["whorl"])
        let assertion = try #require(Self.list(signed.stdout).first, "\(signed.stdout) \(signed.stderrLines)")
        #expect(signed.status == 0 && assertion["verified"] as? Bool == true && assertion["credential_id"] as? String == credential,
                "\(signed.stdout)")
        #expect((assertion["flags"] as? [String: Any])?["uv"] as? Bool == true)

        // Another site sees nothing of it.
        let elsewhere = try await setup.client(["--origin", "https://other.example", "assert", "--rp", "other.example"],
                                               presenting: ["whorl"])
        #expect(elsewhere.status == 3 && elsewhere.json?["error"] as? String == "NO_CREDENTIALS", "\(elsewhere.stdout)")

        // The CLI lists it; the trail names the site, the account and the program that asked.
        let listed = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        let passkeys = listed.json?["passkeys"] as? [[String: Any]] ?? []
        #expect(passkeys.count == 1 && passkeys.first?["rp-id"] as? String == "example.org"
                && passkeys.first?["user-name"] as? String == "alice", "\(listed.stdout)")
        let records = try await rig.auditRecords(mentioning: "example.org")
        #expect(records.contains { ($0["reason"] as? String ?? "").contains("passkey made for example.org as alice") })
        #expect(records.contains { ($0["reason"] as? String ?? "").contains("passkey sign-in at example.org as alice (user verified)") })
        #expect(records.contains { ($0["reason"] as? String ?? "").contains("sign in to example.org with a passkey: fingerprint matched") })
    }

    @Test func aWrongFingerIsUVInvalidWithRetriesThenBlocked() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        _ = try await setup.register("alice")

        let before = try await setup.client(["ctap2-uv-retries"])
        let retries = try #require(before.json?["uv_retries"] as? Int, "\(before.stdout) \(before.stderrLines)")
        #expect(retries >= 2)
        // Each stranger's finger is UV_INVALID (a browser asks again) with one retry fewer,
        // until none is left: UV_BLOCKED (a browser stops asking).
        var left = retries
        while left > 0 {
            let wrong = try await setup.client(["ctap2-uv-token", "--rp", "example.org", "--permissions", "ga"],
                                               presenting: ["arch"])
            left -= 1
            let expected = left == 0 ? "UV_BLOCKED" : "UV_INVALID"
            #expect(wrong.status == 3 && wrong.json?["error"] as? String == expected, "\(left) left: \(wrong.stdout)")
            let now = try await setup.client(["ctap2-uv-retries"])
            #expect(now.json?["uv_retries"] as? Int == left, "\(now.stdout)")
        }
        // Locked out: even the right finger is refused, as UV_BLOCKED, and nothing is signed.
        let blocked = try await setup.client(["ctap2-uv-token", "--rp", "example.org", "--permissions", "ga"],
                                             presenting: ["whorl"])
        #expect(blocked.status == 3 && blocked.json?["error"] as? String == "UV_BLOCKED", "\(blocked.stdout)")
        #expect(try await rig.auditRecords(mentioning: "passkey sign-in at").isEmpty)
    }

    /// Chromium reads 0 retries as "this key is locked by wrong fingers" and stops there:
    /// without a vault the authenticator answers the default threshold, and the
    /// verification the client asks for next is refused with what to run (enroll a finger).
    @Test func withoutAVaultTheRetriesAreNotZeroAndTheRefusalSaysWhatToRun() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.serve(rig: rig)
        defer { Task { await setup.server.stop() } }
        let retries = try await setup.client(["ctap2-uv-retries"])
        #expect(retries.json?["uv_retries"] as? Int == 3, "\(retries.stdout) \(retries.stderrLines)")
        let made = try await setup.client(["make", "--rp", "example.org", "--user", "alice", "--resident"])
        #expect(made.status == 3 && made.json?["error"] as? String == "OPERATION_DENIED", "\(made.stdout) \(made.stderrLines)")
        var said = false
        for _ in 0..<50 where !said {
            let printed = setup.server.errorLines.joined(separator: "\n")
            said = printed.contains("touchgate enroll") || printed.contains("touchgate init")
            if !said { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(said, "\(setup.server.errorLines)")
        // Asking made no vault.
        let status = try await rig.run(rig.bin + "/touchgate", ["status", "--json"])
        #expect(status.json?["initialized"] as? Bool != true, "\(status.stdout)")
    }

    @Test func cancelDuringTheWaitEndsTheCeremony() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        _ = try await setup.register("alice")
        // No finger: python-fido2 cancels at the first keepalive.
        let cancelled = try await setup.client(["cancel", "--rp", "example.org"])
        #expect(cancelled.status == 0, "\(cancelled.stdout) \(cancelled.stderrLines)")
        #expect(try await rig.auditRecords(mentioning: "passkey sign-in at").isEmpty)
        // The authenticator serves the next ceremony.
        let signed = try await setup.client(["assert", "--rp", "example.org"], presenting: ["whorl"])
        #expect(signed.status == 0, "\(signed.stdout) \(signed.stderrLines)")
    }

    @Test func twoAccountsOfOneSiteThroughGetNextAssertion() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        let alice = try await setup.register("alice")
        let bob = try await setup.register("bob")
        let signed = try await setup.client(["assert", "--rp", "example.org", "--all"], presenting: ["whorl"])
        let assertions = Self.list(signed.stdout)
        #expect(signed.status == 0 && assertions.count == 2, "\(signed.stdout) \(signed.stderrLines)")
        let names = Set(assertions.compactMap { ($0["user"] as? [String: Any])?["name"] as? String })
        #expect(names == ["alice", "bob"], "\(signed.stdout)")
        let ids = Set(assertions.compactMap { $0["credential_id"] as? String })
        #expect(ids == Set([alice["credential_id"] as? String, bob["credential_id"] as? String].compactMap { $0 }))
        // One touch for both: one verification recorded.
        let touches = try await rig.auditRecords(mentioning: "sign in to example.org with a passkey: fingerprint matched")
        #expect(touches.count == 1)

        // A platform's check without a touch: the accounts' ids, never their names (CTAP 2.1 §6.2.2).
        let checked = try await setup.client(["ctap2-get-assertion", "--rp", "example.org", "--up", "false"])
        let unnamed = Self.list(checked.stdout).compactMap { $0["user"] as? [String: Any] }
        #expect(checked.status == 0 && unnamed.count == 2 && unnamed.allSatisfy { $0["id"] is String && $0["name"] as? String == nil },
                "\(checked.stdout) \(checked.stderrLines)")
        // An allow list naming only what cannot be ours (an id longer than any of ours) finds
        // nothing: it is not read as no list, which would answer with the site's accounts.
        let foreign = try await setup.client(["ctap2-get-assertion", "--rp", "example.org", "--up", "false",
                                              "--allow", String(repeating: "ab", count: 129)])
        #expect(foreign.status == 3 && foreign.json?["error"] as? String == "NO_CREDENTIALS", "\(foreign.stdout)")
    }

    /// Credential management as a platform's settings page does it (python-fido2's
    /// CredentialManagement): one touch lists every site and account; a listing's rest is
    /// dropped by another command; a removal a minute later asks for a new touch rather than
    /// failing on the first one's spent ticket; an account renamed by its own user id only.
    @Test func credentialManagementListsAndRemovesWithTheFinger() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        _ = try await setup.register("alice")
        let bob = try await setup.register("bob")
        let carol = try await setup.client(["--origin", "https://other.example", "make", "--rp", "other.example", "--user", "carol",
                                            "--resident"], presenting: ["whorl"])
        try #require(carol.status == 0, "\(carol.stdout) \(carol.stderrLines)")
        let bobID = try #require(bob["credential_id"] as? String)

        let managed = try await setup.client(["credman", "--interrupt", "--delete", bobID, "--wait", "31"],
                                             presenting: ["whorl", "whorl"])
        let document = try #require(managed.json, "\(managed.stdout) \(managed.stderrLines)")
        #expect(managed.status == 0 && document["existing"] as? Int == 3 && document["deleted"] as? String == bobID, "\(managed.stdout)")
        let sites = document["sites"] as? [[String: Any]] ?? []
        #expect(Set(sites.compactMap { $0["id"] as? String }) == ["example.org", "other.example"], "\(managed.stdout)")
        let accounts = sites.flatMap { $0["credentials"] as? [[String: Any]] ?? [] }
        #expect(Set(accounts.compactMap { $0["name"] as? String }) == ["alice", "bob", "carol"], "\(managed.stdout)")
        #expect(accounts.allSatisfy { $0["cred_protect"] as? Int == 1 }, "\(managed.stdout)")
        #expect(document["interrupted_total"] as? Int == 2 && document["next_after_another_command"] as? String == "NOT_ALLOWED",
                "\(managed.stdout)")
        // The removal 31 s after the token's touch took a touch of its own.
        #expect(try await rig.auditRecords(mentioning: "manage the passkeys: fingerprint matched").count == 2)
        let listed = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        let names = (listed.json?["passkeys"] as? [[String: Any]] ?? []).compactMap { $0["user-name"] as? String }
        #expect(Set(names) == ["alice", "carol"], "\(listed.stdout)")

        // The site renames an account (updateUserInformation): another account's user id is
        // refused before any touch, the account's own takes the token's touch.
        func account(_ name: String) -> [String: Any]? { accounts.first { $0["name"] as? String == name } }
        let aliceID = try #require(account("alice")?["credential_id"] as? String)
        let aliceUser = try #require(account("alice")?["user_id"] as? String)
        let carolUser = try #require(account("carol")?["user_id"] as? String)
        let renamed = try await setup.client(["credman", "--rename", "\(aliceID):\(carolUser):mallory",
                                              "--rename", "\(aliceID):\(aliceUser):alicia"], presenting: ["whorl"])
        #expect(renamed.status == 0 && renamed.json?["renames"] as? [String] == ["INVALID_PARAMETER", "ok"],
                "\(renamed.stdout) \(renamed.stderrLines)")
        #expect(try await rig.auditRecords(mentioning: "manage the passkeys: fingerprint matched").count == 3)
        let after = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        let alice = (after.json?["passkeys"] as? [[String: Any]] ?? []).first { $0["rp-id"] as? String == "example.org" }
        #expect(alice?["user-name"] as? String == "alicia" && alice?["display-name"] as? String == "Alicia", "\(after.stdout)")
        #expect(try await rig.auditRecords(mentioning: "passkey for example.org as alice renamed to alicia").count == 1)
        #expect(try await rig.auditRecords(mentioning: "mallory").isEmpty)
    }

    @Test func aServerSideCredentialSignsOnlyWhenNamed() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        let made = try await setup.register("carol", resident: false)
        let credential = try #require(made["credential_id"] as? String)
        // Not discoverable: a sign-in without an allow list finds nothing, and asks no finger.
        let unnamed = try await setup.client(["ctap2-get-assertion", "--rp", "example.org"])
        #expect(unnamed.json?["error"] as? String == "NO_CREDENTIALS", "\(unnamed.stdout)")
        // Named by the site, it signs (python-fido2 checks first, without presence, which credential is held).
        let named = try await setup.client(["assert", "--rp", "example.org", "--cred", credential,
                                            "--public-key", "\(credential):\(made["public_key"] as? String ?? "")"],
                                           presenting: ["whorl"])
        #expect(named.status == 0 && Self.list(named.stdout).first?["verified"] as? Bool == true, "\(named.stdout) \(named.stderrLines)")
        // The platform's check carried neither presence nor verification, and says so in the trail.
        #expect(try await rig.auditRecords(mentioning: "passkey checked by a platform at example.org").count >= 1)
    }

    @Test func aForgedTokenSignsNothing() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        _ = try await setup.register("alice")
        // A getAssertion (0x02) whose pinUvAuthParam no token made: rp, a hash, options, a
        // 32-byte param, protocol 2.
        let cbor = "02" + "a5" + "016b6578616d706c652e6f7267" + "025820" + String(repeating: "11", count: 32)
            + "05a1627570f5" + "065820" + String(repeating: "22", count: 32) + "0702"
        let forged = try await setup.client(["raw-ctap2", "--hex", cbor])
        #expect(forged.stdout.contains("PIN_AUTH_INVALID") || forged.stdout.contains("\"code\": 51"), "\(forged.stdout)")
        #expect(try await rig.auditRecords(mentioning: "passkey sign-in at").isEmpty)
    }

    @Test func libfido2MakesAndVerifiesThroughItsIOHooks() async throws {
        try HelperRig.require("/usr/bin/cc", package: "gcc")
        try HelperRig.require("/usr/bin/pkg-config", package: "pkg-config")
        try #require(FileManager.default.fileExists(atPath: "/usr/include/fido.h"),
                     "this test needs libfido2's headers: apt-get install libfido2-dev (scripts/setup.sh installs it)")
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let harness = rig.home.path("fido2_harness")
        let source = Fixtures.packageRoot.path + "/Tests/TouchgateCLITests/PasskeyClients/fido2_harness.c"
        let built = try await runProgram("/bin/sh", ["-c", "cc -Wall -Wextra -Werror -o '\(harness)' '\(source)' "
                                                        + "$(pkg-config --cflags --libs libfido2)"])
        try #require(built.status == 0, "building the libfido2 harness: \(built.stdout) \(built.stderr)")
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }

        let made = try await rig.run(harness, [setup.socket, "make", "example.org", "dave", "resident", "uv"], presenting: ["whorl"])
        try #require(made.status == 0, "fido2_harness make: \(made.stdout) \(made.stderrLines)")
        let fields = Dictionary(made.stdout.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: " ", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }) { first, _ in first }
        let credential = try #require(fields["credential-id"]), publicKey = try #require(fields["public-key"])
        let asserted = try await rig.run(harness, [setup.socket, "assert", "example.org", credential, publicKey, "uv"],
                                         presenting: ["whorl"])
        #expect(asserted.status == 0 && asserted.stdout.contains("verified 1"), "\(asserted.stdout) \(asserted.stderrLines)")
        let stranger = try await rig.run(harness, [setup.socket, "assert", "example.org", credential, publicKey, "uv"],
                                         presenting: ["arch"])
        #expect(stranger.status == 3 && !stranger.stdout.contains("verified 1"), "\(stranger.stdout)")
    }

    @Test func aHostileClientLeavesTheAuthenticatorServing() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        // Malformed reports, a message stalled past its deadline, 500 channels, CBOR bombs, a
        // makeCredential flood while one waits for a finger (cancelled): each refused as
        // CTAP 2.1 says, and a new connection served.
        let hostile = try await rig.run(PasskeyTests.python, [Fixtures.packageRoot.path
                                                              + "/Tests/TouchgateCLITests/PasskeyClients/hostile.py", setup.socket])
        #expect(hostile.status == 0, "\(hostile.stdout) \(hostile.stderrLines)")
        #expect(hostile.stdout.split(separator: "\n").count == 16, "every attack reported: \(hostile.stdout)")
        // A registration with the finger still goes through, and nothing was made by the flood.
        let listed = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        #expect((listed.json?["passkeys"] as? [Any])?.isEmpty == true, "\(listed.stdout)")
        _ = try await setup.register("alice")
    }

    @Test func anotherUserCannotReachTheAuthenticator() async throws {
        try HelperRig.require("/usr/bin/setpriv", package: "util-linux")
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig)
        defer { Task { await setup.server.stop() } }
        // The socket is its owner's (0600): another user's client is refused before any CTAP.
        let mode = try FileManager.default.attributesOfItem(atPath: setup.socket)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let stranger = try await rig.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                               PasskeyTests.python, PasskeyTests.client,
                                                               "--socket", setup.socket, "info"])
        #expect(stranger.status != 0 && !stranger.stdout.contains("FIDO_2_1"), "\(stranger.stdout) \(stranger.stderrLines)")
    }

    @Test func anEnrollmentChangeInvalidatesACurrentSetPasskey() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, serving: ["--policy", "biometry-current-set"])
        defer { Task { await setup.server.stop() } }
        _ = try await setup.register("alice")
        let before = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        #expect((before.json?["passkeys"] as? [[String: Any]])?.first?["policy"] as? String == "biometry-current-set",
                "\(before.stdout)")
        // A finger enrolled since: the passkey is gone for good, as Apple's current-set items are.
        try await rig.vault.enroll("arch", finger: "left-index")
        let signIn = try await setup.client(["ctap2-get-assertion", "--rp", "example.org"], presenting: ["whorl"])
        #expect(signIn.json?["error"] as? String == "NO_CREDENTIALS", "\(signIn.stdout) \(signIn.stderrLines)")
        let after = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        #expect((after.json?["passkeys"] as? [[String: Any]])?.first?["usable"] as? Bool == false, "\(after.stdout)")
        #expect(try await rig.auditRecords(mentioning: "passkey sign-in at").isEmpty)
        // A policy a finger does not satisfy is refused before the authenticator starts.
        let wrong = try await rig.run(rig.bin + "/touchgate", ["passkey", "serve", "--socket", rig.home.path("x.sock"),
                                                               "--policy", "passphrase"])
        #expect(wrong.status == 64 && wrong.stderrLines.joined().contains("biometry-current-set"), "\(wrong.stderrLines)")
    }

    /// kill -9 of the authenticator (which holds the vault in its process) at random moments
    /// of a registration: afterwards the trail verifies, and a passkey exists exactly when its
    /// making is recorded; the ones that exist sign in.
    @Test func aRegistrationKilledAnywhereIsAllOrNothing() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        var setup = try await Setup.make(rig: rig)
        let started = Date()
        _ = try await setup.register("warm-up")
        let window = Date().timeIntervalSince(started) * 1.3
        var made: [String] = []
        for trial in 0..<8 {
            let user = "u\(trial)"
            let delay = Double.random(in: 0...window)
            let server = setup.server
            let killer = Task {
                try? await Task.sleep(for: .seconds(delay))
                await server.stop()
            }
            _ = try await setup.client(["make", "--rp", "example.org", "--user", user, "--resident"], presenting: ["whorl"])
            await killer.value
            setup = try await Setup.serve(rig: rig)
            let verified = try await rig.run(rig.bin + "/touchgate", ["audit", "verify"])
            #expect(verified.status == 0, "trial \(trial), killed after \(delay) s: \(verified.stdout) \(verified.stderrLines)")
            let listed = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
            let exists = (listed.json?["passkeys"] as? [[String: Any]] ?? []).contains { $0["user-name"] as? String == user }
            let recorded = try await !rig.auditRecords(mentioning: "passkey made for example.org as \(user) ").isEmpty
            #expect(exists == recorded, "trial \(trial), killed after \(delay) s: passkey \(exists), record \(recorded)")
            if exists { made.append(user) }
        }
        // Whatever was made is whole: a sign-in offers every account made, signed by the finger.
        let signed = try await setup.client(["assert", "--rp", "example.org", "--all"], presenting: ["whorl"])
        // (A site with one account gets no name with it, as CTAP says: the assertions are counted.)
        let assertions = Self.list(signed.stdout)
        #expect(signed.status == 0 && assertions.count == made.count + 1
                && assertions.allSatisfy { ($0["flags"] as? [String: Any])?["uv"] as? Bool == true },
                "\(made): \(signed.stdout) \(signed.stderrLines)")
        await setup.server.stop()
    }

    /// sqlite3 on the vault while the authenticator serves it: a passkey's policy relaxed from
    /// the current set to any finger in its row. The row's seal binds its policy, so the
    /// passkey signs nothing, the listing says the vault was changed, the refusal is in the
    /// trail; the row put back as it was, it signs again (nothing lost).
    @Test func aPasskeyRowEditedWithSqlite3SignsNothing() async throws {
        try HelperRig.require("/usr/bin/sqlite3", package: "sqlite3")
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let setup = try await Setup.make(rig: rig, serving: ["--policy", "biometry-current-set"])
        defer { Task { await setup.server.stop() } }
        let made = try await setup.register("alice")
        let key = "\(try #require(made["credential_id"] as? String)):\(try #require(made["public_key"] as? String))"
        try await rig.vault.add("other", "v", policy: "biometry-any")
        let database = rig.vault.rig.dataDirectory + "/touchgate.sqlite"
        func sqlite(_ statement: String) async throws -> String {
            let run = try await runProgram("/usr/bin/sqlite3", [database, statement])
            try #require(run.status == 0, "sqlite3 \(statement): \(run.stderr)")
            return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let original = try await sqlite("SELECT hex(policy) FROM vault_item WHERE name LIKE 'passkey-%'")
        try #require(!original.isEmpty)
        _ = try await sqlite("UPDATE vault_item SET policy = (SELECT policy FROM vault_item WHERE name = 'other') "
                             + "WHERE name LIKE 'passkey-%'")

        let refused = try await setup.client(["assert", "--rp", "example.org", "--public-key", key], presenting: ["whorl"])
        #expect(refused.status != 0 && Self.list(refused.stdout).isEmpty, "\(refused.stdout) \(refused.stderrLines)")
        let listed = try await rig.run(rig.bin + "/touchgate", ["passkey", "list", "--json"])
        #expect(listed.status == 6 && ["integrity", "data-error"].contains(listed.json?["error"] as? String ?? ""),
                "\(listed.status) \(listed.stdout)")
        #expect(try await rig.auditRecords(mentioning: "passkey sign-in at example.org as alice").isEmpty, "nothing signed")

        _ = try await sqlite("UPDATE vault_item SET policy = CAST(X'\(original)' AS TEXT) WHERE name LIKE 'passkey-%'")
        let again = try await setup.client(["assert", "--rp", "example.org", "--public-key", key], presenting: ["whorl"])
        #expect(again.status == 0 && Self.list(again.stdout).first?["verified"] as? Bool == true,
                "\(again.stdout) \(again.stderrLines); authenticator: \(setup.server.errorLines.suffix(6))")
    }
}
