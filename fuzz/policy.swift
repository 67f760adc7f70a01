// Fuzz target: the access-policy string parser (AccessPolicy(parsing:)), built by
// `make fuzz` against TouchgatePolicy's sources compiled for the fuzzer. The parser must throw
// PolicyParseError or return a policy, never crash; a policy it returns must print to a
// string that parses back to the same policy (the stored form is canonical).
import TouchgatePolicy

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzPolicy(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let policy = try? AccessPolicy(parsing: text) else { return 0 }
    let printed = policy.description
    guard (try? AccessPolicy(parsing: printed)) == policy else {
        fatalError("policy changed in a round trip through its string form")
    }
    guard printed.unicodeScalars.count <= text.unicodeScalars.count else {
        fatalError("the canonical form is longer than the accepted input")
    }
    return 0
}
