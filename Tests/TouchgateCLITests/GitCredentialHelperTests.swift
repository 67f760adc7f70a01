import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `git-credential-touchgate` under the real git: clone and push over HTTP from a git
/// server on loopback that demands Basic authentication (git http-backend behind a small
/// Python server the test starts on a free port).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct GitCredentialHelperTests {
    /// The server: a bare repository with one commit, served at http://127.0.0.1:PORT/repo.git.
    struct Server {
        let program: BackgroundProgram
        let url: String
        let root: String
        let passwordFile: String

        static func start(rig: HelperRig, password: String) async throws -> Server {
            try HelperRig.require("/usr/bin/git", package: "git")
            try HelperRig.require("/usr/lib/git-core/git-http-backend", package: "git")
            try HelperRig.require("/usr/bin/python3", package: "python3")
            let root = rig.home.path("served")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let made = try await rig.run("/usr/bin/git", ["init", "-q", "--bare", "--initial-branch=main", root + "/repo.git"])
            try #require(made.status == 0, "git init: \(made.stderrLines)")
            let passwordFile = rig.home.path("server-password")
            try Data(password.utf8).write(to: URL(fileURLWithPath: passwordFile))
            let script = rig.home.path("git-server.py")
            try Data(GitCredentialHelperTests.serverScript.utf8).write(to: URL(fileURLWithPath: script))
            let program = try await BackgroundProgram("/usr/bin/python3", [script, root, "alice", passwordFile],
                                                environment: rig.environment, finger: nil)
            let port = try #require(await program.firstOutputLine().flatMap { Int($0) }, "the git server did not start")
            return Server(program: program, url: "http://127.0.0.1:\(port)/repo.git", root: root, passwordFile: passwordFile)
        }
    }

    /// git's own settings for the test: the helper (with its store policy), an identity.
    static func gitEnvironment(_ rig: HelperRig, askpass: String?) throws -> [String: String] {
        let config = rig.home.path("gitconfig")
        try Data("""
            [credential]
            \thelper = touchgate --policy biometry-any
            [user]
            \tname = Touchgate Test
            \temail = test@example.invalid
            [init]
            \tdefaultBranch = main
            """.utf8).write(to: URL(fileURLWithPath: config))
        var environment = ["GIT_CONFIG_GLOBAL": config, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"]
        environment["GIT_ASKPASS"] = askpass ?? "/bin/false"
        return environment
    }

    @Test func cloneAndPushWithThePasswordReleasedByATouch() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        try await rig.vault.initAndUnlock()
        try await rig.vault.enroll("whorl")
        let server = try await Server.start(rig: rig, password: "first-password")

        // First contact: nothing stored, so git asks (its GIT_ASKPASS here), then asks the helper to store.
        let typed = rig.home.path("typed.sh")
        try Data("#!/bin/sh\ncase \"$1\" in Username*) echo alice;; *) cat '\(server.passwordFile)';; esac\n".utf8)
            .write(to: URL(fileURLWithPath: typed))
        chmod(typed, 0o755)
        let first = try await rig.run("/usr/bin/git", ["clone", "-q", server.url, rig.home.path("first")],
                                      extra: try Self.gitEnvironment(rig, askpass: typed))
        #expect(first.status == 0, "\(first.stderrLines)")
        #expect(first.fingerPrompts == 0, "nothing was stored yet, so no touch was asked for")
        let port = try #require(URL(string: server.url)?.port)
        let item = "git:http://127.0.0.1:\(port)"
        let listed = try await rig.vault.run(["secret", "list", "--json"])
        #expect(listed.stdout.contains(item), "git stored what it learned: \(listed.stdout)")
        #expect(listed.stdout.contains("biometry-any"), "under the policy given to the helper: \(listed.stdout)")

        // Now only the helper knows the password: a clone releases it with a touch.
        let withoutAskpass = try Self.gitEnvironment(rig, askpass: nil)
        let second = try await rig.run("/usr/bin/git", ["clone", "-q", server.url, rig.home.path("second")],
                                       extra: withoutAskpass, presenting: ["whorl"])
        #expect(second.status == 0, "\(second.stderrLines)")
        #expect(second.fingerPrompts == 1, "\(second.stderrLines)")

        // A push from that clone (inside the reuse window: no second touch needed).
        let clone = rig.home.path("second")
        try Data("pushed through touchgate\n".utf8).write(to: URL(fileURLWithPath: clone + "/README"))
        for command in [["add", "README"], ["commit", "-q", "-m", "pushed with a touch"]] {
            let done = try await rig.run("/usr/bin/git", ["-C", clone] + command, extra: withoutAskpass)
            try #require(done.status == 0, "git \(command): \(done.stderrLines)")
        }
        let pushed = try await rig.run("/usr/bin/git", ["-C", clone, "push", "-q", "origin", "HEAD:main"],
                                       extra: withoutAskpass, presenting: ["whorl"])
        #expect(pushed.status == 0, "\(pushed.stderrLines)")
        let log = try await rig.run("/usr/bin/git", ["--git-dir", server.root + "/repo.git", "log", "--format=%s", "main"])
        #expect(log.stdout.contains("pushed with a touch"), "the server has the pushed commit: \(log.stdout)")

        // A finger that does not match releases nothing: the clone fails.
        _ = try await rig.vault.run(["lock"])
        _ = try await rig.vault.withPassphrase(["unlock"])
        let refused = try await rig.run("/usr/bin/git", ["clone", "-q", server.url, rig.home.path("refused")],
                                        extra: withoutAskpass, presenting: ["arch"])
        #expect(refused.status != 0)
        #expect(refused.fingerPrompts == 1)

        // The server's password changes: git rejects the stored one and the helper erases it.
        try Data("second-password".utf8).write(to: URL(fileURLWithPath: server.passwordFile))
        let rejected = try await rig.run("/usr/bin/git", ["clone", "-q", server.url, rig.home.path("rejected")],
                                         extra: withoutAskpass, presenting: ["whorl"])
        #expect(rejected.status != 0)
        let after = try await rig.vault.run(["secret", "list", "--json"])
        #expect(!after.stdout.contains(item), "erase removed the rejected credential: \(after.stdout)")

        // Every step is in the trail with git as the requester; the password never is.
        let records = try await rig.auditRecords(mentioning: "git-credential-touchgate for pid ")
        let events = records.map { "\($0["event"] as? String ?? "") \($0["outcome"] as? String ?? "")" }
        #expect(events.contains("item.write success"), "\(events)")
        #expect(events.contains("item.read success"), "\(events)")
        #expect(events.contains("item.read failure"), "\(events)")
        #expect(events.contains("item.delete success"), "\(events)")
        #expect(records.allSatisfy { ($0["reason"] as? String ?? "").contains("git-remote-http") }, "\(records)")
        let trail = try await rig.vault.run(["audit", "export"]).stdout
        #expect(!trail.contains("first-password"))
        await server.program.stop()
    }

    @Test func unknownOperationsAndAttributesAreIgnored() async throws {
        let rig = try HelperRig()
        defer { rig.home.remove() }
        let helper = rig.bin + "/git-credential-touchgate"
        let unknown = try await rig.run(helper, ["capability"], stdin: Data("version 0\n".utf8))
        #expect(unknown.status == 0 && unknown.stdout.isEmpty, "\(unknown.stderrLines)")
        // A request with attributes the helper does not know, for a URL it holds nothing for.
        try await rig.vault.initAndUnlock()
        let get = try await rig.run(helper, ["get"], stdin: Data("protocol=https\nhost=example.invalid\nwwwauth[]=Basic realm=x\ncapability[]=authtype\n\n".utf8))
        #expect(get.status == 0, "\(get.stderrLines)")
        #expect(get.stdout.isEmpty, "nothing stored, nothing printed, no touch asked: \(get.stdout)")
        #expect(get.fingerPrompts == 0)
    }

    /// git http-backend behind Basic authentication; prints its port, serves until killed.
    static let serverScript = """
        import base64, http.server, os, subprocess, sys

        root, user, password_file = sys.argv[1], sys.argv[2], sys.argv[3]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.serve_git()

            def do_POST(self):
                self.serve_git()

            def log_message(self, *args):
                pass

            def serve_git(self):
                with open(password_file) as f:
                    password = f.read().strip()
                expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="touchgate test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                           QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER=user,
                           REMOTE_ADDR="127.0.0.1", CONTENT_TYPE=self.headers.get("Content-Type", ""),
                           CONTENT_LENGTH=str(len(body)), HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                           GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
                separator = b"\\r\\n\\r\\n" if b"\\r\\n\\r\\n" in out else b"\\n\\n"
                head, _, rest = out.partition(separator)
                status, headers = 200, []
                for line in head.decode().splitlines():
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(rest)))
                self.end_headers()
                self.wfile.write(rest)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """
}
