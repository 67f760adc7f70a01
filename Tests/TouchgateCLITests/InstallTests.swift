import Foundation
import Testing
import TouchgateTestSupport

/// Day one as a new user: `make install` puts the binary, a man page per command and the
/// shell completions in place, and TAB completes secret names, fingers and policies.
@Suite(.serialized, .timeLimit(.minutes(15)))
struct InstallTests {
    static let fingers = ["left-thumb", "left-index", "left-middle", "left-ring", "left-little",
                          "right-thumb", "right-index", "right-middle", "right-ring", "right-little"]
    static let policies = ["biometry-any", "biometry-current-set", "user-presence", "passphrase"]

    @Test func bashCompletesStoredSecretNamesFingersAndPolicies() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        try await vault.add("github-token", "v", policy: "passphrase")
        try await vault.add("aws/prod", "v", policy: "user-presence")
        // A name bash would expand inside `compgen -W` is not offered (and not expanded).
        try await vault.add("x$HOME", "v", policy: "passphrase")
        #expect(try await vault.run(["lock"]).status == 0, "names are completed while the vault is locked")

        let bash = try await BashCompletion(vault: vault)
        for command in ["get", "exec", "rm", "add"] {
            await #expect(try bash.complete("secret", command, "") == ["aws/prod", "github-token"], "secret \(command)")
        }
        await #expect(try bash.complete("secret", "get", "gi") == ["github-token"])
        await #expect(try bash.complete("secret", "get", "--json", "") == ["aws/prod", "github-token"])

        await #expect(try bash.complete("secret", "add", "new", "--policy", "") == Self.policies)
        await #expect(try bash.complete("secret", "add", "new", "--policy", "biometry-c") == ["biometry-current-set"])
        await #expect(try bash.complete("verify", "--finger", "") == Self.fingers + ["any"])
        await #expect(try bash.complete("enroll", "--finger", "") == Self.fingers)
        await #expect(try bash.complete("prints", "delete", "--finger", "right-i") == ["right-index"])

        // Every offered policy is one `secret add` accepts (exit 8, locked; not 64, usage).
        for policy in Self.policies {
            let added = try await vault.run(["secret", "add", "p", "--policy", policy], stdin: Data("v".utf8))
            #expect(added.status == 8, "--policy \(policy): \(added.stderrLines)")
        }
    }

    @Test func completingWithoutAStoreOffersNothingAndCreatesNothing() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        let bash = try await BashCompletion(vault: vault)
        await #expect(try bash.complete("secret", "get", "") == [])
        #expect(!FileManager.default.fileExists(atPath: vault.rig.dataDirectory), "a TAB created the data directory")
        // A store that cannot be read (another user's mode): nothing, and no error text.
        try await vault.initAndUnlock()
        try await vault.add("github-token", "v", policy: "passphrase")
        #expect(chmod(vault.rig.dataDirectory, 0o755) == 0)
        await #expect(try bash.complete("secret", "get", "") == [])
    }

    /// libpq and the twenty libraries it needs cost every command about 4 ms of start-up
    /// when linked (BENCHMARKS.md); fleet collection loads it only when it ships.
    @Test("touchgate-cli, touchgated and touchgate-collector do not load libpq at start-up; shipping loads it")
    func libpqIsLoadedOnlyToShip() async throws {
        let built = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
        for name in ["touchgate-cli", "touchgated", "touchgate-collector"] {
            let listed = try await runProgram("/usr/bin/ldd", [built.appendingPathComponent(name).path])
            #expect(listed.status == 0, "ldd \(name): \(listed.stderr)")
            #expect(listed.stdout.contains("libsodium") && !listed.stdout.contains("libpq"), "\(name) links:\n\(listed.stdout)")
        }
    }

    /// The front people run starts in about a millisecond because it maps no library at
    /// all: no Foundation, no libfprint and GLib, not even libc's shared object.
    @Test("touchgate, the front, is one static executable; touchgate-cli beside it links the rest")
    func frontIsStatic() async throws {
        let built = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
        let front = try await runProgram("/usr/bin/ldd", [built.appendingPathComponent("touchgate").path])
        #expect((front.stdout + front.stderr).contains("not a dynamic executable"), "ldd touchgate: \(front.stdout)")
        let cli = try await runProgram("/usr/bin/ldd", [built.appendingPathComponent("touchgate-cli").path])
        #expect(cli.stdout.contains("libfprint-2") && cli.stdout.contains("libFoundation"), "ldd touchgate-cli: \(cli.stdout)")
    }

    /// Through touchgated every command but the front's own is touchgate-client: the
    /// commands and the socket client, without the service under them.
    @Test("touchgate-client loads neither libfprint, GLib, SQLite (GRDB) nor libsodium; touchgate-cli does")
    func clientLinksNoService() async throws {
        let built = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
        let client = try await runProgram("/usr/bin/ldd", [built.appendingPathComponent("touchgate-client").path])
        #expect(client.status == 0, "ldd touchgate-client: \(client.stderr)")
        for library in ["libfprint-2", "libglib-2.0", "libgio-2.0", "libsqlite3", "libsodium", "libpwquality", "libz."] {
            #expect(!client.stdout.contains(library), "touchgate-client loads \(library):\n\(client.stdout)")
        }
        let cli = try await runProgram("/usr/bin/ldd", [built.appendingPathComponent("touchgate-cli").path])
        for library in ["libfprint-2", "libsqlite3", "libsodium"] {
            #expect(cli.stdout.contains(library), "touchgate-cli does not load \(library):\n\(cli.stdout)")
        }
    }

    @Test func makeInstallStagesBinaryManPagesAndCompletions() async throws {
        for tool in ["/usr/bin/make", "/usr/bin/man", "/usr/bin/groff"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool),
                         "this test needs make, man-db and groff-base: apt-get install make man-db groff-base")
        }
        let stage = try TemporaryDirectory("touchgate-install")
        defer { stage.remove() }
        let build = BuildProducts()

        let installed = try await build.make("install", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        try #require(installed.status == 0, "make install: \(installed.output)")
        let binary = stage.path("usr/bin/touchgate")
        #expect(FileManager.default.isExecutableFile(atPath: binary))
        // touchgate agent's user units, started from the binary just installed.
        let agentService = try String(contentsOfFile: stage.path("usr/lib/systemd/user/touchgate-agent.service"), encoding: .utf8)
        #expect(agentService.contains("\nExecStart=/usr/bin/touchgate agent\n"), "\(agentService)")
        let agentSocket = try String(contentsOfFile: stage.path("usr/lib/systemd/user/touchgate-agent.socket"), encoding: .utf8)
        #expect(agentSocket.contains("\nListenStream=%t/touchgate/ssh-agent.sock\n") && agentSocket.contains("\nSocketMode=0600\n"))
        // The Secret Service's user unit, which D-Bus starts once enabled.
        let keyring = try String(contentsOfFile: stage.path("usr/lib/systemd/user/touchgate-secret-service.service"),
                                 encoding: .utf8)
        #expect(keyring.contains("\nExecStart=/usr/bin/touchgate secret-service serve\n")
                && keyring.contains("\nBusName=org.freedesktop.secrets\n"), "\(keyring)")
        // The front finds every other command in ../libexec/touchgate/ (commandPaths runs it).
        #expect(FileManager.default.isExecutableFile(atPath: stage.path("usr/libexec/touchgate/touchgate-cli")))
        #expect(FileManager.default.isExecutableFile(atPath: stage.path("usr/libexec/touchgate/touchgate-client")))
        // A --help that names a helper's path names it where this install put it (the stage's
        // bin here, /usr/bin in the packages: DebianPackageTests).
        let pinentryHelp = try await runProgram(binary, ["pinentry", "--help"])
        let helpText = pinentryHelp.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        // As /proc/self/exe gives it: canonical (TMPDIR may end in a slash).
        let canonical = realpath(stage.url.path, nil).map { path in defer { free(path) }; return String(cString: path) }
        let helper = (canonical ?? stage.url.path) + "/usr/bin/pinentry-touchgate"
        #expect(helpText.contains("pinentry-program \(helper)"), "\(pinentryHelp.stdout)")

        // A page for every command and subcommand the binary has.
        let man1 = stage.path("usr/share/man/man1")
        let pages = Set(try FileManager.default.contentsOfDirectory(atPath: man1))
        let commands = try await commandPaths(of: binary)
        #expect(commands.count > 25, "\(commands)")
        #expect(commands.contains(["touchgate", "secret", "get"]))
        for command in commands {
            #expect(pages.contains(command.joined(separator: ".") + ".1"), "no man page for \(command.joined(separator: " "))")
        }
        // And one for each helper name, pointing at its command's page.
        let helpers = ["touchgate-askpass": "touchgate askpass", "git-credential-touchgate": "touchgate git-credential",
                       "pinentry-touchgate": "touchgate pinentry"]
        #expect(pages.count == commands.count + helpers.count, "pages: \(pages.sorted())")
        for (helper, target) in helpers {
            let shown = try await runProgram("/usr/bin/man", ["-P", "cat", helper],
                                             environment: ["MANPATH": stage.path("usr/share/man"), "MANWIDTH": "80", "LANG": "C.UTF-8"])
            #expect(shown.status == 0 && shown.stderr.isEmpty && shown.stdout.contains(target),
                    "man \(helper): \(shown.stdout.prefix(200)) \(shown.stderr)")
            // With the FILES and EXAMPLES of man/extra/touchgate.HELPER.mdoc.
            #expect(shown.stdout.contains("\nFILES\n") && shown.stdout.contains("\nEXAMPLES\n"), "man \(helper): \(shown.stdout)")
        }

        // `man -l` renders the top page without complaint; it points at the others.
        let rendered = try await runProgram("/usr/bin/man", ["-l", "-P", "cat", man1 + "/touchgate.1"],
                               environment: ["MANWIDTH": "80", "LANG": "C.UTF-8"])
        #expect(rendered.status == 0)
        #expect(rendered.stderr.isEmpty, "man or groff warned: \(rendered.stderr)")
        #expect(rendered.stdout.contains("touchgate — Fingerprint-gated secrets for Linux."), "\(rendered.stdout)")
        #expect(rendered.stdout.contains("touchgate.secret(1)"))
        // The sections the generator does not write, from man/extra/touchgate.mdoc, in mdoc's order.
        let sections = ["ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"].map { rendered.stdout.range(of: "\n" + $0 + "\n") }
        #expect(sections.allSatisfy { $0 != nil } && zip(sections, sections.dropFirst()).allSatisfy { $0!.lowerBound < $1!.lowerBound },
                "\(rendered.stdout)")
        #expect(rendered.stdout.contains("TOUCHGATE_SOCKET") && rendered.stdout.contains("Locked out after too many failed touches")
                && rendered.stdout.contains("touchgate secret get github-token"), "\(rendered.stdout)")
        let secretGet = try await runProgram("/usr/bin/man", ["-l", "-P", "cat", man1 + "/touchgate.secret.get.1"],
                                environment: ["MANWIDTH": "80", "LANG": "C.UTF-8"])
        #expect(secretGet.stdout.contains("--passphrase-fd"), "\(secretGet.stdout)")

        let completions = [
            "usr/share/bash-completion/completions/touchgate": "complete -o filenames -F _touchgate touchgate",
            "usr/share/zsh/site-functions/_touchgate": "#compdef touchgate",
            "usr/share/fish/vendor_completions.d/touchgate.fish": "complete -c 'touchgate'",
        ]
        for (path, marker) in completions {
            let text = try String(contentsOfFile: stage.path(path), encoding: .utf8)
            #expect(text.contains(marker), "\(path) is not touchgate's completion script")
        }

        let udev = try await build.make("install-udev", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        try #require(udev.status == 0, "make install-udev: \(udev.output)")
        for file in ["hwdb.d/60-touchgate-fingerprint-reader.hwdb", "rules.d/70-touchgate-fingerprint-reader.rules"] {
            let staged = try Data(contentsOf: stage.url.appendingPathComponent("etc/udev/" + file))
            let source = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent("udev/" + file.split(separator: "/")[1]))
            #expect(staged == source, "\(file)")
        }
        // The same readers as AppStream modaliases, one per hwdb match, for software centres.
        let hwdb = try String(contentsOfFile: Fixtures.packageRoot.appendingPathComponent("udev/60-touchgate-fingerprint-reader.hwdb").path,
                              encoding: .utf8)
        let readers = hwdb.split(separator: "\n").filter { $0.hasPrefix("usb:v") }.map { $0.dropLast() + "d*" }
        let metainfo = try String(contentsOfFile: stage.path("usr/share/metainfo/io.github.touchgate.touchgate.metainfo.xml"),
                                  encoding: .utf8)
        let modaliases = metainfo.split(separator: "\n").filter { $0.contains("<modalias>") }
            .map { $0.replacingOccurrences(of: "<modalias>", with: "").replacingOccurrences(of: "</modalias>", with: "")
                .trimmingCharacters(in: .whitespaces) }
        #expect(!readers.isEmpty && modaliases == readers.map(String.init), "metainfo modaliases: \(modaliases.prefix(3))…")
        let parsed = try await runProgram("/usr/bin/python3", ["-c", "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])",
                                                               stage.path("usr/share/metainfo/io.github.touchgate.touchgate.metainfo.xml")])
        #expect(parsed.status == 0, "the metainfo is not well-formed XML: \(parsed.stderr)")

        for target in ["uninstall", "uninstall-udev"] {
            let removed = try await build.make(target, "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
            #expect(removed.status == 0, "make \(target): \(removed.output)")
        }
        let left = FileManager.default.enumerator(atPath: stage.url.path)?.compactMap { $0 as? String }
            .filter { !isDirectory(stage.path($0)) } ?? []
        #expect(left.isEmpty, "left after uninstall: \(left)")
    }

    @Test func makeInstallDaemonStagesTheDaemonItsUnitsUserAndUdevRule() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/make"), "this test needs make: apt-get install make")
        let stage = try TemporaryDirectory("touchgate-install-daemon")
        defer { stage.remove() }
        let build = BuildProducts()

        let userBefore = getpwnam("touchgated") != nil
        let installed = try await build.make("install-daemon", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        try #require(installed.status == 0, "make install-daemon: \(installed.output)")
        // Staged only: the running system got no user (systemd-sysusers runs without DESTDIR only).
        #expect((getpwnam("touchgated") != nil) == userBefore, "make install-daemon with DESTDIR created a user")

        let expected: [(path: String, mode: mode_t, source: String?)] = [
            // touchgate-cli started as touchgated (symbolic links), for the unit and the administrator.
            ("usr/libexec/touchgated", 0o755, nil),
            ("usr/sbin/touchgated", 0o755, nil),
            ("usr/lib/systemd/system/touchgated.service", 0o644, nil),
            ("usr/lib/systemd/system/touchgated.socket", 0o644, "systemd/touchgated.socket"),
            ("usr/lib/sysusers.d/touchgated.conf", 0o644, "systemd/touchgated.sysusers"),
            ("etc/udev/hwdb.d/60-touchgate-fingerprint-reader.hwdb", 0o644, "udev/60-touchgate-fingerprint-reader.hwdb"),
            ("etc/udev/rules.d/71-touchgated-fingerprint-reader.rules", 0o644, "udev/71-touchgated-fingerprint-reader.rules"),
        ]
        for file in expected {
            var info = stat()
            #expect(stat(stage.path(file.path), &info) == 0 && info.st_mode & 0o7777 == file.mode,
                    "\(file.path): mode \(String(info.st_mode & 0o7777, radix: 8))")
            if let source = file.source {
                let staged = try Data(contentsOf: stage.url.appendingPathComponent(file.path))
                #expect(staged == (try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent(source))), "\(file.path)")
            }
        }
        // The installed binary is the daemon, and the service starts it where it was put.
        let help = try await runProgram(stage.path("usr/libexec/touchgated"), ["--help"])
        #expect(help.status == 0 && help.stdout.contains("USAGE: touchgated") && help.stdout.contains("--requests-per-minute"),
                "\(help.stdout)\(help.stderr)")
        let service = try String(contentsOfFile: stage.path("usr/lib/systemd/system/touchgated.service"), encoding: .utf8)
        let execStart = service.split(separator: "\n").filter { $0.hasPrefix("ExecStart=") }
        #expect(execStart == ["ExecStart=/usr/libexec/touchgated"], "\(execStart)")
        let sysusers = try String(contentsOfFile: stage.path("usr/lib/sysusers.d/touchgated.conf"), encoding: .utf8)
        #expect(sysusers.split(separator: "\n").contains { $0.hasPrefix("u touchgated ") }, "\(sysusers)")

        // Its manual page, from the same plugin run as touchgate's.
        let page = try await runProgram("/usr/bin/man", ["-l", "-P", "cat", stage.path("usr/share/man/man1/touchgated.1")],
                                        environment: ["MANWIDTH": "80", "LANG": "C.UTF-8"])
        #expect(page.status == 0 && page.stderr.isEmpty && page.stdout.contains("--allow-root")
                && page.stdout.contains("Without systemd"), "\(page.stdout.prefix(300)) \(page.stderr)")
        for section in ["ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES"] {
            #expect(page.stdout.contains("\n\(section)\n"), "touchgated.1 has no \(section): \(page.stdout)")
        }

        // The PAM module's page, section 8, with the module.
        let pam = try await build.make("install-pam", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        try #require(pam.status == 0, "make install-pam: \(pam.output)")
        let pamPage = try await runProgram("/usr/bin/man", ["-l", "-P", "cat", stage.path("usr/share/man/man8/pam_touchgate.8")],
                                           environment: ["MANWIDTH": "80", "LANG": "C.UTF-8"])
        #expect(pamPage.status == 0 && pamPage.stderr.isEmpty && pamPage.stdout.contains("PAM_AUTHINFO_UNAVAIL")
                && pamPage.stdout.contains("unlock-with-password"), "\(pamPage.stdout.prefix(300)) \(pamPage.stderr)")
        let pamRemoved = try await build.make("uninstall-pam", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        #expect(pamRemoved.status == 0, "make uninstall-pam: \(pamRemoved.output)")

        // The fleet's auditor tool, with a page per subcommand, and nothing left after uninstall-collector.
        let collector = try await build.make("install-collector", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        try #require(collector.status == 0, "make install-collector: \(collector.output)")
        let collectorHelp = try await runProgram(stage.path("usr/bin/touchgate-collector"), ["--help"])
        #expect(collectorHelp.status == 0 && collectorHelp.stdout.contains("USAGE: touchgate-collector"), "\(collectorHelp.stdout)")
        for name in ["touchgate-collector", "touchgate-collector.verify", "touchgate-collector.query"] {
            let collectorPage = try await runProgram("/usr/bin/man", ["-l", "-P", "cat", stage.path("usr/share/man/man1/\(name).1")],
                                                     environment: ["MANWIDTH": "80", "LANG": "C.UTF-8"])
            #expect(collectorPage.status == 0 && collectorPage.stderr.isEmpty && collectorPage.stdout.contains("touchgate-collector"),
                    "\(name): \(collectorPage.stdout.prefix(300)) \(collectorPage.stderr)")
            if name == "touchgate-collector" {
                #expect(["ENVIRONMENT", "EXIT STATUS", "EXAMPLES"].allSatisfy { collectorPage.stdout.contains("\n\($0)\n") }
                        && collectorPage.stdout.contains("TOUCHGATE_COLLECTOR_DATABASE"), "\(collectorPage.stdout)")
            }
        }
        let collectorRemoved = try await build.make("uninstall-collector", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        #expect(collectorRemoved.status == 0, "make uninstall-collector: \(collectorRemoved.output)")

        // The CLI's install is separate: install-daemon put no touchgate binary in place.
        #expect(!FileManager.default.fileExists(atPath: stage.path("usr/bin/touchgate")))

        // The hwdb is shared with install-udev's rule: it stays while that rule is there.
        let udev = try await build.make("install-udev", "DESTDIR=\(stage.url.path)")
        try #require(udev.status == 0, "make install-udev: \(udev.output)")
        let removed = try await build.make("uninstall-daemon", "DESTDIR=\(stage.url.path)", "PREFIX=/usr")
        #expect(removed.status == 0, "make uninstall-daemon: \(removed.output)")
        #expect(FileManager.default.fileExists(atPath: stage.path("etc/udev/hwdb.d/60-touchgate-fingerprint-reader.hwdb")))
        let udevRemoved = try await build.make("uninstall-udev", "DESTDIR=\(stage.url.path)")
        #expect(udevRemoved.status == 0, "make uninstall-udev: \(udevRemoved.output)")
        let left = FileManager.default.enumerator(atPath: stage.url.path)?.compactMap { $0 as? String }
            .filter { !isDirectory(stage.path($0)) } ?? []
        #expect(left.isEmpty, "left after uninstall-daemon and uninstall-udev: \(left)")
    }

    /// Every command path (`["touchgate", "secret", "get"]`, …) in the binary's own description.
    private func commandPaths(of binary: String) async throws -> [[String]] {
        let dump = try await runProgram(binary, ["--experimental-dump-help"])
        try #require(dump.status == 0, "\(dump.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        func walk(_ command: [String: Any], _ path: [String]) -> [[String]] {
            guard let name = command["commandName"] as? String else { return [] }
            let here = path + [name]
            let children = command["subcommands"] as? [[String: Any]] ?? []
            return [here] + children.flatMap { walk($0, here) }
        }
        return walk(try #require(root["command"] as? [String: Any]), [])
    }
}

/// The generated bash completion script, sourced in a real bash, asked what TAB offers.
private struct BashCompletion {
    let script: String
    let helper: String
    let environment: [String: String]

    init(vault: VaultRig) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/bin/bash"), "this test needs bash: apt-get install bash")
        let binary = CLIProcess.binary
        let generated = try await runProgram(binary, ["--generate-completion-script", "bash"])
        try #require(generated.status == 0, "\(generated.stderr)")
        script = vault.home.path("touchgate.bash")
        try generated.stdout.write(toFile: script, atomically: true, encoding: .utf8)
        // What bash sets before it calls a completion function (`complete -F`).
        helper = vault.home.path("complete.sh")
        try """
            source "$1"; shift
            COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            COMPREPLY=()
            _touchgate touchgate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """.write(toFile: helper, atomically: true, encoding: .utf8)
        var environment = vault.rig.process.environment
        environment["PATH"] = URL(fileURLWithPath: binary).deletingLastPathComponent().path + ":/usr/bin:/bin"
        self.environment = environment
    }

    /// What TAB offers after `touchgate words…`, the last word being the one completed.
    func complete(_ words: String...) async throws -> [String] {
        let result = try await runProgram("/bin/bash", ["--norc", "--noprofile", helper, script, "touchgate"] + words,
                             environment: environment, inheriting: false)
        #expect(result.status == 0 && result.stderr.isEmpty, "bash: \(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }
}

/// The products directory this test runs from, and `make` over it with the same configuration.
private struct BuildProducts {
    /// `.build` (or the `--scratch-path` the tests were built with).
    let scratch: String
    /// `debug` or `release`.
    let configuration: String

    init() {
        let products = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
        configuration = products.lastPathComponent
        scratch = products.deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// `make TARGET…` in the package root with the built products: the binary is not built
    /// again (`-o`), the man pages and completions are always made anew (`-B`); a run that
    /// takes over 10 minutes is ended (status 124). The `swift test` running this holds the
    /// build directory's lock for as long as the tests run, and builds nothing meanwhile:
    /// the plugin's own build, of products that are up to date, goes on past the lock.
    func make(_ arguments: String...) async throws -> (status: Int32, output: String) {
        // timeout(1) ends make and the swift processes it started (one process group).
        let result = try await runProgram("/usr/bin/timeout", ["600", "make", "-C", Fixtures.packageRoot.path, "-B",
                                                  "-o", "\(scratch)/\(configuration)/touchgate",
                                                  "-o", "\(scratch)/\(configuration)/touchgate-cli",
                                                  "-o", "\(scratch)/\(configuration)/touchgate-client",
                                                  "-o", "\(scratch)/\(configuration)/touchgated",
                                                  "-o", "\(scratch)/\(configuration)/touchgate-collector",
                                                  "SCRATCH=\(scratch)", "CONFIGURATION=\(configuration)",
                                                  "SWIFTPM_FLAGS=--ignore-lock"] + arguments,
                             timeout: 660)
        return (result.status, result.stdout + result.stderr)
    }
}

private func isDirectory(_ path: String) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
}

