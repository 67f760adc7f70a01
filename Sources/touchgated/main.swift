import Foundation
import TouchgateBasics
import TouchgateDaemon
import TouchgateFleet
import TouchgateService
import TouchgateSocket

/// touchgated [--socket PATH] [--state-dir DIR] [--fleet-config FILE] [--audit-retention-years N]
///
/// Under systemd the socket comes from socket activation and the state directory from
/// `StateDirectory=` ($STATE_DIRECTORY); `--socket` runs it in the foreground on a socket
/// of its own (tests, or a system without systemd). The trails are shipped to the fleet
/// collector when the fleet configuration (default /etc/touchgate/fleet.conf) exists.
/// `--audit-retention-years` keeps every user's audit records longer than HIPAA's six
/// years (never shorter): `audit prune` refuses any cutoff inside it. The timeouts and
/// bounds are ``DaemonSettings``'s.
let usage = """
    usage: touchgated [--socket PATH] [--state-dir DIR] [--fleet-config FILE] [--audit-retention-years N]
                      [--finger-timeout SECONDS] [--answer-timeout SECONDS]
                      [--connections-per-user N] [--connections N]
                      [--request-burst N] [--requests-per-minute N]

      --socket PATH               listen here (default: the socket systemd passes)
      --state-dir DIR             every user's store (default: $STATE_DIRECTORY or /var/lib/touchgate)
      --fleet-config FILE         ship audit trails as FILE says (default: /etc/touchgate/fleet.conf, if present)
      --audit-retention-years N   keep audit records N years, at least 6 (default 6)
      --finger-timeout SECONDS    end a reader wait with no finger after this long (default 60)
      --answer-timeout SECONDS    end a question nobody answers after this long (default 120)
      --connections-per-user N    connections one user may hold open (default 16)
      --connections N             connections in all, lowered to what LimitMEMLOCK allows (default 256)
      --request-burst N           requests writing audit records one user may make at once (default 100)
      --requests-per-minute N     ...and then per minute (default 60)

    """

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("touchgated: \(message)\n".utf8))
    exit(status)
}

do {
    try TouchgateService.hardenProcess()
} catch {
    fail(error.message)
}
umask(0o077)

/// The number after option `name`, which must be above zero.
func positiveNumber(_ name: String, _ value: String?) -> Double {
    guard let value, let number = Double(value), number > 0, number.isFinite else {
        fail("\(name) needs a number above zero\n" + usage, status: 64)
    }
    return number
}

var settings = DaemonSettings()
var socketPath: String?
var fleetConfiguration = FleetConfiguration.defaultPath
var stateDirectory = ProcessInfo.processInfo.environment["STATE_DIRECTORY"] ?? "/var/lib/touchgate"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--socket":
        guard let path = arguments.popFirst() else { fail("--socket needs a path\n" + usage, status: 64) }
        socketPath = path
    case "--state-dir":
        guard let directory = arguments.popFirst() else { fail("--state-dir needs a directory\n" + usage, status: 64) }
        stateDirectory = directory
    case "--fleet-config":
        guard let path = arguments.popFirst() else { fail("--fleet-config needs a file\n" + usage, status: 64) }
        fleetConfiguration = path
    case "--finger-timeout":
        settings.fingerTimeout = .milliseconds(Int64(positiveNumber(argument, arguments.popFirst()) * 1000))
    case "--answer-timeout":
        settings.answerTimeout = .milliseconds(Int64(positiveNumber(argument, arguments.popFirst()) * 1000))
    case "--connections-per-user":
        settings.connectionsPerUser = Int(positiveNumber(argument, arguments.popFirst()))
    case "--connections":
        settings.connections = Int(positiveNumber(argument, arguments.popFirst()))
    case "--request-burst":
        settings.requestBurst = Int(positiveNumber(argument, arguments.popFirst()))
    case "--requests-per-minute":
        settings.requestsPerSecond = positiveNumber(argument, arguments.popFirst()) / 60
    case "--audit-retention-years":
        guard let text = arguments.popFirst() else { fail("--audit-retention-years needs a number\n" + usage, status: 64) }
        do {
            let years = try AuditRetention.years(parsing: text)
            // Every user's service reads it from here (AuditRetention.configuredYears); set
            // while this process has no other thread yet.
            setenv(AuditRetention.environmentVariable, String(years), 1)
        } catch {
            fail(error.message, status: 64)
        }
    case "--help", "-h":
        print(usage, terminator: "")
        exit(0)
    default: fail("unknown argument '\(argument)'\n" + usage, status: 64)
    }
}

// A retention from the unit file is checked as the option is: a typo must not leave six years in force.
if let text = ProcessInfo.processInfo.environment[AuditRetention.environmentVariable] {
    do {
        _ = try AuditRetention.years(parsing: text)
    } catch {
        fail("\(AuditRetention.environmentVariable): \(error.message)", status: 64)
    }
}

// Keys, vaults and trails live there: refuse to serve from a state directory others can reach.
let loosened = StateDirectoryCheck.problems(in: URL(fileURLWithPath: stateDirectory))
if !loosened.isEmpty {
    fail("refusing to start: the state directory must be private to touchgated's user, and\n  "
         + loosened.joined(separator: "\n  "))
}

let listener: UnixListener
do {
    if let socketPath {
        listener = try UnixListener.bind(path: socketPath)
    } else if let activated = UnixListener.fromSystemd() {
        listener = activated
    } else {
        fail("no socket: run under systemd (touchgated.socket) or pass --socket PATH", status: 64)
    }
} catch {
    fail("\(error)")
}

let daemon: Daemon
do {
    let fleet = FleetShipping(configurationPath: fleetConfiguration) { PostgresCollector(configuration: $0) }
    daemon = try Daemon(listener: listener, stateDirectory: URL(fileURLWithPath: stateDirectory), fleet: fleet,
                    settings: settings) { line in
        FileHandle.standardError.write(Data("touchgated: \(line)\n".utf8))
    }
} catch {
    fail("cannot use the state directory \(stateDirectory): \(error)")
}

// SIGTERM and SIGINT stop accepting; requests in progress are cancelled with their clients.
nonisolated(unsafe) var signalSources: [any DispatchSourceSignal] = []
for number in [SIGTERM, SIGINT] {
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler { daemon.stop() }
    source.resume()
    signalSources.append(source)
}

FileHandle.standardError.write(Data("touchgated: serving on \(socketPath ?? "the socket systemd passed")\n".utf8))
await daemon.run()
