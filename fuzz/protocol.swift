// Fuzz target: the touchgated socket protocol decoder (DaemonProtocol.decode), built by
// `make fuzz` against TouchgateAPI's sources compiled for the fuzzer (no SwiftPM, so the package build is
// untouched). Every input is one line as a peer could send it; the decoder must throw
// FrameError or return a message, never crash, and what it returns must survive a
// round trip through the encoder unchanged.
import Foundation
import TouchgateAPI

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let line = Array(UnsafeBufferPointer(start: data, count: size))
    if let message = try? DaemonProtocol.decode(ClientMessage.self, from: line) {
        let again = try? DaemonProtocol.decode(ClientMessage.self, from: DaemonProtocol.encode(message))
        guard again == message else { fatalError("client message changed in a round trip") }
    }
    if let message = try? DaemonProtocol.decode(DaemonMessage.self, from: line) {
        let again = try? DaemonProtocol.decode(DaemonMessage.self, from: DaemonProtocol.encode(message))
        guard again == message else { fatalError("daemon message changed in a round trip") }
    }
    _ = try? DaemonProtocol.decode(ResultMessage<CountReport>.self, from: line)
    return 0
}
