// Fuzz target: the socket's receive buffer (TouchgateSocket's FrameBuffer), built by
// `make fuzz` with FrameBuffer.swift and TouchgateWire's sources. The input is a script of
// operations a connection's reader performs: receive a chunk (arbitrary bytes, or a run of
// one byte long enough to reach the 64 KiB limits), take the next line, take a secret of
// some length, or a receive that ends the stream or fails. After every step the buffer
// must agree with a plain model of the byte stream (lines split at the first newline
// within the limit, secrets taken whole, an over-long line refused), and every byte it
// has handed out must already be zero in its memory.
//
// The guarded memory of TouchgateVault is replaced here by plain allocations that the
// harness can inspect, so AddressSanitizer checks every access FrameBuffer makes.
import Foundation

/// The harness's stand-in for TouchgateVault's guarded buffer: plain memory, remembered
/// so the harness can check what FrameBuffer leaves in it.
final class GuardedBuffer {
    nonisolated(unsafe) static var latest: UnsafeMutableRawBufferPointer?
    let capacity: Int
    let bytes: UnsafeMutableRawBufferPointer

    init(capacity: Int) {
        self.capacity = capacity
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        Self.latest = bytes
    }

    deinit {
        bytes.deallocate()
    }
}

/// The stand-in for TouchgateVault's secret bytes: a copy.
final class SecureBytes {
    let copy: [UInt8]
    init(copying bytes: some Collection<UInt8>) { copy = Array(bytes) }
    var count: Int { copy.count }
}

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
    let buffer = FrameBuffer()
    guard let memory = GuardedBuffer.latest else { fatalError("FrameBuffer allocated no guarded buffer") }
    var model: [UInt8] = []
    var highWater = 0
    let lineLimit = DaemonProtocol.maximumLineBytes
    while !script.done {
        switch script.byte() % 6 {
        case 0, 1:
            // A receive: arbitrary bytes (op 0), or a run of one byte up to 192 KiB (op 1).
            let chunk: [UInt8]
            if script.byte() & 1 == 0 {
                let length = min(script.number(1), max(0, script.bytes.count - script.offset))
                chunk = Array(script.bytes[script.offset..<script.offset + length])
                script.offset += length
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
                let secret = try buffer.takeSecret(length)
                guard (0...DaemonProtocol.maximumSecretBytes).contains(length) else {
                    fatalError("secret length \(length) accepted")
                }
                if let secret {
                    guard model.count >= length, secret.copy == Array(model.prefix(length)) else {
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
