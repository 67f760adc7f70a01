// Fuzz target: decoders of records Touchgate stores and reads back, built by `make fuzz`
// against TouchgatePolicy's sources compiled for the fuzzer: the policy core's PolicyState JSON (as
// VaultPolicyStateStore keeps it), an enrollment state and a stored access policy. A
// decoder must throw or return a value, never crash; a value it returns must survive a
// round trip through the encoder unchanged.
import Foundation
import TouchgatePolicy

private func roundTrip<T: Codable & Equatable>(_ type: T.Type, _ bytes: Data) {
    guard let value = try? JSONDecoder().decode(T.self, from: bytes) else { return }
    guard let encoded = try? JSONEncoder().encode(value) else {
        fatalError("\(T.self) decoded but does not encode")
    }
    guard (try? JSONDecoder().decode(T.self, from: encoded)) == value else {
        fatalError("\(T.self) changed in a round trip")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzStoredState(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    roundTrip(PolicyState.self, bytes)
    roundTrip(EnrollmentState.self, bytes)
    roundTrip([AccessPolicy].self, bytes)
    return 0
}
