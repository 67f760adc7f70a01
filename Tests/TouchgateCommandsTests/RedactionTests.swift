import Foundation
import Testing
@testable import TouchgateCommands

/// The filter between a command's output and an agent's transcript (``Redaction``): random
/// values, in every form it knows, inside random text, cut into random chunks.
@Suite struct RedactionTests {
    /// A generator with a fixed seed, so that a failure can be replayed.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func filtered(_ text: [UInt8], values: [(String, [UInt8])], chunks: [Int]) -> [UInt8] {
        var redaction = Redaction(values)
        var output: [UInt8] = []
        var offset = 0
        var index = 0
        while offset < text.count {
            let size = max(1, chunks[index % chunks.count])
            output += redaction.filter(Array(text[offset..<min(text.count, offset + size)]))
            offset += size
            index += 1
        }
        return output + redaction.finish()
    }

    /// The forms a program would print, made with Foundation (not the filter's own code).
    static func printed(_ value: [UInt8], prefix: [UInt8]) -> [[UInt8]] {
        let text = String(decoding: value, as: UTF8.self)
        let base64 = Data(prefix + value).base64EncodedString()
        let json = String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self)
        return [value, Array(base64.utf8), Array(base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").utf8),
                Array(value.map { String(format: "%02x", $0) }.joined().utf8),
                Array(value.map { String(format: "%02X", $0) }.joined().utf8),
                Array((text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text).utf8),
                Array(json.utf8)]
    }

    @Test("no form of a value survives, whatever text surrounds it and however the stream is cut")
    func nothingSurvives() {
        var random = Seeded(state: 20261129)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/+=\"\\ .:%".utf8)
        for round in 0..<300 {
            let length = Int.random(in: 12...48, using: &random)
            let value = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            let prefix = (0..<Int.random(in: 0...2, using: &random)).map { _ in UInt8.random(in: 0x20...0x7E, using: &random) }
            var text: [UInt8] = []
            for form in Self.printed(value, prefix: prefix) {
                text += Array("before \(round) ".utf8) + form + Array(" after\n".utf8)
            }
            let chunks = (0..<5).map { _ in Int.random(in: 1...40, using: &random) }
            let output = Self.filtered(text, values: [("V", value)], chunks: chunks)
            let shown = String(decoding: output, as: UTF8.self)
            for form in Self.printed(value, prefix: []) where form.count >= 12 {
                #expect(!shown.contains(String(decoding: form, as: UTF8.self)), "round \(round): \(shown)")
            }
            #expect(!output.contains(value), "round \(round)")
            // The base64 of the value after a prefix, less the characters the prefix shares.
            let shifted = Data(prefix + value).base64EncodedString()
            let core = String(shifted.dropFirst((prefix.count * 8 + 5) / 6).prefix((prefix.count + value.count) * 8 / 6 - (prefix.count * 8 + 5) / 6))
            #expect(core.count < 8 || !shown.contains(core), "round \(round): \(core) in \(shown)")
            #expect(shown.components(separatedBy: "before \(round) ").count == 8, "the text around is kept")
        }
    }

    @Test("text without a value passes unchanged, byte for byte, in any chunks")
    func plainTextPasses() {
        var random = Seeded(state: 7)
        for _ in 0..<100 {
            let text = (0..<Int.random(in: 0...4000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let chunks = (0..<3).map { _ in Int.random(in: 1...700, using: &random) }
            let value = Array("ZZZZ-not-in-the-text-0123456789".utf8)
            #expect(Self.filtered(text, values: [("V", value)], chunks: chunks) == text)
        }
    }

    @Test("a value split across writes, at every cut, is replaced; a prefix of a value that never completes is kept")
    func splitAcrossWrites() {
        let value = Array("ghp_S3cr3tValue0123456789".utf8)
        let text = Array("token=".utf8) + value + Array(";".utf8)
        for cut in 1..<text.count {
            var redaction = Redaction([("GH", value)])
            let output = redaction.filter(Array(text[..<cut])) + redaction.filter(Array(text[cut...])) + redaction.finish()
            #expect(String(decoding: output, as: UTF8.self) == "token=[GH hidden];", "cut at \(cut)")
        }
        var redaction = Redaction([("GH", value)])
        let partial = Array("ghp_S3cr3t".utf8)
        #expect(redaction.filter(partial).isEmpty, "held: it may be the start of the value")
        #expect(redaction.finish() == partial, "and given back at the end")
    }

    @Test("a shorter form is not taken while a longer one can still match: a value that begins another, a padded tail")
    func longestFormWins() {
        let short = Array("abcdefghij0123".utf8)
        let long = Array("abcdefghij0123XYZW-more".utf8)
        let text = Array("<".utf8) + long + Array(">".utf8)
        for cut in 1..<text.count {
            var redaction = Redaction([("A", short), ("B", long)])
            let output = redaction.filter(Array(text[..<cut])) + redaction.filter(Array(text[cut...])) + redaction.finish()
            #expect(String(decoding: output, as: UTF8.self) == "<[B hidden]>", "cut at \(cut)")
        }
    }
}
