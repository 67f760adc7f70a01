import FoundationEssentials
import Logging
import TouchgateService
public import TouchgateShipping
import TouchgateVault
import TouchgateAPI

/// touchgated's side of fleet collection: the trails in its store go to the collector that
/// the daemon's own fleet configuration names (a root-owned file, read afresh for every
/// shipment; never a file a client names), when a client asks (`audit.ship`: the caller's
/// trail, or for root every user's) and every `ship-every` seconds on its own.
///
/// The shipping itself is ``TouchgateService/shipAudit(to:configuration:)``, the same use
/// case `touchgate audit ship` runs in personal mode.
public struct FleetShipping: Sendable {
    /// The fleet configuration file.
    public let configurationPath: String
    /// Makes the collector a configuration names (PostgreSQL in `touchgated`).
    let connect: @Sendable (FleetConfiguration) -> any AuditCollector

    /// Shipping configured by the file at `configurationPath`, to collectors `connect` makes.
    public init(configurationPath: String = FleetConfiguration.defaultPath,
                connect: @escaping @Sendable (FleetConfiguration) -> any AuditCollector) {
        self.configurationPath = configurationPath
        self.connect = connect
    }

    /// The configuration, or why there is none to ship with.
    func configuration() throws(ServiceError) -> FleetConfiguration {
        do {
            return try FleetConfiguration.load(path: configurationPath)
        } catch where error.code == .notFound {
            throw ServiceError(.notFound, "touchgated has no fleet configuration at "
                               + "\(StoredText.escaped(configurationPath)): root creates it to have the trails "
                               + "shipped (docs/FLEET.md)")
        }
    }

    /// Ships each service's trail in turn over one connection. A collector out of reach
    /// ends the run at once (the other trails would fail the same way); a trail that
    /// cannot be shipped for a reason of its own does not hold back the others, and the
    /// run then fails naming it.
    func ship(_ services: [TouchgateService], newLog: Bool = false) async throws(ServiceError) -> [AuditShipReport] {
        try await ship(services, with: try configuration(), newLog: newLog)
    }

    /// ``ship(_:)`` with the configuration already read.
    private func ship(_ services: [TouchgateService], with configuration: FleetConfiguration,
                      newLog: Bool = false) async throws(ServiceError) -> [AuditShipReport] {
        let collector = connect(configuration)
        defer { collector.close() }
        var reports: [AuditShipReport] = []
        var failures: [ServiceError] = []
        for service in services {
            do {
                reports.append(try await service.shipAudit(to: collector, configuration: configuration, newLog: newLog))
            } catch {
                let named = ServiceError(error.code, "\(service.principal.loginName)'s trail: \(error.message)")
                guard error.code != .collectorUnavailable, error.code != .backlogFull else { throw named }
                failures.append(named)
            }
        }
        if let first = failures.first {
            throw ServiceError(first.code, "\(reports.count) trail(s) shipped, \(failures.count) not: "
                               + failures.map(\.message).joined(separator: "; "))
        }
        return reports
    }

    /// Ships every user's trail every `ship-every` seconds until cancelled, logging what
    /// went and what failed. Without a configuration it waits and looks again.
    func run(stores: DaemonStores, logger: Logger) async {
        let absent = 300
        var every = (try? configuration())?.shipEvery ?? absent
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(every))
            if Task.isCancelled { return }
            // Read once a round: it says both where to ship and when to look again.
            let configuration: FleetConfiguration
            do {
                configuration = try self.configuration()
            } catch {
                if error.code != .notFound { logger.error("fleet: \(error.message)") }
                every = absent
                continue
            }
            every = configuration.shipEvery
            do {
                let reports = try await ship(stores.everyService(), with: configuration)
                let records = reports.map(\.shipped).reduce(0, +)
                if records > 0 { logger.info("fleet: shipped \(records) record(s) of \(reports.count) trail(s)") }
            } catch {
                logger.error("fleet: \(error.message)")
            }
        }
    }
}
