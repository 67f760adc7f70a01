import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `make deb`'s packages on a clean Debian system: a root made by debootstrap from the archive
/// this machine's own apt sources name, where apt installs them with the dependencies
/// dpkg-shlibdeps computed, pam-auth-update enables their profile, touchgated serves a
/// virtual reader, and pamtester authenticates through the real common-auth stack: with a
/// touch, then with the password once the daemon is gone; the README's other recipes (the
/// Secret Service, git, pass, ssh with the vault's key and with a security key) run as
/// written against them, and every path of ours the docs give is where they put it. Then
/// they are reinstalled (the maintainer scripts' upgrade path) and removed, and the password
/// still works.
///
/// Slow: building the packages is a release build (about 10 minutes on two cores), and the
/// first debootstrap about 3 (its root is kept in .build-deb/ for the next run). It runs
/// after the rest of the suite in scripts/test.sh, alone, so that it slows no timed test.
@Suite(.serialized, .timeLimit(.minutes(60)))
struct DebianPackageTests {
    static let user = "ana"
    static let password = "login-password-of-ana"

    @Test("make deb without network; lintian; apt installs the packages on a clean Debian root; the docs' paths are installed; the touch profile authenticates with a finger, the password without the daemon; the README's recipes run with the packaged paths; remove keeps the password login")
    func installEnableAuthenticateRemove() async throws {
        let work = try TemporaryDirectory("touchgate-deb")
        defer { work.remove() }
        let packages = try await Self.buildPackages(into: work.path("dist"))
        #expect(Set(packages.map { $0.components(separatedBy: "_")[0] })
                == ["touchgate", "touchgated", "libpam-touchgate", "touchgate-collector"], "\(packages)")
        try await Self.lintianIsClean(packages.map { work.path("dist/" + $0) })
        // One copy of the Swift runtime and of the code per install: what a machine with the
        // daemon installs weighs at most 60 MiB (215 MiB with a runtime in each program and ICU's
        // data in each), the auditor's collector at most 40 MiB, without the reader's libraries.
        var installedKiB: [String: Int] = [:]
        for package in packages {
            let field = try await runProgram("/usr/bin/dpkg-deb", ["-f", work.path("dist/" + package), "Package", "Installed-Size"])
            let values = field.stdout.split(separator: "\n").compactMap { $0.split(separator: ":", maxSplits: 1).last }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if values.count == 2, let size = Int(values[1]) { installedKiB[values[0]] = size }
        }
        let machine = ["touchgate", "touchgated", "libpam-touchgate"].compactMap { installedKiB[$0] }.reduce(0, +)
        #expect(installedKiB.count == 4 && machine <= 60 * 1024, "installed sizes in KiB: \(installedKiB)")
        #expect((installedKiB["touchgate-collector"] ?? .max) <= 40 * 1024, "installed sizes in KiB: \(installedKiB)")
        // An auditor's machine needs no reader: the collector's dependencies, as dpkg-shlibdeps
        // computed them from what the program links, name none of the reader's libraries.
        let collector = try #require(packages.first { $0.hasPrefix("touchgate-collector_") })
        let depends = try await runProgram("/usr/bin/dpkg-deb", ["-f", work.path("dist/" + collector), "Depends"]).stdout
        for library in ["libfprint", "libglib", "libgusb", "libpwquality", "libgudev"] {
            #expect(!depends.contains(library), "touchgate-collector depends on \(library): \(depends)")
        }
        #expect(depends.contains("libpq5") && depends.contains("libsodium"), "touchgate-collector's dependencies: \(depends)")

        let root = try await DebianRoot.make(at: work.path("root"))
        // apt resolves every dependency from the archive: what dpkg-shlibdeps computed must be there.
        try FileManager.default.createDirectory(atPath: root.path("/tmp/debs"), withIntermediateDirectories: true)
        for package in packages {
            try FileManager.default.copyItem(atPath: work.path("dist/" + package), toPath: root.path("/tmp/debs/" + package))
        }
        let installed = try await root.run(["/usr/bin/apt-get", "install", "-y", "-q", "--no-install-recommends"]
                                           + packages.map { "/tmp/debs/" + $0 }, timeout: 600)
        try #require(installed.status == 0, "apt-get install: \(installed.stdout)\(installed.stderr)")

        // What the packages put in place, with nothing from the Swift toolchain needed.
        let version = try await root.run(["/usr/bin/touchgate", "--version"])
        let debVersion = packages[0].components(separatedBy: "_")[1]
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == debVersion, "\(version)")
        for program in ["/usr/sbin/touchgated", "/usr/bin/touchgate-collector"] {
            let answered = try await root.run([program, "--version"])
            #expect(answered.status == 0 && answered.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == debVersion,
                    "\(program) --version: \(answered)")
        }
        // touchgate-client and touchgated (in libexec for the unit, in sbin for the administrator)
        // are names of touchgate-cli.
        for name in ["/usr/libexec/touchgate/touchgate-client", "/usr/libexec/touchgated", "/usr/sbin/touchgated"] {
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: root.path(name))
            let resolved = target.map { URL(fileURLWithPath: name).deletingLastPathComponent().appendingPathComponent($0).standardized.path }
            #expect(resolved == "/usr/libexec/touchgate/touchgate-cli",
                    "\(name) links to \(target ?? "nothing")")
        }
        let daemonHelp = try await root.run(["/usr/sbin/touchgated", "--help"])
        #expect(daemonHelp.status == 0 && daemonHelp.stdout.contains("system daemon"), "touchgated --help: \(daemonHelp.stdout)")
        for binary in ["/usr/libexec/touchgate/touchgate-cli", "/usr/libexec/touchgate/touchgate-client",
                       "/usr/libexec/touchgated", "/usr/bin/touchgate-collector"] {
            let linked = try await root.run(["/usr/bin/ldd", binary])
            #expect(linked.status == 0 && !linked.stdout.contains("not found") && !linked.stdout.contains("libswift"),
                    "ldd \(binary): \(linked.stdout)")
        }
        #expect(root.exists("/usr/share/pam-configs/touchgate") && root.exists("/usr/share/pam-configs/touchgate-unlock"))
        // touchgate passkey enable, as root: the files it writes, which the docs give, are in place
        // (in this root no systemd, udev or uhid runs: it says so and goes on).
        let passkeyFiles = ["/etc/modules-load.d/touchgate-passkey.conf", "/etc/udev/rules.d/69-touchgate-uhid.rules",
                            "/etc/systemd/system/touchgated.service.d/touchgate-passkey.conf"]
        let passkeysEnabled = try await root.run(["/usr/bin/touchgate", "passkey", "enable", "--json"])
        #expect(passkeysEnabled.status == 0 && passkeysEnabled.stdout.contains(#""enabled":true"#), "passkey enable: \(passkeysEnabled)")
        for file in passkeyFiles { #expect(root.exists(file), "passkey enable did not write \(file)") }
        #expect((try? root.read("/etc/udev/rules.d/69-touchgate-uhid.rules"))?.contains(#"GROUP="touchgated", MODE="0660""#) == true)
        // Every path of ours that the README, the docs, the man pages and the installed units
        // give is where the packages put it (not /usr/local, where `make install` does).
        for (path, places) in try await Self.documentedPaths(in: root).sorted(by: { $0.key < $1.key })
        where !Self.madeByTheUser.contains(path) {
            #expect(root.exists(path), "\(path), given in \(places.joined(separator: ", ")), is not installed")
        }
        let disabled = try await root.run(["/usr/bin/touchgate", "passkey", "disable"])
        #expect(disabled.status == 0 && passkeyFiles.allSatisfy { !root.exists($0) }, "passkey disable: \(disabled)")
        // The packages in a VM with /dev/uhid: touchgated's passkey devices, end to end.
        try await PasskeyDeviceTests.inVM("vm-passkey-daemon.sh",
                                          expecting: PasskeyDeviceTests.packagedChecks + PasskeyDeviceTests.daemonChecks,
                                          debs: work.path("dist"))
        // A --help that names the program's own path names the installed one.
        let pinentryHelp = try await root.run(["/usr/bin/touchgate", "pinentry", "--help"])
        #expect(pinentryHelp.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                    .contains("pinentry-program /usr/bin/pinentry-touchgate"), "touchgate pinentry --help: \(pinentryHelp.stdout)")
        // touchgate agent's program, set-group-ID to the group that tells touchgated its connections apart.
        let agentGroup = try await root.run(["/usr/bin/getent", "group", "touchgate-agent"])
        let agentGID = agentGroup.stdout.split(separator: ":").dropFirst(2).first.flatMap { UInt32($0) }
        var program = stat()
        #expect(stat(root.path("/usr/libexec/touchgate/touchgate-cli"), &program) == 0 && agentGID != nil
                && program.st_gid == agentGID && program.st_mode & 0o7777 == 0o2755,
                "touchgate-cli: mode \(String(program.st_mode & 0o7777, radix: 8)), group \(program.st_gid); \(agentGroup.stdout)")
        let wanted = try? FileManager.default.destinationOfSymbolicLink(atPath: root.path("/etc/systemd/system/sockets.target.wants/touchgated.socket"))
        #expect(wanted == "/lib/systemd/system/touchgated.socket", "the socket is enabled")
        // The per-user agent's sockets, in every user's session.
        let agentWanted = try? FileManager.default.destinationOfSymbolicLink(
            atPath: root.path("/etc/systemd/user/sockets.target.wants/touchgate-agent.socket"))
        // deb-systemd-helper names the unit by /lib, which is /usr/lib on Debian 12 (merged /usr).
        #expect(["/lib/systemd/user/touchgate-agent.socket", "/usr/lib/systemd/user/touchgate-agent.socket"].contains(agentWanted),
                "the agent's sockets are enabled for every user: \(agentWanted ?? "no link")")
        let daemonUser = try root.passwdEntry("touchgated")
        #expect(daemonUser?.shell == "/usr/sbin/nologin", "\(String(describing: daemonUser))")
        let state = try FileManager.default.attributesOfItem(atPath: root.path("/var/lib/touchgate"))
        #expect((state[.posixPermissions] as? Int) == 0o700 && (state[.ownerAccountID] as? Int).map(UInt32.init) == daemonUser?.uid)
        // Installed, the profile is not enabled: nothing in /etc/pam.d changed.
        #expect(try !root.read("/etc/pam.d/common-auth").contains("pam_touchgate"))

        // A user with a login password, a vault in the daemon (the same passphrase, so that the
        // unlock profile can use it below) and whorl enrolled.
        #expect(try await root.run(["/usr/sbin/useradd", "--create-home", "--shell", "/bin/bash", Self.user]).status == 0)
        let setPassword = try await root.run(["/usr/sbin/chpasswd"], stdin: "\(Self.user):\(Self.password)\n")
        #expect(setPassword.status == 0, "\(setPassword.stderr)")
        try root.write("/etc/pam.d/touchgate-check", "# pamtester's service in this test: the system's auth stack.\n@include common-auth\n")
        var daemon = try await root.startDaemon()
        let finger = VirtualImageFinger(socketPath: root.path(DebianRoot.fingerSocket))
        finger.present(["whorl"])
        let enrolled = try await root.run(["/usr/bin/touchgate", "enroll", "--json", "--finger", "right-index"],
                                          as: Self.user, timeout: 120) { finger.handle($0) }
        try #require(enrolled.status == 0, "enroll: \(enrolled.stderr)\n\(daemon.log)")
        let made = try await root.run(["/usr/bin/touchgate", "init", "--kdf", "minimum", "--passphrase-fd", "0"],
                                      as: Self.user, stdin: Self.password + "\n")
        try #require(made.status == 0, "init: \(made.stderr)\n\(daemon.log)")
        let status = try await root.run(["/usr/bin/touchgate", "status"], as: Self.user)
        #expect(status.stdout.contains("touchgated"), "status: \(status.stdout)")

        // fprintd's profile, enabled first: enabling Touchgate's turns it off (Conflicts), so that
        // nobody gets two finger prompts.
        let fprintd = try await root.run(["/usr/bin/apt-get", "install", "-y", "-q", "--no-install-recommends", "libpam-fprintd"],
                                         timeout: 600)
        #expect(fprintd.status == 0, "apt-get install libpam-fprintd: \(fprintd.stdout)\(fprintd.stderr)")
        #expect(try await root.run(["/usr/sbin/pam-auth-update", "--enable", "fprintd"]).status == 0)
        #expect(try root.read("/etc/pam.d/common-auth").contains("pam_fprintd.so"))

        // The profile, enabled as an administrator would: ahead of pam_unix, which takes a typed password.
        let enabled = try await root.run(["/usr/sbin/pam-auth-update", "--enable", "touchgate"])
        #expect(enabled.status == 0, "pam-auth-update: \(enabled.stderr)")
        let commonAuth = try root.read("/etc/pam.d/common-auth")
        #expect(!commonAuth.contains("pam_fprintd"), "fprintd's profile is still on:\n\(commonAuth)")
        let touchLine = commonAuth.range(of: "pam_touchgate.so mode=either")
        let unixLine = commonAuth.range(of: "pam_unix.so")
        #expect(touchLine != nil && unixLine != nil && touchLine!.lowerBound < unixLine!.lowerBound, "\(commonAuth)")
        #expect(commonAuth.contains("pam_unix.so nullok try_first_pass"), "pam_unix takes the password typed at the either prompt:\n\(commonAuth)")

        // A touch at pamtester's prompt: the module ends the password read itself.
        let touched = try await root.pamtester()
        #expect(try await touched.waitForLine(where: { $0.contains("Password or touch the reader:") }), "\(touched.output)")
        finger.present(["whorl"])
        finger.handle("Place your finger")
        #expect(await touched.finish(timeout: 60) == 0, "\(touched.output)\n\(daemon.log)")
        #expect(touched.output.contains("successfully authenticated"), "\(touched.output)")
        let audit = try await root.run(["/usr/bin/touchgate", "audit", "show", "--json", "--event", "auth.attempt"], as: Self.user)
        #expect(audit.stdout.contains("pamtester"), "the daemon audited the touch for pamtester: \(audit.stdout)")

        // The password at the same prompt, with the daemon running.
        let typed = try await root.pamtester()
        #expect(try await typed.waitForLine(where: { $0.contains("Password or touch the reader:") }), "\(typed.output)")
        typed.type(Self.password + "\r")
        #expect(await typed.finish(timeout: 60) == 0, "\(typed.output)")

        // The README's other recipes, with the packages' paths (DebianPackageRecipes.swift).
        let recipesStarted = ContinuousClock.now
        try await Self.runRecipes(in: root, finger: finger, daemon: daemon)
        print("DebianPackageTests: the recipes, their tools' installation included, took \(ContinuousClock.now - recipesStarted)")

        // No daemon: no finger prompt at all, pam_unix asks, and only the right password passes.
        daemon.stop()
        let fallback = try await root.pamtester()
        #expect(try await fallback.waitForLine(where: { $0.contains("Password:") }), "\(fallback.output)")
        #expect(!fallback.output.contains("touch"), "\(fallback.output)")
        fallback.type(Self.password + "\r")
        #expect(await fallback.finish(timeout: 60) == 0, "\(fallback.output)")
        let wrong = try await root.pamtester()
        #expect(try await wrong.waitForLine(where: { $0.contains("Password:") }), "\(wrong.output)")
        wrong.type("not-the-password\r")
        #expect(await wrong.finish(timeout: 60) != 0, "a wrong password was taken: \(wrong.output)")

        // The same packages again (the maintainer scripts' upgrade path): the vault, the print
        // and the enabled profile survive. The restarted daemon holds no key: with the unlock
        // profile enabled, the login password (here also the vault's passphrase) unlocks the
        // vault at the next password login, and the touch works again.
        let again = try await root.run(["/usr/bin/dpkg", "-i"] + packages.map { "/tmp/debs/" + $0 }, timeout: 300)
        #expect(again.status == 0, "dpkg -i again: \(again.stdout)\(again.stderr)")
        #expect(try root.read("/etc/pam.d/common-auth").contains("pam_touchgate.so mode=either"))
        let unlockProfile = try await root.run(["/usr/sbin/pam-auth-update", "--enable", "touchgate-unlock"])
        #expect(unlockProfile.status == 0, "pam-auth-update: \(unlockProfile.stderr)")
        #expect(try root.read("/etc/pam.d/common-auth").contains("pam_touchgate.so unlock-with-password"))
        daemon = try await root.startDaemon()
        let locked = try await root.run(["/usr/bin/touchgate", "status", "--json"], as: Self.user)
        #expect(Self.locked(locked.stdout) == true, "a restarted daemon holds no key: \(locked.stdout)")
        let login = try await root.pamtester()
        #expect(try await login.waitForLine(where: { $0.contains("Password:") }), "\(login.output)")
        login.type(Self.password + "\r")
        #expect(await login.finish(timeout: 60) == 0, "\(login.output)")
        let unlocked = try await root.run(["/usr/bin/touchgate", "status", "--json"], as: Self.user)
        #expect(Self.locked(unlocked.stdout) == false, "the login password unlocked the vault: \(unlocked.stdout)\n\(daemon.log)")
        let afterUpgrade = try await root.pamtester()
        #expect(try await afterUpgrade.waitForLine(where: { $0.contains("Password or touch the reader:") }), "\(afterUpgrade.output)")
        finger.present(["whorl"])
        finger.handle("Place your finger")
        #expect(await afterUpgrade.finish(timeout: 60) == 0, "\(afterUpgrade.output)\n\(daemon.log)")
        daemon.stop()

        // Removed: the profile leaves common-auth, the vaults stay, and the password login works.
        let removed = try await root.run(["/usr/bin/apt-get", "remove", "-y", "-q", "libpam-touchgate", "touchgated",
                                          "touchgate", "touchgate-collector"], timeout: 300)
        #expect(removed.status == 0, "apt-get remove: \(removed.stdout)\(removed.stderr)")
        #expect(try !root.read("/etc/pam.d/common-auth").contains("pam_touchgate"))
        #expect(!root.exists("/lib/x86_64-linux-gnu/security/pam_touchgate.so") && !root.exists("/usr/bin/touchgate"))
        #expect(root.exists("/var/lib/touchgate"), "remove keeps every vault")
        let afterRemoval = try await root.pamtester()
        #expect(try await afterRemoval.waitForLine(where: { $0.contains("Password:") }), "\(afterRemoval.output)")
        afterRemoval.type(Self.password + "\r")
        #expect(await afterRemoval.finish(timeout: 60) == 0, "\(afterRemoval.output)")

        // Purged: the daemon's state goes, and the package says what it deleted.
        let purged = try await root.run(["/usr/bin/apt-get", "purge", "-y", "-q", "touchgated"], timeout: 300)
        #expect(purged.status == 0, "apt-get purge: \(purged.stdout)\(purged.stderr)")
        #expect((purged.stdout + purged.stderr).contains("purge deletes /var/lib/touchgate"), "\(purged.stdout)\(purged.stderr)")
        #expect(!root.exists("/var/lib/touchgate"))
    }

    /// Paths of ours the docs give that no package installs: files the administrator makes.
    static let madeByTheUser: Set<String> = [
        // The fleet's configuration and credentials (docs/FLEET.md), and its drop-in for the unit.
        "/etc/touchgate/fleet.conf", "/etc/touchgate/fleet-ca.pem", "/etc/touchgate/fleet-client.pem",
        "/etc/touchgate/fleet-client.key", "/etc/systemd/system/touchgated.service.d/fleet.conf",
        // The collector's own key, on the collector's host (`touchgate-collector publish`).
        "/etc/touchgate/log.key",
    ]

    /// Every absolute path under /usr, /etc or /lib that names one of Touchgate's files in the
    /// README, docs/*.md, man/extra/*.mdoc or the units installed in `root`, with the places
    /// (file:line) that give it. The docs' amd64 multiarch directory stands for this machine's.
    static func documentedPaths(in root: DebianRoot) async throws -> [String: [String]] {
        let checkout = Fixtures.packageRoot.path
        var files = ["README.md"].map { (checkout + "/" + $0, $0) }
        for directory in ["docs", "man/extra"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: checkout + "/" + directory).sorted()
            where name.hasSuffix(".md") || name.hasSuffix(".mdoc") {
                files.append((checkout + "/" + directory + "/" + name, directory + "/" + name))
            }
        }
        for directory in ["/lib/systemd/system", "/usr/lib/systemd/user"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: root.path(directory)).sorted()
            where name.hasPrefix("touchgate") {
                files.append((root.path(directory + "/" + name), "installed " + directory + "/" + name))
            }
        }
        let multiarch = try await runProgram("/usr/bin/dpkg-architecture", ["-qDEB_HOST_MULTIARCH"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // A path starts after a blank, a quote, a bracket or `=`: not inside a longer path,
        // a URL or `$(PREFIX)/lib/…`.
        let pattern = try NSRegularExpression(pattern: #"(?<![A-Za-z0-9_$)./~-])/(?:usr|etc|lib)/[A-Za-z0-9_.+@/-]*"#)
        var found: [String: [String]] = [:]
        for (file, name) in files {
            let lines = try String(contentsOfFile: file, encoding: .utf8).components(separatedBy: "\n")
            for (number, line) in lines.enumerated() {
                for match in pattern.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                    var path = String(line[Range(match.range, in: line)!])
                    while path.hasSuffix(".") { path.removeLast() }
                    guard path.contains("touchgate") else { continue }
                    if !multiarch.isEmpty { path = path.replacingOccurrences(of: "/x86_64-linux-gnu/", with: "/\(multiarch)/") }
                    found[path, default: []].append("\(name):\(number + 1)")
                }
            }
        }
        #expect(found.count >= 10, "the docs' paths were not found: \(found)")
        return found
    }

    /// `locked` of `touchgate status --json`'s output.
    static func locked(_ json: String) -> Bool? {
        ((try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any])?["locked"] as? Bool
    }

    /// Runs `make deb` into `directory`; the names of the .deb files made.
    static func buildPackages(into directory: String) async throws -> [String] {
        for (tool, package) in [("/usr/bin/dpkg-buildpackage", "dpkg-dev"), ("/usr/bin/dh", "debhelper"),
                                ("/usr/bin/lintian", "lintian"), ("/usr/sbin/debootstrap", "debootstrap")] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "this test needs \(tool): apt-get install \(package)")
        }
        // In a network namespace of its own (loopback only): the build needs no network, the
        // Swift packages resolving from their local copies.
        let made = try await runProgram("/usr/bin/unshare", ["--net", "--", "/usr/bin/make", "-C", Fixtures.packageRoot.path,
                                                             "deb", "DEBOUT=\(directory)"], timeout: 3600)
        try #require(made.status == 0, "make deb: \(made.stdout.suffix(4000))\(made.stderr.suffix(4000))")
        return try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".deb") }.sorted()
    }

    /// lintian finds no error and no warning; overrides in debian/*.lintian-overrides say why.
    static func lintianIsClean(_ packages: [String]) async throws {
        let checked = try await runProgram("/usr/bin/lintian", ["--fail-on", "error,warning"] + packages, timeout: 900)
        #expect(checked.status == 0, "lintian:\n\(checked.stdout)\(checked.stderr)")
        let tags = checked.stdout.split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
        #expect(tags.isEmpty, "lintian:\n\(tags.joined(separator: "\n"))")
    }
}

struct NoArchive: Error, CustomStringConvertible {
    let description: String
}

/// A Debian root made by debootstrap (minbase, with pamtester), from the archive and suite
/// this machine's apt sources name, with those sources inside it. Commands run in it through
/// chroot, in a mount namespace of their own with /proc mounted, so nothing stays mounted
/// when they end and the root is deleted as plain files.
struct DebianRoot {
    let directory: String
    static let fingerSocket = "/run/touchgate-finger/socket"

    func path(_ inside: String) -> String { directory + inside }
    func exists(_ inside: String) -> Bool { FileManager.default.fileExists(atPath: path(inside)) }
    func read(_ inside: String) throws -> String { try String(contentsOfFile: path(inside), encoding: .utf8) }
    func write(_ inside: String, _ text: String) throws { try text.write(toFile: path(inside), atomically: true, encoding: .utf8) }

    func passwdEntry(_ name: String) throws -> (uid: UInt32, shell: String)? {
        for line in try read("/etc/passwd").split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            if fields.count == 7, fields[0] == name, let uid = UInt32(fields[2]) { return (uid, String(fields[6])) }
        }
        return nil
    }

    /// The command line that runs `argv` inside the root, as `user` when given.
    func command(_ argv: [String], as user: String? = nil) -> [String] {
        let identity = user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--init-groups", "--"] } ?? []
        return ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                #"mount -t proc proc "$0/proc" && exec /usr/sbin/chroot "$0" "$@""#, directory] + identity + argv
    }

    static func environment(home: String) -> [String: String] {
        ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": home, "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"]
    }

    func home(_ user: String?) -> String { user.map { "/home/" + $0 } ?? "/root" }

    /// Runs `argv` in the root to its end.
    func run(_ argv: [String], as user: String? = nil, stdin: String? = nil, timeout: TimeInterval = 60,
             onStderrLine: @escaping @Sendable (String) -> Void = { _ in })
    async throws -> (status: Int32, stdout: String, stderr: String) {
        let full = command(argv, as: user)
        let result = try await ProgramRun.run(full[0], Array(full.dropFirst()), environment: Self.environment(home: home(user)),
                                              stdin: stdin.map { Data($0.utf8) }, timeout: timeout) { line, _ in onStderrLine(line) }
        return (result.status, result.stdout, result.stderrLines.map { $0 + "\n" }.joined())
    }

    /// pamtester authenticating the test's user through the touchgate-check service (common-auth),
    /// as that user, on a terminal of its own.
    func pamtester() async throws -> TerminalSession {
        let line = command(["/usr/bin/pamtester", "touchgate-check", DebianPackageTests.user, "authenticate"],
                           as: DebianPackageTests.user).map(Self.quoted).joined(separator: " ")
        return try await TerminalSession(line, directory: "/", environment: Self.environment(home: home(DebianPackageTests.user)))
    }

    static func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }

    /// touchgated as its own user, on the socket its unit would give it, with libfprint's
    /// virtual_image reader at ``fingerSocket``.
    /// touchgated started without systemd by the one documented command, as root:
    /// `touchgated --user touchgated` makes /run/touchgate its user's and runs as that user.
    func startDaemon() async throws -> Daemon {
        let user = try #require(try passwdEntry("touchgated"), "the package made no touchgated user")
        try? FileManager.default.removeItem(atPath: path("/run/touchgate"))
        // Where the virtual reader's socket is made (by libfprint, in the daemon).
        try? FileManager.default.removeItem(atPath: path("/run/touchgate-finger"))
        try FileManager.default.createDirectory(atPath: path("/run/touchgate-finger"), withIntermediateDirectories: true)
        #expect(chown(path("/run/touchgate-finger"), user.uid, user.uid) == 0 && chmod(path("/run/touchgate-finger"), 0o755) == 0)
        var environment = Self.environment(home: "/var/lib/touchgate")
        environment["FP_VIRTUAL_IMAGE"] = Self.fingerSocket
        environment["FP_DRIVERS_WHITELIST"] = "virtual_image"
        let log = LineCollector()
        let full = command(["/usr/sbin/touchgated", "--user", "touchgated"])
        let process = try await BackgroundProcess.start(full[0], Array(full.dropFirst()), environment: environment,
                                                        output: .lines { log.append($0) }, error: .lines { log.append($0) })
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: path("/run/touchgate/socket")) && process.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(FileManager.default.fileExists(atPath: path("/run/touchgate/socket")), "touchgated did not start: \(log.lines.joined(separator: "\n"))")
        var socketDirectory = stat()
        #expect(stat(path("/run/touchgate"), &socketDirectory) == 0 && socketDirectory.st_uid == user.uid
                && socketDirectory.st_mode & 0o777 == 0o755, "/run/touchgate is not touchgated's, mode 0755")
        // It runs as its user, not as root.
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let uids = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(whereSeparator: \.isWhitespace).dropFirst()
        #expect(uids.map { Array($0) } == Array(repeating: Substring(String(user.uid)), count: 4), "touchgated runs as \(String(describing: uids))")
        return Daemon(process: process, logged: log)
    }

    struct Daemon {
        let process: BackgroundProcess
        let logged: LineCollector
        var log: String { logged.lines.joined(separator: "\n") }
        func stop() { process.stop(signal: SIGTERM) }
    }

    /// A fresh root at `directory`: debootstrap's, unpacked from .build-deb/ when an earlier
    /// run made one from the same archive and suite, with the machine's apt sources and
    /// resolver configuration copied in.
    static func make(at directory: String) async throws -> DebianRoot {
        let (uri, suite) = try archive()
        let cacheDirectory = Fixtures.packageRoot.appendingPathComponent(".build-deb").path
        let key = (uri + " " + suite).unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.map(String.init).joined()
        let cached = cacheDirectory + "/debootstrap-\(key).tar"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: cached) {
            let made = try await runProgram("/usr/sbin/debootstrap", ["--variant=minbase", "--include=pamtester", suite,
                                                                      directory, uri], timeout: 1800)
            try #require(made.status == 0, "debootstrap \(suite) \(uri): \(made.stdout.suffix(3000))\(made.stderr.suffix(3000))")
            try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
            let packed = try await runProgram("/usr/bin/tar", ["-C", directory, "-cf", cached + ".new", "."], timeout: 600)
            #expect(packed.status == 0, "tar: \(packed.stderr)")
            if packed.status == 0 { try FileManager.default.moveItem(atPath: cached + ".new", toPath: cached) }
        } else {
            let unpacked = try await runProgram("/usr/bin/tar", ["-C", directory, "-xpf", cached], timeout: 600)
            try #require(unpacked.status == 0, "tar: \(unpacked.stderr)")
        }
        let root = DebianRoot(directory: directory)
        // The same archives as this machine: the packages' dependencies were computed against its libraries.
        let manager = FileManager.default
        try? manager.removeItem(atPath: root.path("/etc/apt/sources.list"))
        for name in try manager.contentsOfDirectory(atPath: root.path("/etc/apt/sources.list.d")) {
            try manager.removeItem(atPath: root.path("/etc/apt/sources.list.d/" + name))
        }
        for source in try Self.sourceFiles() {
            try manager.copyItem(atPath: source, toPath: root.path(source))
        }
        try? manager.removeItem(atPath: root.path("/etc/resolv.conf"))
        try manager.copyItem(atPath: "/etc/resolv.conf", toPath: root.path("/etc/resolv.conf"))
        let updated = try await root.run(["/usr/bin/apt-get", "update", "-q"], timeout: 600)
        try #require(updated.status == 0, "apt-get update in the root: \(updated.stdout)\(updated.stderr)")
        return root
    }

    /// This machine's apt source files that are in use.
    static func sourceFiles() throws -> [String] {
        var files = ["/etc/apt/sources.list"].filter { FileManager.default.fileExists(atPath: $0) }
        let directory = "/etc/apt/sources.list.d"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where name.hasSuffix(".list") || name.hasSuffix(".sources") {
            files.append(directory + "/" + name)
        }
        return files
    }

    /// The archive and suite this machine's apt sources name for its own release
    /// (VERSION_CODENAME in /etc/os-release), read now: no address is written into the tests.
    static func archive() throws -> (uri: String, suite: String) {
        let release = try String(contentsOfFile: "/etc/os-release", encoding: .utf8)
        let codename = try #require(release.split(separator: "\n").first { $0.hasPrefix("VERSION_CODENAME=") }
            .map { String($0.dropFirst("VERSION_CODENAME=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) },
                                    "no VERSION_CODENAME in /etc/os-release")
        for file in try sourceFiles() {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            if file.hasSuffix(".sources") {
                // deb822 stanzas: Types, URIs, Suites.
                for stanza in text.components(separatedBy: "\n\n") {
                    var fields: [String: [String]] = [:]
                    for line in stanza.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix(" ") {
                        let parts = line.split(separator: ":", maxSplits: 1)
                        if parts.count == 2 {
                            fields[parts[0].lowercased()] = parts[1].split(separator: " ").map(String.init)
                        }
                    }
                    if fields["types"]?.contains("deb") == true, fields["suites"]?.contains(codename) == true,
                       fields["enabled"]?.first != "no", let uri = fields["uris"]?.first {
                        return (uri, codename)
                    }
                }
            } else {
                for line in text.split(separator: "\n") {
                    // deb [options] URI suite components
                    let words = line.split(separator: " ").map(String.init).filter { !$0.hasPrefix("[") && !$0.hasSuffix("]") }
                    if words.count >= 3, words[0] == "deb", words[2] == codename { return (words[1], codename) }
                }
            }
        }
        throw NoArchive(description: "no apt source of this machine names its own suite, \(codename), for debootstrap")
    }
}
