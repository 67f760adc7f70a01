// Fuzz target: what Touchgate reads back about a reader's own storage, built by
// `make fuzz` with TouchgateService's ReaderLedger.swift alone. Two inputs at once:
// - the stored ledger (JSON in the authenticated state): decoding any bytes must throw or
//   give a ledger that survives a round trip through the encoder unchanged (the ledger is
//   rewritten on every change; one that failed to encode would be dropped);
// - the user name a reader reports for a print on its chip (any bytes: the chip can be
//   written by other software): a name taken for Touchgate's must be exactly what
//   `ChipLabel.username` writes, or that cut short after the nonce, with a nonce of 8
//   lowercase ASCII hex digits as Touchgate draws them.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzReaderLedger(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    if let ledger = try? ReaderLedger.decode(bytes) {
        guard let encoded = try? JSONEncoder().encode(ledger) else { fatalError("a decoded ledger does not encode") }
        guard (try? ReaderLedger.decode(encoded)) == ledger else { fatalError("the ledger changed in a round trip") }
    }
    let username = String(decoding: bytes, as: UTF8.self)
    if let nonce = ChipLabel.nonce(in: username) {
        guard nonce.utf8.count == 8, nonce.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            fatalError("nonce \(nonce.debugDescription) is not 8 lowercase ASCII hex digits")
        }
        guard let user = ChipLabel.user(in: username) else { fatalError("a nonce without a user part") }
        let written = ChipLabel.username(nonce: nonce, user: user)
        guard username == written || (user.isEmpty && username == ChipLabel.prefix + nonce) else {
            fatalError("\(username.debugDescription) taken as Touchgate's \(written.debugDescription)")
        }
    } else if ChipLabel.user(in: username) != nil {
        fatalError("a user part without a nonce")
    }
    return 0
}
