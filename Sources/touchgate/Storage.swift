import Foundation
import TouchgateVault

/// Opens Touchgate's data for a command.
enum Storage {
    /// The print store at `$XDG_DATA_HOME/touchgate`.
    static func printStore() throws -> PrintStore {
        let database = try TouchgateDatabase(location: StoreLocation.fromEnvironment())
        return PrintStore(database: database)
    }
}
