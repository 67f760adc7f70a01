import CSodium
import FingerprintKit
import FoundationEssentials
import TouchgatePolicy
import TouchgateVault
import TouchgateAPI

// The ledger's ties to the store, the reader and libsodium; ReaderLedger.swift itself
// needs only Foundation, so that `make fuzz` can build its decoder alone.
extension ReaderLedger {
    static func key(_ info: ReaderInfo) -> String { key(driver: info.driver, deviceID: info.deviceID) }

    // MARK: Reading and changing it

    /// The ledger of `info`'s reader as stored (empty when none).
    static func read(_ state: StateStore, _ info: ReaderInfo) throws -> ReaderLedger {
        try decode(state.state(key(info)))
    }

    /// Changes the ledger under `key` inside `transaction`; an empty ledger is removed.
    static func update(_ key: String, in transaction: StoreTransaction, _ change: (inout ReaderLedger) -> Void) throws {
        try transaction.updateState(key) { data in
            var ledger = (try? decode(data)) ?? ReaderLedger()
            change(&ledger)
            data = ledger == ReaderLedger() ? nil : try? JSONEncoder().encode(ledger)
        }
    }
}

extension ChipLabel {
    /// A fresh nonce: 8 lowercase hex digits from libsodium's generator.
    static func newNonce() -> String {
        var bytes = [UInt8](repeating: 0, count: 4)
        randombytes_buf(&bytes, bytes.count)
        return Hex.encode(bytes)
    }
}

extension ReaderPrintReport {
    /// What a reader says about one of its prints.
    init(_ print: Print, reader info: ReaderInfo) {
        let day = print.enrollDate.flatMap { date -> String? in
            guard let year = date.year, let month = date.month, let day = date.day else { return nil }
            return "\(year.zeroPadded(4))-\(month.zeroPadded(2))-\(day.zeroPadded(2))"
        }
        self.init(driver: info.driver, deviceID: info.deviceID,
                  finger: print.finger == .unknown ? nil : print.finger.name, chipUser: print.username,
                  enrolled: day, touchgate: ChipLabel.nonce(in: print.username) != nil)
    }

}
