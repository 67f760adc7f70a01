import Foundation
import Testing
@testable import TouchgateService
import TouchgateAPI
@testable import TouchgateShipping

/// `/etc/touchgate/fleet.conf`: what it may say, what it may not, and who may own it. It
/// decides where every user's trail goes, so a file anyone else could have written is
/// never read, and a line that is not a known setting is an error, not a guess.
@Suite struct FleetConfigurationTests {
    @Test("every setting is read; comments, blank lines and spaces are ignored; a value keeps its own '='")
    func readsEverySetting() throws {
        let text = """
            # the collector
            database = host=db.example port=5433 dbname=touchgate user=shipper

              sslmode = verify-full
            sslrootcert=/etc/touchgate/ca.pem
            sslcert = /etc/touchgate/client.pem
            sslkey = /etc/touchgate/client.key
            machine = ana-laptop
            backlog-limit = 50
            batch-size = 7
            ship-every = 60
            """
        let configuration = try FleetConfiguration.parse(text, path: "fleet.conf")
        #expect(configuration.database == "host=db.example port=5433 dbname=touchgate user=shipper")
        #expect(configuration.tls == ["sslmode": "verify-full", "sslrootcert": "/etc/touchgate/ca.pem",
                                      "sslcert": "/etc/touchgate/client.pem", "sslkey": "/etc/touchgate/client.key"])
        #expect(configuration.machine == "ana-laptop")
        #expect(configuration.backlogLimit == 50 && configuration.batchSize == 7 && configuration.shipEvery == 60)

        let defaults = try FleetConfiguration.parse("database = postgresql://db/touchgate\n", path: "fleet.conf")
        #expect(defaults.backlogLimit == 100_000 && defaults.batchSize == 5000 && defaults.shipEvery == 300)
        #expect(defaults.machine == ProcessInfo.processInfo.hostName && defaults.tls.isEmpty)
    }

    @Test("hostile or mistaken lines are refused with the line and what to write instead", arguments: [
        ("machine = m1\n", "names no database"),
        ("database =\n", "names no database"),
        ("database = x\nhost = other\n", "unknown setting \"host\""),
        ("database = x\nsslpassword = secret\n", "unknown setting \"sslpassword\""),
        ("database = x\njust a line\n", "line 2 is not `key = value`"),
        ("database = x\nbatch-size = 0\n", "batch-size takes a whole number above 0"),
        ("database = x\nbacklog-limit = -5\n", "backlog-limit takes a whole number above 0"),
        ("database = x\nship-every = soon\n", "ship-every takes a whole number above 0"),
        ("database = x\nship-every = 99999999999999999999999\n", "ship-every takes a whole number above 0"),
        ("database = x\nmachine = evil\u{1B}[2Jname\n", "machine"),
    ])
    func refusesHostileLines(text: String, expected: String) {
        #expect {
            try FleetConfiguration.parse(text, path: "fleet.conf")
        } throws: { error in
            guard let error = error as? ServiceError else { return false }
            return error.code == .usage && error.message.contains(expected)
        }
    }

    @Test("only a regular file root owns and alone may write is read; a missing one says how to make it")
    func ownership() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-conf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("fleet.conf").path
        func load() -> ServiceError? {
            do {
                _ = try FleetConfiguration.load(path: path)
                return nil
            } catch {
                return error
            }
        }
        #expect(load()?.code == .notFound && load()?.message.contains("create it as root") == true)

        try "database = host=db\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        if getuid() == 0 {
            #expect(load() == nil)
            chmod(path, 0o664)
            #expect(load()?.code == .forbidden && load()?.message.contains("writable by root alone") == true)
            chmod(path, 0o646)
            #expect(load()?.code == .forbidden)
            chmod(path, 0o644)
            chown(path, 65534, 65534)
            #expect(load()?.code == .forbidden && load()?.message.contains("owned by root") == true)
            chown(path, 0, 0)
        } else {
            // Not root: the file this user made is not root's, so it is refused.
            #expect(load()?.code == .forbidden)
        }
        // A symbolic link to a good file is refused: it could be repointed.
        let link = directory.appendingPathComponent("link.conf").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        do {
            _ = try FleetConfiguration.load(path: link)
            Issue.record("a symbolic link was read")
        } catch {
            #expect(error.code == .forbidden && error.message.contains("symbolic link"))
        }
        // A directory is not a configuration.
        do {
            _ = try FleetConfiguration.load(path: directory.path)
            Issue.record("a directory was read")
        } catch {
            #expect(error.code == .forbidden)
        }
    }
}
