import Testing
import TouchgatePolicy

@Suite("Hex: the one lowercase hexadecimal encoder and decoder")
struct HexTests {
    @Test("encodes two lowercase digits a byte, high nibble first")
    func encodes() {
        #expect(Hex.encode([]) == "")
        #expect(Hex.encode([0x00, 0x0a, 0xa0, 0xff, 0x7f, 0x10]) == "000aa0ff7f10")
        #expect(Hex.encode(0...255 as ClosedRange<UInt8>).count == 512)
        #expect(Hex.encode("AZ".utf8) == "415a")
    }

    @Test("decodes what it encodes, for every byte value")
    func roundTrips() {
        let all = [UInt8](0...255)
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.decode("") == [])
    }

    @Test("accepts upper-case digits and rejects anything else")
    func decodesStrictly() {
        #expect(Hex.decode("0aFf") == [0x0a, 0xff])
        #expect(Hex.decode("ABCDEF") == [0xab, 0xcd, 0xef])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("0x00") == nil)
        #expect(Hex.decode("00 ff") == nil)
        #expect(Hex.decode("é0") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode("g0") == nil)
    }
}
