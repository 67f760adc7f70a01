public import Foundation

/// A USB conversation recorded by usbmon into a pcapng file (libfprint's `custom.pcapng`
/// recordings), to read and to edit before umockdev replays it.
///
/// Only what the tests need: the blocks are kept as they are, and each enhanced packet block
/// is read as one usbmon packet (the 64-byte header of `DLT_USB_LINUX_MMAPPED`, then the
/// data). Edits keep every length unchanged, so block and capture lengths stay right.
public struct UsbCapture: Sendable {
    /// One usbmon packet: the submission (`S`) or completion (`C`) of a transfer.
    public struct Packet: Sendable {
        /// `S` for a submission, `C` for a completion.
        public let kind: Character
        /// 2 for control, 3 for bulk, 1 for interrupt.
        public let transferType: UInt8
        /// The endpoint address: 0x80 set for IN.
        public let endpoint: UInt8
        /// The setup bytes of a control submission (bmRequestType, bRequest, …).
        public let setup: [UInt8]
        /// The data the packet carries.
        public var data: [UInt8]

        /// A bulk OUT submission: what the host sent.
        public var isBulkOut: Bool { kind == "S" && transferType == 3 && endpoint & 0x80 == 0 }
        /// A bulk IN completion: what the device answered.
        public var isBulkIn: Bool { kind == "C" && transferType == 3 && endpoint & 0x80 != 0 }
    }

    /// Whether the block at each position is a packet, and which.
    private enum Block: Sendable {
        case other(Data)
        case packet(header: Data, packet: Packet, trailer: Data)
    }

    private var blocks: [Block] = []

    /// The packets in order.
    public var packets: [Packet] {
        blocks.compactMap { if case .packet(_, let packet, _) = $0 { packet } else { nil } }
    }

    /// Reads a pcapng file; throws when it is not one this reader understands.
    public init(contentsOf url: URL) throws {
        let data = try Data(contentsOf: url)
        var offset = 0
        func word(_ at: Int) -> Int {
            Int(data[at]) | Int(data[at + 1]) << 8 | Int(data[at + 2]) << 16 | Int(data[at + 3]) << 24
        }
        while offset + 8 <= data.count {
            let type = word(offset), length = word(offset + 4)
            guard length >= 12, offset + length <= data.count else { throw UsbCaptureError("a block runs past the end") }
            let block = data[offset..<(offset + length)]
            if type == 6 {
                // Enhanced packet block: 28 bytes of header, the captured bytes, padding, the length again.
                let captured = word(offset + 20)
                let start = offset + 28
                guard captured >= 64, start + captured <= offset + length else { throw UsbCaptureError("not a usbmon packet") }
                let usbmon = Array(data[start..<(start + captured)])
                let kind = Character(UnicodeScalar(usbmon[8]))
                let packet = Packet(kind: kind, transferType: usbmon[9], endpoint: usbmon[10],
                                    setup: Array(usbmon[40..<48]), data: Array(usbmon[64...]))
                blocks.append(.packet(header: Data(data[offset..<(start + 64)]), packet: packet,
                                      trailer: Data(data[(start + captured)..<(offset + length)])))
            } else {
                blocks.append(.other(Data(block)))
            }
            offset += length
        }
    }

    /// The file's bytes.
    public var data: Data {
        var output = Data()
        for block in blocks {
            switch block {
            case .other(let bytes):
                output.append(bytes)
            case let .packet(header, packet, trailer):
                output.append(header)
                output.append(contentsOf: packet.data)
                output.append(trailer)
            }
        }
        return output
    }

    /// Leaves out the packets at `range` (positions among ``packets``).
    public mutating func removePackets(_ range: Range<Int>) {
        var index = 0
        blocks.removeAll { block in
            guard case .packet = block else { return false }
            defer { index += 1 }
            return range.contains(index)
        }
    }

    /// Rewrites the data of every packet from position `start` on with `edit`, which returns
    /// whether it changed anything; the data's length must stay the same.
    /// - Returns: how many packets `edit` changed.
    @discardableResult
    public mutating func editPackets(from start: Int = 0, _ edit: (Int, inout Packet) throws -> Bool) rethrows -> Int {
        var index = 0
        var changed = 0
        for position in blocks.indices {
            guard case .packet(let header, var packet, let trailer) = blocks[position] else { continue }
            defer { index += 1 }
            guard index >= start else { continue }
            let length = packet.data.count
            if try edit(index, &packet) {
                precondition(packet.data.count == length, "an edit changed a packet's length")
                blocks[position] = .packet(header: header, packet: packet, trailer: trailer)
                changed += 1
            }
        }
        return changed
    }
}

/// A recording that does not hold what a test expects of it.
public struct UsbCaptureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Array where Element == UInt8 {
    /// Replaces every occurrence of `old` with `new` (of the same length); returns how many.
    @discardableResult
    public mutating func replaceAll(_ old: [UInt8], with new: [UInt8]) -> Int {
        precondition(old.count == new.count && !old.isEmpty)
        var count = 0
        var index = startIndex
        while index + old.count <= endIndex {
            if self[index..<(index + old.count)].elementsEqual(old) {
                replaceSubrange(index..<(index + old.count), with: new)
                index += old.count
                count += 1
            } else {
                index += 1
            }
        }
        return count
    }
}
