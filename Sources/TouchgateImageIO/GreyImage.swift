import CZlib
public import FoundationEssentials

/// An 8-bit grey image, and the two file formats `touchgate capture` writes: binary PGM
/// (`P5`) and PNG (grey, 8 bits). Reading PNG accepts the common 8-bit colour types so
/// that reference images can be compared pixel by pixel.
public struct GreyImage: Equatable, Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Row-major grey values, `width * height` of them.
    public let pixels: [UInt8]

    /// An image; `pixels.count` must be `width * height`.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height, "pixel count does not match the size")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Errors reading or writing image files.
    public enum FormatError: Error, Equatable, CustomStringConvertible {
        /// The file is not in a format this reader understands.
        case unsupported(String)
        /// The file is cut short or damaged.
        case damaged(String)

        public var description: String {
            switch self {
            case .unsupported(let what): return "unsupported image: \(what)"
            case .damaged(let what): return "damaged image: \(what)"
            }
        }
    }

    // MARK: PGM

    /// Binary PGM (`P5`, maxval 255).
    public func pgmData() -> Data {
        var data = Data("P5\n\(width) \(height)\n255\n".utf8)
        data.append(contentsOf: pixels)
        return data
    }

    /// Reads a binary PGM with maxval 255.
    public init(pgm data: Data) throws {
        let bytes = [UInt8](data)
        var index = 0
        func token() throws -> String {
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "#") {
                    while index < bytes.count && bytes[index] != 0x0A { index += 1 }
                } else if [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) {
                    index += 1
                } else { break }
            }
            let start = index
            while index < bytes.count && ![0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
            guard start < index else { throw FormatError.damaged("PGM header is cut short") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        guard try token() == "P5" else { throw FormatError.unsupported("not a binary PGM (P5)") }
        guard let width = Int(try token()), let height = Int(try token()), let maxval = Int(try token()),
              width > 0, height > 0 else { throw FormatError.damaged("bad PGM size") }
        guard maxval == 255 else { throw FormatError.unsupported("PGM maxval \(maxval), only 255 is read") }
        index += 1  // the single whitespace after maxval
        guard bytes.count - index >= width * height else { throw FormatError.damaged("PGM pixels are cut short") }
        self.init(width: width, height: height, pixels: Array(bytes[index..<index + width * height]))
    }

    // MARK: PNG

    /// PNG, grey 8 bits, no interlace.
    public func pngData() -> Data {
        var raw = [UInt8]()
        raw.reserveCapacity((width + 1) * height)
        for row in 0..<height {
            raw.append(0)  // filter: none
            raw.append(contentsOf: pixels[row * width..<(row + 1) * width])
        }
        var header = [UInt8]()
        header += UInt32(width).bigEndianBytes + UInt32(height).bigEndianBytes
        header += [8, 0, 0, 0, 0]  // depth 8, grey, deflate, adaptive filters, no interlace
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", Self.deflate(raw))
        png.appendChunk("IEND", [])
        return png
    }

    /// Reads an 8-bit, non-interlaced PNG and converts it to grey
    /// (colour images: the mean of R, G and B; alpha is ignored).
    public init(png data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count > 8, bytes[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw FormatError.unsupported("not a PNG file")
        }
        var offset = 8
        var width = 0, height = 0, colorType = 0
        var compressed = [UInt8]()
        while offset + 8 <= bytes.count {
            let length = Int(UInt32(bigEndianBytes: bytes[offset..<offset + 4]))
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            guard offset + 12 + length <= bytes.count else { throw FormatError.damaged("PNG chunk \(type) is cut short") }
            let body = bytes[offset + 8..<offset + 8 + length]
            switch type {
            case "IHDR":
                width = Int(UInt32(bigEndianBytes: body.prefix(4)))
                height = Int(UInt32(bigEndianBytes: body.dropFirst(4).prefix(4)))
                let depth = body[body.startIndex + 8]
                colorType = Int(body[body.startIndex + 9])
                guard depth == 8, body[body.startIndex + 12] == 0 else {
                    throw FormatError.unsupported("PNG depth \(depth) or interlacing")
                }
            case "IDAT":
                compressed += body
            default:
                break
            }
            offset += 12 + length
        }
        let channels: Int
        switch colorType {
        case 0: channels = 1
        case 2: channels = 3
        case 4: channels = 2
        case 6: channels = 4
        default: throw FormatError.unsupported("PNG colour type \(colorType)")
        }
        let stride = width * channels
        let raw = try Self.inflate(compressed, expected: (stride + 1) * height)
        guard raw.count >= (stride + 1) * height else { throw FormatError.damaged("PNG pixels are cut short") }
        var rows = [UInt8](repeating: 0, count: stride * height)
        for row in 0..<height {
            let filter = raw[row * (stride + 1)]
            for x in 0..<stride {
                let value = raw[row * (stride + 1) + 1 + x]
                let left = x >= channels ? Int(rows[row * stride + x - channels]) : 0
                let up = row > 0 ? Int(rows[(row - 1) * stride + x]) : 0
                let upLeft = row > 0 && x >= channels ? Int(rows[(row - 1) * stride + x - channels]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = left
                case 2: predictor = up
                case 3: predictor = (left + up) / 2
                case 4:
                    let p = left + up - upLeft
                    let pa = abs(p - left), pb = abs(p - up), pc = abs(p - upLeft)
                    predictor = pa <= pb && pa <= pc ? left : (pb <= pc ? up : upLeft)
                default: throw FormatError.damaged("PNG filter \(filter)")
                }
                rows[row * stride + x] = UInt8(truncatingIfNeeded: Int(value) + predictor)
            }
        }
        var grey = [UInt8](repeating: 0, count: width * height)
        for index in 0..<width * height {
            let base = index * channels
            grey[index] = channels >= 3
                ? UInt8((Int(rows[base]) + Int(rows[base + 1]) + Int(rows[base + 2])) / 3)
                : rows[base]
        }
        self.init(width: width, height: height, pixels: grey)
    }

    private static func deflate(_ input: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(input.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = compress2(&output, &length, input, uLong(input.count), Z_BEST_COMPRESSION)
        precondition(status == Z_OK, "zlib compress2 failed with \(status)")
        return Array(output.prefix(Int(length)))
    }

    private static func inflate(_ input: [UInt8], expected: Int) throws -> [UInt8] {
        var length = uLongf(expected)
        var output = [UInt8](repeating: 0, count: expected)
        let status = uncompress(&output, &length, input, uLong(input.count))
        guard status == Z_OK else { throw FormatError.damaged("PNG data does not inflate (zlib \(status))") }
        return Array(output.prefix(Int(length)))
    }
}

extension UInt32 {
    fileprivate var bigEndianBytes: [UInt8] {
        [UInt8(self >> 24), UInt8(self >> 16 & 0xFF), UInt8(self >> 8 & 0xFF), UInt8(self & 0xFF)]
    }

    fileprivate init<S: Sequence>(bigEndianBytes bytes: S) where S.Element == UInt8 {
        self = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }
}

extension Data {
    fileprivate mutating func appendChunk(_ type: String, _ body: [UInt8]) {
        let typeBytes = Array(type.utf8)
        append(contentsOf: UInt32(body.count).bigEndianBytes)
        append(contentsOf: typeBytes)
        append(contentsOf: body)
        let crc = (typeBytes + body).withUnsafeBufferPointer { crc32(0, $0.baseAddress, uInt($0.count)) }
        append(contentsOf: UInt32(crc).bigEndianBytes)
    }
}
