import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The README's recipes (and the security-key one its ssh section points to in
/// docs/INTEGRATIONS.md) run as written, with the packages' paths, in the Debian root where
/// DebianPackageTests installed the packages: each in bash as the test's user, against the
/// touchgated started there by the documented command, with OpenSSH, git, gnupg and pass,
/// libsecret's secret-tool and dbus-daemon from the archive. A recipe line that cannot run
/// here is swapped for the one it stands for, and the test checks that the docs still say
/// it (as ReadmeRecipeTests does for a build installed in /usr/local).
extension DebianPackageTests {
    /// What the recipes need from the archive, each with a program the test runs from it.
    static let recipeTools = [("openssh-client", "/usr/bin/ssh"), ("openssh-server", "/usr/sbin/sshd"), ("git", "/usr/bin/git"),
                              ("gnupg", "/usr/bin/gpg"), ("pass", "/usr/bin/pass"), ("pinentry-tty", "/usr/bin/pinentry-tty"),
                              ("libsecret-tools", "/usr/bin/secret-tool"), ("dbus-daemon", "/usr/bin/dbus-daemon")]

    /// The recipes, by the test's user, whose vault is unlocked and whose whorl finger is
    /// enrolled in the running `daemon`; `finger` plays the prints.
    static func runRecipes(in root: DebianRoot, finger: VirtualImageFinger, daemon: DebianRoot.Daemon) async throws {
        // No service starts while the tools install (openssh-server's would listen on port 22
        // of this machine): sshd runs below on a loopback port of the test's own.
        try root.write("/usr/sbin/policy-rc.d", "#!/bin/sh\n# DebianPackageTests: no service starts in this root.\nexit 101\n")
        #expect(chmod(root.path("/usr/sbin/policy-rc.d"), 0o755) == 0)
        let installed = try await root.run(["/usr/bin/apt-get", "install", "-y", "-q", "--no-install-recommends"]
                                           + recipeTools.map(\.0), timeout: 600)
        try? FileManager.default.removeItem(atPath: root.path("/usr/sbin/policy-rc.d"))
        try #require(installed.status == 0, "apt-get install \(recipeTools.map(\.0).joined(separator: " ")): \(installed.stdout)\(installed.stderr)")
        for (package, tool) in recipeTools {
            try #require(root.exists(tool), "the recipes need \(tool) in the root: apt-get install \(package)")
        }
        // What a login session gives the user: XDG_RUNTIME_DIR (each script exports it).
        let owner = try #require(try root.passwdEntry(user), "no user \(user) in the root")
        try FileManager.default.createDirectory(atPath: root.path("/run/user/\(owner.uid)"), withIntermediateDirectories: true)
        #expect(chown(root.path("/run/user/\(owner.uid)"), owner.uid, UInt32.max) == 0 && chmod(root.path("/run/user/\(owner.uid)"), 0o700) == 0)

        let watch = FingerWatch(finger: finger, marker: root.path(DebianRoot.fingerSocket + ".waiting"))
        defer { watch.stop() }
        let recipes = Recipes(root: root, watch: watch, daemon: daemon)

        // The Secret Service first, with the vault's default reuse window: a program's first read
        // of an item takes a touch whatever the window. gnome-keyring is not installed (with
        // --no-install-recommends it still brings 89 packages, systemd and GTK among them), so
        // there is nothing to import and no old provider to stop; ReadmeRecipeTests runs both.
        let bus = FprintdRig.busConfiguration(socket: "/home/\(user)/session.socket", type: "session", activation: true)
        try root.write("/home/\(user)/session.conf", bus + "\n")
        let secretService = try await recipes.run(
            try Readme.shellBlocks(inSection: "Every day", subsection: "The desktop's keyring: browsers, editors and `git` through the Secret Service"),
            swapping: [
                ("touchgate import secret-service          # touch: gnome-keyring's items copied into the vault", ": no gnome-keyring here"),
                ("pkill -x gnome-keyring-d                 # or log out and in: the old provider lets the name go", ": nor its daemon"),
            ], prologue: [
                // A session bus that starts services from the user's own service files.
                "XDG_DATA_HOME=$HOME/.local/share XDG_DATA_DIRS=$HOME/no-system-data dbus-daemon "
                    + "--config-file=\"$HOME/session.conf\" --nofork >\"$HOME/bus.log\" 2>&1 &",
                "BUS_PID=$!",
                "trap 'kill $BUS_PID; cat \"$HOME/bus.log\" >&2' EXIT",
                "export DBUS_SESSION_BUS_ADDRESS=unix:path=$HOME/session.socket",
                "for _ in $(seq 100); do [ -S \"$HOME/session.socket\" ] && break; sleep 0.05; done",
            ], prints: ["whorl"])
        #expect(secretService.status == 0, "the Secret Service recipe: \(secretService.output)")
        let activation = (try? root.read("/home/\(user)/.local/share/dbus-1/services/org.freedesktop.secrets.service")) ?? ""
        #expect(activation.contains("\nExec=/usr/libexec/touchgate/touchgate-cli secret-service serve\n"),
                "D-Bus starts the installed program: \(activation)")
        #expect(secretService.output.split(separator: "\n").contains { $0.hasPrefix("hunter2") },
                "secret-tool looked the item up through Touchgate: \(secretService.output)")
        // The service's own log (bus.log, shown at the end) says the read was a touch's.
        #expect(secretService.touches >= 1 && secretService.output.contains("a touch let secret-tool (pid ")
                    && secretService.output.contains(") read 'Example'"),
                "secret-tool's first read took a touch: \(secretService.output)")

        // No reuse window from here: each release below must take its own touch, which the
        // test counts. (Changing it takes the passphrase, here the login password.)
        let strict = try await root.run(["/usr/bin/touchgate", "policy", "set", "--passphrase-fd", "0", "--session-timeout", "0",
                                         "--idle-timeout", "0"], as: user, stdin: password + "\n")
        try #require(strict.status == 0, "policy set: \(strict.stderr)")

        // git: the helper stores what git learned, and gives it back after a touch. There is
        // no server to clone from: the store that `git clone` makes is made by `git credential approve`.
        let git = try await recipes.run(try Readme.shellBlocks(inSection: "Every day", subsection: "git: credentials released by a touch"),
                                        swapping: [
            ("git clone https://git.example.org/team/repo.git          # type the password once: it is stored",
             "printf 'protocol=https\\nhost=git.example.org\\nusername=ana\\npassword=hunter2-git\\n\\n' | git credential approve"),
        ], prints: ["whorl"])
        #expect(git.status == 0 && git.output.contains("username=ana") && git.output.contains("password=hunter2-git"),
                "git credential fill: \(git.output)")
        #expect(git.touches >= 1, "the release took a touch: \(git.output)")

        // pass: a gpg key with a passphrase and a store that uses it, as a pass user has them;
        // the recipe's placeholder keygrip is the key's own. The key's passphrase comes on
        // standard input, read first by the set-up and then typed for `touchgate secret add`.
        let keyPassphrase = "a gpg key passphrase"
        let pass = try await recipes.run(try Readme.shellBlocks(inSection: "Every day", subsection: "pass and gpg: a passphrase released by a touch"),
                                         swapping: [
            ("touchgate pinentry map 0123456789ABCDEF0123456789ABCDEF01234567 gpg-main",
             "touchgate pinentry map \"$ENCRYPTION_KEYGRIP\" gpg-main"),
        ], prologue: [
            "trap 'gpgconf --kill gpg-agent' EXIT",
            "IFS= read -r KEY_PASSPHRASE",
            "gpg --batch --pinentry-mode loopback --passphrase-fd 3 --quick-gen-key 'Ana <ana@example.org>' future-default default never "
                + "3< <(printf '%s\\n' \"$KEY_PASSPHRASE\") 2>/dev/null",
            "unset KEY_PASSPHRASE",
            "ENCRYPTION_KEYGRIP=$(gpg --with-colons --with-keygrip --list-secret-keys | awk -F: '$1==\"ssb\"{s=1} s&&$1==\"grp\"{print $10; exit}')",
            "pass init ana@example.org >/dev/null",
            "printf 'pass-entry-value\\n' | pass insert -e web/example >/dev/null",
            "gpgconf --kill gpg-agent",
        ], stdin: keyPassphrase + "\n" + keyPassphrase + "\n", prints: ["whorl"])
        #expect(pass.status == 0 && pass.output.contains("pass-entry-value"), "pass show: \(pass.output)")
        #expect(pass.touches >= 1, "the key's passphrase took a touch: \(pass.output)")
        #expect(!pass.output.contains(keyPassphrase), "the key's passphrase is not shown")

        // ssh: the README's key signs a file, then logs in to an sshd in the root; then the
        // security key of docs/INTEGRATIONS.md logs in to it with verify-required. Each login
        // is made with whorl, then tried with a finger that is not enrolled (refused).
        let sshd = try await SSHServer.start(in: root)
        defer { sshd.stop() }
        let server = "-p \(sshd.port) -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o IdentitiesOnly=yes \(user)@127.0.0.1"
        let multiarch = try await runProgram("/usr/bin/dpkg-architecture", ["-qDEB_HOST_MULTIARCH"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let securityKey = try Self.shellBlock(in: "docs/INTEGRATIONS.md", containing: "ssh-keygen -t ed25519-sk -w ")
            .map { $0.replacingOccurrences(of: "/x86_64-linux-gnu/", with: "/\(multiarch)/") }
        let skLogin = try #require(securityKey.first { $0.hasPrefix("ssh -o SecurityKeyProvider=") && $0.contains(" server true") },
                                   "docs/INTEGRATIONS.md's security-key recipe has no `ssh … server true` line: \(securityKey)")
        // The same command to this server, without the line's comment.
        let skLoginHere = skLogin.components(separatedBy: " server true")[0] + " \(server) echo sk-logged-in"
        // Each run plays one print only (it repeats): a request that asks again after a
        // no-match gets the same finger, so which finger a login saw does not depend on how
        // many waits a request makes.
        let agent = ["eval \"$(touchgate agent --launch)\"; trap 'kill \"$TOUCHGATE_AGENT_PID\"' EXIT"]
        let ssh = try await recipes.run(try Readme.shellBlocks(inSection: "Every day", subsection: "ssh: a key that signs only for a finger"),
                                        swapping: [
            ("systemctl --user enable --now touchgate-agent.socket  # without systemd: eval \"$(touchgate agent --launch)\"",
             agent[0]),
            ("ssh-keygen -Y check-novalidate -n file -f ~/.ssh/work.pub -s notes.txt.sig < notes.txt   # Good \"file\" signature",
             "ssh-keygen -Y check-novalidate -n file -f ~/.ssh/work.pub -s notes.txt.sig < notes.txt\n"
                + "cp ~/.ssh/work.pub ~/.ssh/authorized_keys\n"
                + "ssh \(server) -i ~/.ssh/work.pub echo logged-in"),
        ], prints: ["whorl"])
        #expect(ssh.status == 0, "the ssh recipe: \(ssh.output)\n\(sshd.log)")
        #expect(ssh.output.contains("Good \"file\" signature"), "\(ssh.output)")
        #expect(ssh.output.components(separatedBy: "\n").contains("logged-in"), "ssh logs in after whorl: \(ssh.output)")
        #expect(ssh.touches >= 2, "a signature and a login: \(ssh.touches) touches")
        // `login` with arch, a finger that is not enrolled: whether it got in, and the output.
        // A verify first takes any image an earlier run's finger left queued on the virtual
        // reader's socket (the daemon keeps the reader open), so the login sees arch.
        func withArch(_ login: String, tag: String) async throws -> (refused: Bool, touches: Int, output: String) {
            let ran = try await recipes.run([
                "touchgate verify >/dev/null 2>&1 || true",
                "if \(login); then echo '== \(tag)in with arch'; else echo '== \(tag)refused with arch'; fi",
            ], prologue: agent, prints: ["arch"])
            return (ran.output.contains("== \(tag)refused with arch"), ran.touches, ran.output)
        }
        let wrongFinger = try await withArch("ssh \(server) -i ~/.ssh/work.pub echo logged-in", tag: "")
        #expect(wrongFinger.refused && wrongFinger.touches >= 1,
                "ssh with the vault's key is refused for a finger that is not enrolled: \(wrongFinger.output)")

        let sk = try await recipes.run(securityKey, swapping: [
            ("# on the server, in authorized_keys:  verify-required sk-ssh-ed25519@openssh.com AAAA… laptop",
             "echo \"verify-required $(cat ~/.ssh/id_laptop_sk.pub)\" > ~/.ssh/authorized_keys"),
            (skLogin, skLoginHere),
        ], prologue: agent, prints: ["whorl"])
        #expect(sk.status == 0 && sk.output.components(separatedBy: "\n").contains("sk-logged-in"),
                "ssh logs in with the security key after whorl: \(sk.output)\n\(sshd.log)")
        let skWrongFinger = try await withArch(skLoginHere, tag: "sk ")
        #expect(skWrongFinger.refused && skWrongFinger.touches >= 1,
                "a verify-required login is refused for a finger that is not enrolled: \(skWrongFinger.output)")

        // Back to the default window for the rest of the test.
        let relaxed = try await root.run(["/usr/bin/touchgate", "policy", "set", "--passphrase-fd", "0", "--session-timeout", "300",
                                          "--idle-timeout", "120"], as: user, stdin: password + "\n")
        #expect(relaxed.status == 0, "policy set: \(relaxed.stderr)")
    }

    /// The lines of the first `sh` block of `file` (in the checkout) with a line starting `text`.
    static func shellBlock(in file: String, containing text: String) throws -> [String] {
        let lines = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent(file), encoding: .utf8)
            .components(separatedBy: "\n")
        var block: [String]?, found: [String]?
        for line in lines where found == nil {
            if block == nil, line == "```sh" {
                block = []
            } else if let current = block, line == "```" {
                if current.contains(where: { $0.hasPrefix(text) }) { found = current }
                block = nil
            } else {
                block? += [line]
            }
        }
        return try #require(found, "\(file) has no sh block with a line starting `\(text)`")
    }

    /// Runs recipes as the test's user in bash, in the root.
    struct Recipes {
        let root: DebianRoot
        let watch: FingerWatch
        let daemon: DebianRoot.Daemon

        /// `blocks` (a recipe's sh blocks) after `prologue`, each of `swapping`'s lines (which
        /// must be there, once) replaced by its stand-in; `stdin` its standard input, `prints`
        /// the prints played, one per wait on the reader (the last repeating). Its output and
        /// how many prints were played.
        func run(_ blocks: [String], swapping: [(line: String, with: String)] = [], prologue: [String] = [],
                 stdin: String? = nil, prints: [String]) async throws -> (status: Int32, output: String, touches: Int) {
            var lines = blocks.joined(separator: "\n").components(separatedBy: "\n")
            for swap in swapping {
                let found = lines.indices.filter { lines[$0] == swap.line }
                try #require(found.count == 1, "the recipe no longer has the line `\(swap.line)`: \(lines)")
                lines[found[0]] = swap.with
            }
            let script = ["set -e", "export XDG_RUNTIME_DIR=/run/user/$(id -u)", "cd"] + prologue + ["echo '== recipe'"] + lines
            let file = "/home/\(DebianPackageTests.user)/recipe.sh"
            try root.write(file, script.joined(separator: "\n") + "\n")
            watch.play(prints)
            let ran = try await root.run(["/bin/bash", file], as: DebianPackageTests.user, stdin: stdin, timeout: 300)
            let output = ran.stdout + ran.stderr
            let recipe = output.range(of: "== recipe\n").map { String(output[$0.upperBound...]) } ?? output
            return (ran.status, ran.status == 0 ? recipe : recipe + "\n(touchgated:)\n" + daemon.log, watch.played)
        }
    }

    /// sshd in the root on a free loopback port, with the root's host key and no PAM.
    struct SSHServer {
        let port: Int
        let process: BackgroundProcess
        let logged: LineCollector
        var log: String { logged.lines.joined(separator: "\n") }
        func stop() { process.stop(signal: SIGTERM) }

        static func start(in root: DebianRoot) async throws -> SSHServer {
            let port = try freeLoopbackPort()
            try root.write("/etc/ssh/sshd_config_touchgate_test", """
                ListenAddress 127.0.0.1
                Port \(port)
                HostKey /etc/ssh/ssh_host_ed25519_key
                PidFile none
                UsePAM no
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                LogLevel VERBOSE

                """)
            // Where sshd separates privileges, which its service would make.
            try FileManager.default.createDirectory(atPath: root.path("/run/sshd"), withIntermediateDirectories: true)
            let log = LineCollector()
            let full = root.command(["/usr/sbin/sshd", "-D", "-e", "-f", "/etc/ssh/sshd_config_touchgate_test"])
            let process = try await BackgroundProcess.start(full[0], Array(full.dropFirst()), environment: DebianRoot.environment(home: "/root"),
                                                            output: .lines { log.append($0) }, error: .lines { log.append($0) })
            for _ in 0..<200 where !log.lines.contains(where: { $0.contains("Server listening") }) && process.isRunning {
                try await Task.sleep(for: .milliseconds(50))
            }
            try #require(log.lines.contains { $0.contains("Server listening") }, "sshd did not start: \(log.lines.joined(separator: "\n"))")
            return SSHServer(port: port, process: process, logged: log)
        }
    }
}

/// Plays the finger each time a program announces a wait on the virtual reader (a new
/// content of `socket.waiting`, which FingerprintKit writes beside the reader's socket), as
/// `virtual-finger --watch` does, from the test process: whichever program waits (the
/// daemon for the agent, the Secret Service, a helper) gets the next print.
final class FingerWatch: @unchecked Sendable {
    // @unchecked Sendable: `prints`, `count` and `seen` are only touched under `lock`; `task` is set once, in init.
    private let lock = NSLock()
    private let finger: VirtualImageFinger
    private var count = 0
    private var task: Task<Void, Never>?

    init(finger: VirtualImageFinger, marker: String) {
        self.finger = finger
        let initial = VirtualImageWait.announced(in: marker)
        task = Task { [weak self] in
            var seen = initial
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                guard let now = VirtualImageWait.announced(in: marker), now != seen else { continue }
                // A wait in another process than the last is on another listener.
                if now.process != seen?.process { finger.reconnect() }
                seen = now
                finger.presentNext()
                guard let self else { return }
                self.lock.withLock { self.count += 1 }
            }
        }
    }

    /// Plays `prints` from now on, one per wait (the last repeats), and counts anew.
    func play(_ prints: [String]) {
        finger.present(prints)
        lock.withLock { count = 0 }
    }

    /// How many prints were played since ``play(_:)``.
    var played: Int { lock.withLock { count } }

    func stop() { task?.cancel() }
}
