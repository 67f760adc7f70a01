import Foundation
import Testing
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Something other than fprintd owns `net.reactivated.Fprint` on the bus Touchgate uses and
/// answers what it likes: a match with no finger touched, a match of another finger than
/// asked, finger and reader names made to fool a terminal.
///
/// Touchgate takes the system bus from `DBUS_SYSTEM_BUS_ADDRESS` when it is set, as every
/// GDBus client does. On the real system bus only root can own fprintd's name, so a lie
/// there means root is against you. A program running as you can start a bus of its own
/// and point touchgate at it; in the personal (in-process) mode such a program is inside
/// the boundary already (it can read the unlocked vault key from your keyring), so a faked
/// match gives it nothing new. These tests pin what Touchgate does defend: it asks the
/// question itself and takes only an answer to that question, and it never prints a
/// name from the bus unescaped. See docs/SECURITY.md.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FakeFprintdTests {
    /// A private bus with a fake fprintd (python3-dbus) that answers every VerifyStart with
    /// `selected` (or the finger asked) and verify-match, after 0.1 s, with no reader at all.
    final class Fake: @unchecked Sendable {
        let directory: TemporaryDirectory
        let busAddress: String
        private let bus: BackgroundProcess
        private let fake: BackgroundProcess

        init(fingers: [String], selected: String? = nil, name: String = "Fake reader") async throws {
            for program in ["/usr/bin/dbus-daemon", "/usr/bin/python3", "/usr/bin/gdbus"] {
                try #require(FileManager.default.isExecutableFile(atPath: program),
                             "\(program) is missing: apt-get install dbus-daemon python3-dbus python3-gi libglib2.0-bin")
            }
            directory = try TemporaryDirectory("touchgate-fake-fprintd")
            let socket = directory.path("bus.socket")
            busAddress = "unix:path=\(socket)"
            try Self.configuration(socket).write(toFile: directory.path("bus.conf"), atomically: true, encoding: .utf8)
            try Self.script.write(toFile: directory.path("fake.py"), atomically: true, encoding: .utf8)
            bus = try await Self.launch("/usr/bin/dbus-daemon", ["--config-file=\(directory.path("bus.conf"))", "--nofork"],
                                        [:], log: directory.path("bus.log"))
            try await Self.wait { FileManager.default.fileExists(atPath: socket) }
            var environment = ["DBUS_SYSTEM_BUS_ADDRESS": busAddress, "FAKE_FINGERS": fingers.joined(separator: ","),
                               "FAKE_NAME": name]
            if let selected { environment["FAKE_SELECTED"] = selected }
            fake = try await Self.launch("/usr/bin/python3", [directory.path("fake.py")], environment,
                                         log: directory.path("fake.log"))
            let address = busAddress
            try await Self.wait {
                await Self.run("/usr/bin/gdbus", ["call", "--system", "--dest", "net.reactivated.Fprint", "--object-path",
                                            "/net/reactivated/Fprint/Manager", "--method",
                                            "net.reactivated.Fprint.Manager.GetDevices"],
                         ["DBUS_SYSTEM_BUS_ADDRESS": address])
            }
        }

        func stop() {
            for process in [fake, bus] { process.stop() }
            directory.remove()
        }

        static let script = #"""
            import os, dbus, dbus.service, dbus.mainloop.glib
            from gi.repository import GLib
            dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
            bus = dbus.SystemBus()
            IFACE = 'net.reactivated.Fprint.Device'
            DEV = '/net/reactivated/Fprint/Device/0'
            fingers = [f for f in os.environ.get('FAKE_FINGERS', '').split(',') if f]
            class Manager(dbus.service.Object):
                @dbus.service.method('net.reactivated.Fprint.Manager', out_signature='ao')
                def GetDevices(self): return [dbus.ObjectPath(DEV)]
                @dbus.service.method('net.reactivated.Fprint.Manager', out_signature='o')
                def GetDefaultDevice(self): return dbus.ObjectPath(DEV)
            class Device(dbus.service.Object):
                @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
                def GetAll(self, interface):
                    return {'name': os.environ['FAKE_NAME'], 'num-enroll-stages': dbus.Int32(5), 'scan-type': 'press',
                            'finger-present': False, 'finger-needed': False}
                @dbus.service.method(IFACE, in_signature='s', out_signature='as')
                def ListEnrolledFingers(self, user): return fingers
                @dbus.service.method(IFACE, in_signature='s')
                def Claim(self, user): pass
                @dbus.service.method(IFACE)
                def Release(self): pass
                @dbus.service.method(IFACE, in_signature='s')
                def VerifyStart(self, finger):
                    GLib.timeout_add(100, self.answer, finger)
                def answer(self, finger):
                    self.VerifyFingerSelected(os.environ.get('FAKE_SELECTED', finger))
                    self.VerifyStatus('verify-match', True)
                    return False
                @dbus.service.method(IFACE)
                def VerifyStop(self): pass
                @dbus.service.signal(IFACE, signature='s')
                def VerifyFingerSelected(self, name): pass
                @dbus.service.signal(IFACE, signature='sb')
                def VerifyStatus(self, result, done): pass
            Manager(bus, '/net/reactivated/Fprint/Manager')
            Device(bus, DEV)
            name = dbus.service.BusName('net.reactivated.Fprint', bus)
            GLib.MainLoop().run()
            """#

        static func configuration(_ socket: String) -> String {
            """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/><allow own="*"/>
                <allow send_type="method_call"/><allow send_type="signal"/>
                <allow send_type="method_return"/><allow send_type="error"/>
                <allow receive_type="method_call"/><allow receive_type="signal"/>
                <allow receive_type="method_return"/><allow receive_type="error"/>
              </policy>
            </busconfig>
            """
        }

        static func launch(_ path: String, _ arguments: [String], _ environment: [String: String],
                           log: String) async throws -> BackgroundProcess {
            try await BackgroundProcess.start(path, arguments,
                                              environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                              output: .file(log), error: .file(log))
        }

        static func run(_ path: String, _ arguments: [String], _ environment: [String: String]) async -> Bool {
            (try? await runProgram(path, arguments, environment: environment))?.status == 0
        }

        static func wait(_ condition: () async -> Bool) async throws {
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline {
                if await condition() { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw FakeFprintdDown()
        }
    }

    private func vault(_ fake: Fake) throws -> VaultRig {
        var vault = try VaultRig()
        vault.rig.process.environment["DBUS_SYSTEM_BUS_ADDRESS"] = fake.busAddress
        return vault
    }

    /// The documented limit: whoever owns fprintd's name on the bus touchgate is pointed at
    /// is believed. No finger touched anything here.
    @Test func aFakeOnABusOfTheUsersOwnIsBelieved() async throws {
        let fake = try await Fake(fingers: ["right-index-finger"])
        defer { fake.stop() }
        let vault = try vault(fake)
        defer { vault.home.remove() }
        try await vault.initAndUnlock()
        let verify = try await vault.run(["verify", "--json"])
        #expect(verify.status == 0, "\(verify.stderrLines)")
        #expect(verify.json?["match"] as? Bool == true)
        // touchgate says which way it went, so the bus in use is visible.
        let devices = try await vault.run(["devices", "--json"])
        let listed = (devices.json?["devices"] as? [[String: Any]])?.first
        #expect(listed?["backend"] as? String == "fprintd")
        #expect(listed?["temperature"] == nil, "fprintd does not report it")
        // And the audit trail records it as fprintd's answer.
        let audit = try await vault.run(["audit", "show", "--json"])
        #expect(audit.stdout.contains("fprintd"), "\(audit.stdout.suffix(600))")
    }

    /// Asked for one finger, a match reported for another is no answer: refused, not a match.
    @Test func aMatchOfAnotherFingerThanAskedIsRefused() async throws {
        let fake = try await Fake(fingers: ["right-index-finger", "left-index-finger"], selected: "left-index-finger")
        defer { fake.stop() }
        let vault = try vault(fake)
        defer { vault.home.remove() }
        let verify = try await vault.run(["verify", "--json", "--finger", "right-index"])
        #expect(verify.status != 0, "\(verify.stderrLines)")
        #expect(verify.json?["match"] as? Bool != true)
        let message = verify.stderrLines.joined(separator: " ")
        #expect(message.contains("left-index-finger") && message.contains("right-index"), "\(message)")
    }

    /// Finger and reader names from the bus reach the terminal escaped, never as control sequences.
    @Test func hostileNamesFromTheBusAreEscaped() async throws {
        let escape = "\u{1B}]0;owned\u{07}\u{1B}[2J"
        let fake = try await Fake(fingers: ["right-index-finger", "evil\(escape)-finger"], selected: "evil\(escape)",
                            name: "Reader\(escape)")
        defer { fake.stop() }
        let vault = try vault(fake)
        defer { vault.home.remove() }
        for arguments in [["devices"], ["status"], ["verify"], ["verify", "--json"], ["devices", "--json"]] {
            let result = try await vault.run(arguments)
            let everything = result.stdout + result.stderrLines.joined(separator: "\n")
            #expect(!everything.contains("\u{1B}"), "\(arguments): \(everything.debugDescription)")
        }
        // An unknown finger name is no finger: the match it claims counts for none of the user's fingers.
        let verify = try await vault.run(["verify", "--json"])
        #expect(verify.json?["finger"] as? String == nil, "\(verify.stdout)")
    }

    /// `TOUCHGATE_READER_BACKEND` set to something hostile is refused, escaped, never read as `auto`.
    @Test func hostileBackendSettingsAreRefused() async throws {
        let vault = try VaultRig()
        defer { vault.home.remove() }
        for value in ["fprintd\u{1B}[2J", " libfprint", "libfprint;rm -rf ~", String(repeating: "x", count: 5000), "../fprintd"] {
            var rig = vault
            rig.rig.process.environment["TOUCHGATE_READER_BACKEND"] = value
            let result = try await rig.run(["verify", "--json"])
            #expect(result.status == 64, "\(value.prefix(20)): \(result.stderrLines)")
            let everything = result.stdout + result.stderrLines.joined(separator: "\n")
            #expect(!everything.contains("\u{1B}"), "\(everything.debugDescription)")
            #expect(everything.contains("use auto, libfprint or fprintd"), "\(everything.prefix(300))")
        }
    }
}

/// The fake fprintd did not come up.
struct FakeFprintdDown: Error, CustomStringConvertible {
    var description: String {
        "the fake fprintd did not come up on its private bus: apt-get install dbus-daemon python3-dbus python3-gi"
    }
}
