// Fuzz target: the thin `touchgate` front's JSON (Sources/touchgate/JSONText.swift), which
// reads what touchgated sends and writes what `--json` prints, checked against Foundation's
// reader and WireCoding's writer. Every input is one line as a daemon could send it:
// what the front accepts as an object Foundation must read as one, with the same strings;
// and any text the front writes as a JSON string must be byte for byte what WireCoding
// writes, and read back unchanged.
import Foundation
import TouchgateAPI

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzFrontJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let line = Array(UnsafeBufferPointer(start: data, count: size))
    if let object = JSONObject(line: line) {
        guard let theirs = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
            fatalError("the front read an object Foundation does not: \(String(decoding: line, as: UTF8.self))")
        }
        for member in object.members {
            guard let string = object.string(member.key) else { continue }
            guard theirs[member.key] as? String == string else { fatalError("the value of \(member.key) reads differently") }
        }
        _ = object.integers("versions")
        _ = object.object("event")?.string("message")
    }
    if let text = String(validating: line, as: UTF8.self) {
        let written = JSONText.quoted(text)
        guard written == Array(WireCoding.line(text).utf8) else { fatalError("the front escapes differently from WireCoding") }
        guard JSONText.string(written[...]) == text else { fatalError("a written string does not read back") }
    }
    return 0
}
