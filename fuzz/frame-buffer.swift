// Fuzz target: the socket's receive buffer (TouchgateBasics' FrameBuffer, which both ends of
// the socket and the thin front read through), built by `make fuzz` against the wire sources.
// The input is a script of operations a connection's reader performs: receive a chunk (arbitrary bytes, or a run of
// one byte long enough to reach the 64 KiB limits), take the next line, take a secret of
// some length, or a receive that ends the stream or fails. After every step the buffer
// must agree with a plain model of the byte stream (lines split at the first newline
// within the limit, secrets taken whole, an over-long line refused), and every byte it
// has handed out must already be zero in its memory.
//
// The buffer works over memory its owner provides (guarded memory in TouchgateSocket,
// locked pages in the thin front); here it is plain memory the harness can inspect, so
// AddressSanitizer checks every access FrameBuffer makes.
import Foundation
import TouchgateAPI

/// As many zero bytes as the buffer holds, to compare with.
private let zeros: UnsafeMutableRawBufferPointer = {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: FrameBuffer.capacity, alignment: 16)
    bytes.initializeMemory(as: UInt8.self, repeating: 0)
    return bytes
}()

private struct Script {
    var bytes: UnsafeBufferPointer<UInt8>
    var offset = 0
    var done: Bool { offset >= bytes.count }
    mutating func byte() -> UInt8 {
        defer { offset += 1 }
        return offset < bytes.count ? bytes[offset] : 0
    }
    mutating func number(_ width: Int) -> Int {
        (0..<width).reduce(0) { value, _ in value << 8 | Int(byte()) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzFrameBuffer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var script = Script(bytes: UnsafeBufferPointer(start: data, count: size))
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: FrameBuffer.capacity, alignment: 16)
    memory.initializeMemory(as: UInt8.self, repeating: 0)
    defer { memory.deallocate() }
    let buffer = FrameBuffer(memory: memory)
    var model: [UInt8] = []
    var highWater = 0
    let lineLimit = DaemonProtocol.maximumLineBytes
    while !script.done {
        switch script.byte() % 6 {
        case 0, 1:
            // A receive: arbitrary bytes (op 0), or a run of one byte up to 192 KiB (op 1).
            let chunk: [UInt8]
            if script.byte() & 1 == 0 {
                let wanted = script.number(1)
                // `number` reads zeros past the end, moving the offset on: clamp before slicing.
                let start = min(script.offset, script.bytes.count)
                let length = min(wanted, script.bytes.count - start)
                chunk = Array(script.bytes[start..<start + length])
                script.offset = start + length
            } else {
                chunk = [UInt8](repeating: script.byte(), count: script.number(1) * 768 + script.number(1))
            }
            let room = FrameBuffer.capacity - model.count
            let result = buffer.fill { free in
                guard free.count == room else { fatalError("free space \(free.count), model says \(room)") }
                let written = min(chunk.count, free.count)
                free.copyBytes(from: chunk[..<written])
                return written
            }
            if room == 0 {
                guard result < 0 else { fatalError("a full buffer accepted a receive") }
            } else {
                guard result == min(chunk.count, room) else { fatalError("fill returned \(result)") }
                model += chunk.prefix(result)
            }
        case 2:
            let line: [UInt8]?
            do {
                line = try buffer.nextLine()
            } catch {
                guard model.count >= lineLimit, !model.prefix(lineLimit).contains(UInt8(ascii: "\n")) else {
                    fatalError("oversized with a newline within the limit (\(model.count) pending)")
                }
                return 0  // the connection ends here
            }
            if let newline = model.prefix(lineLimit).firstIndex(of: UInt8(ascii: "\n")) {
                guard line == Array(model[..<newline]) else { fatalError("the line differs from the stream") }
                model.removeFirst(newline + 1)
            } else {
                guard line == nil, model.count < lineLimit else { fatalError("a line without a newline") }
            }
        case 3:
            var length = script.number(3) - 0x40_0000
            if script.byte() & 1 == 0 { length = length & 0x1_FFFF }  // mostly lengths near the limit
            do {
                let secret = try buffer.takeSecret(length) { Array($0) }
                guard (0...DaemonProtocol.maximumSecretBytes).contains(length) else {
                    fatalError("secret length \(length) accepted")
                }
                if let secret {
                    guard model.count >= length, secret == Array(model.prefix(length)) else {
                        fatalError("the secret differs from the stream")
                    }
                    model.removeFirst(length)
                } else {
                    guard model.count < length else { fatalError("a complete secret withheld") }
                }
            } catch {
                guard !(0...DaemonProtocol.maximumSecretBytes).contains(length) else {
                    fatalError("secret length \(length) refused")
                }
            }
        case 4:
            // A receive that sees the end of the stream: nothing changes.
            guard buffer.fill({ _ in 0 }) == 0 || model.count == FrameBuffer.capacity else { fatalError("end of stream") }
        default:
            // A receive that fails: returned as is, nothing changes.
            let result = buffer.fill { _ in -104 }
            guard result == -104 || (model.count == FrameBuffer.capacity && result == -1) else {
                fatalError("a failed receive returned \(result)")
            }
        }
        guard buffer.pending == model.count else { fatalError("pending \(buffer.pending), model \(model.count)") }
        // What is pending is the stream's next bytes; what was handed out is zero.
        guard model.withUnsafeBytes({ memcmp(memory.baseAddress!, $0.baseAddress!, model.count) }) == 0 || model.isEmpty else {
            fatalError("the buffer holds other bytes")
        }
        if highWater > model.count,
           memcmp(memory.baseAddress! + model.count, zeros.baseAddress!, highWater - model.count) != 0 {
            fatalError("consumed bytes were not wiped")
        }
        highWater = model.count
    }
    return 0
}
