// Fuzz target: the PAM module's reader of daemon answers (pam/reader.c, pam/json.c), C code
// that runs inside sudo and login, checked against the daemon's own rules and Foundation.
// The input is bytes as a daemon (or an impostor on its socket) could send them:
// - framing: a line is taken only with its newline within the limit, as FrameBuffer takes it;
// - every line the reader accepts as an object is well-formed UTF-8 and Foundation reads
//   the same object, with the same strings, once control characters are made '?';
// - a decoded string never holds a control character (C0, DEL, C1) and, cut to a small
//   buffer, is a prefix of the whole one, cut between characters;
// - a message is taken for request 7 only when its id is 7, or 0 for a failure.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func touchgateFuzzPAMReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkFraming(bytes)
    let line = Array(bytes.prefix { $0 != UInt8(ascii: "\n") })
    line.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { text in
            let start = text.baseAddress ?? UnsafePointer(bitPattern: 1)!
            checkLine(line, tg_span(start: start, end: start + text.count))
        }
    }
    return 0
}

/// The limit is small here so the fuzzer reaches both sides of it.
private func checkFraming(_ bytes: [UInt8]) {
    for limit in [1, 16, 64, bytes.count, bytes.count + 1] where limit > 0 {
        var length = 0
        let frame = bytes.withUnsafeBytes { raw in
            tg_frame_line(raw.baseAddress?.assumingMemoryBound(to: CChar.self) ?? UnsafePointer(bitPattern: 1)!,
                          bytes.count, limit, &length)
        }
        let newline = bytes.prefix(limit).firstIndex(of: UInt8(ascii: "\n"))
        switch frame {
        case TG_FRAME_LINE:
            guard let newline, length == newline, length + 1 <= limit else { fatalError("a line past the limit or cut short") }
        case TG_FRAME_TOO_LONG:
            guard newline == nil, bytes.count >= limit else { fatalError("a line refused within the limit") }
        default:
            guard newline == nil, bytes.count < limit else { fatalError("more asked for while a line was there") }
        }
    }
}

/// `text` with every control character made '?', as the module shows it.
private func shown(_ text: String) -> String {
    String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "?" : scalar
    }))
}

private func decoded(_ value: tg_span, size: Int) -> [UInt8]? {
    var out = [CChar](repeating: 0, count: size)
    guard tg_json_string(value, &out, size) == 1 else { return nil }
    return out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
}

private func checkLine(_ line: [UInt8], _ span: tg_span) {
    let ours = tg_json_is_object(span.start, span.end) == 1
    guard ours else {
        guard tg_message_kind(span, 7) == TG_MESSAGE_BROKEN else { fatalError("a message taken from a line that is not one") }
        return
    }
    guard String(validating: line, as: UTF8.self) != nil else { fatalError("accepted bytes that are not UTF-8") }
    // Foundation refuses an escaped lone surrogate, which the module reads as '?'.
    let theirs = (try? JSONSerialization.jsonObject(with: Data(line), options: [.fragmentsAllowed])) as? [String: Any]
    let loneSurrogate = line.count >= 3 && (0..<(line.count - 2)).contains { index in
        line[index] == UInt8(ascii: "\\") && line[index + 1] == UInt8(ascii: "u")
            && (line[index + 2] | 0x20) == UInt8(ascii: "d")
    }
    guard theirs != nil || loneSurrogate || hasHugeNumber(line) else {
        fatalError("the module read an object Foundation does not: \(String(decoding: line, as: UTF8.self))")
    }
    checkStrings(span, theirs, loneSurrogate: loneSurrogate)
    for key in ["event", "error"] {
        var inner = tg_span()
        if tg_json_member(span, key, &inner) == 1 {
            checkStrings(inner, theirs?[key] as? [String: Any], loneSurrogate: loneSurrogate)
        }
    }
    let kind = tg_message_kind(span, 7)
    if kind != TG_MESSAGE_BROKEN {
        var field = tg_span()
        var id: Int64 = -1
        guard tg_json_member(span, "id", &field) == 1, tg_json_integer(field, &id) == 1,
              id == 7 || (id == 0 && kind == TG_MESSAGE_FAILURE) else { fatalError("another request's message taken") }
    }
}

/// Whether `line` has a number outside its strings with an exponent (an `e` after a digit)
/// or over 15 digits:
/// Foundation refuses one beyond a double's range, the module (which reads only integers
/// within 64 bits) only skips it.
private func hasHugeNumber(_ line: [UInt8]) -> Bool {
    var (inString, escaped, digits) = (false, false, 0)
    for byte in line {
        if inString {
            if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            continue
        }
        switch byte {
        case UInt8(ascii: "\""): inString = true; digits = 0
        case UInt8(ascii: "e"), UInt8(ascii: "E"): if digits > 0 { return true }
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1; if digits > 15 { return true }
        default: digits = 0
        }
    }
    return false
}

/// The strings the module reads from `object` (a top-level message, its event or error).
private func checkStrings(_ object: tg_span, _ theirs: [String: Any]?, loneSurrogate: Bool) {
    for key in ["kind", "message", "code", "x"] {
        var value = tg_span()
        guard tg_json_member(object, key, &value) == 1, let whole = decoded(value, size: 4096) else { continue }
        guard let text = String(validating: whole, as: UTF8.self) else { fatalError("decoded \(key) is not UTF-8") }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            fatalError("a control character passed in \(key)")
        }
        if !loneSurrogate, whole.count < 4095, let foundation = theirs?[key] as? String, shown(foundation) != text {
            fatalError("\(key) reads differently from Foundation")
        }
        guard let cut = decoded(value, size: 8), String(validating: cut, as: UTF8.self) != nil,
              whole.starts(with: cut) else { fatalError("a cut string is not a prefix cut between characters") }
    }
}
