import CFPrint
public import FoundationEssentials

/// An enrolled fingerprint as a value: libfprint's serialized template plus what it
/// says about itself.
///
/// For image readers the template holds minutiae, which are biometric data; it never
/// appears in ``debugDescription``, in string interpolation or in a mirror (`dump`).
/// Prints only match on the reader (driver and device id) that made them.
public struct Print: Sendable, Hashable, CustomDebugStringConvertible, CustomReflectable {
    /// `fp_print_serialize` output (an `FP3…` blob).
    public let serialized: [UInt8]
    /// Which finger.
    public let finger: Finger
    /// The user name stored in the print, if any.
    public let username: String?
    /// The description stored in the print, if any (`fp_print_get_description`). Match-on-chip
    /// drivers keep it on the reader with the print, so other programs listing the reader see it.
    public let description: String?
    /// The enrollment date stored in the print (a calendar day), if any.
    public let enrollDate: DateComponents?
    /// Driver of the reader that made it.
    public let driver: String
    /// Device id of the reader that made it.
    public let deviceID: String
    /// Whether the template is held on the reader (match-on-chip storage).
    public let isDeviceStored: Bool
    /// What `fp_print_equal` compares: the print type, driver, device id and the template
    /// data (its GVariant type and normal-form bytes). Metadata is left out.
    private let identity: [UInt8]

    /// Reads a serialized print back.
    /// - Throws: ``FingerprintError/invalidPrintData(detail:)`` for damaged or foreign data.
    public init(serialized: [UInt8]) async throws {
        self = try await GLibLoop.shared.run {
            let print = try Print.deserialize(serialized)
            defer { g_object_unref(UnsafeMutableRawPointer(print)) }
            return try Print(fpPrint: print)
        }
    }

    /// Snapshots a libfprint print. GLib thread only.
    init(fpPrint print: OpaquePointer) throws {
        var data: UnsafeMutablePointer<guchar>?
        var length: gsize = 0
        _ = try GErrorFunnel.check { fp_print_serialize(print, &data, &length, $0) }
        defer { g_free(data) }
        serialized = data.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
        identity = Self.identity(of: serialized)
        finger = Finger(rawValue: Int32(fp_print_get_finger(print).rawValue)) ?? .unknown
        username = fp_print_get_username(print).map { String(cString: $0) }
        description = fp_print_get_description(print).map { String(cString: $0) }
        // A print serialized without a date deserializes with a GDate that g_date_valid accepts
        // but whose day is 0 (seen with fpcmoc's prints), so the calendar date is checked too.
        if let date = fp_print_get_enroll_date(print), g_date_valid(date) != 0,
           g_date_valid_dmy(g_date_get_day(date), g_date_get_month(date), g_date_get_year(date)) != 0 {
            enrollDate = DateComponents(year: Int(g_date_get_year(date)),
                                        month: Int(g_date_get_month(date).rawValue),
                                        day: Int(g_date_get_day(date)))
        } else {
            enrollDate = nil
        }
        driver = String(cString: fp_print_get_driver(print))
        deviceID = String(cString: fp_print_get_device_id(print))
        isDeviceStored = fp_print_get_device_stored(print) != 0
    }

    /// Prints are equal as libfprint's `fp_print_equal` finds them: same kind of print,
    /// same driver and device id, same template data. Username, description, finger, date
    /// and whether the print is stored on the reader do not count, so two serializations
    /// of one print, or a reader's print listed back with other metadata, are equal.
    public static func == (lhs: Print, rhs: Print) -> Bool {
        lhs.identity == rhs.identity
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(identity)
    }

    /// The bytes ``==`` compares, read from a `fp_print_serialize` blob (`FP3` then the
    /// GVariant `(issbymsmsia{sv}v)`: type, driver, device id, device-stored, finger,
    /// username, description, date, metadata, data). Blobs of another form compare whole.
    static func identity(of serialized: [UInt8]) -> [UInt8] {
        guard serialized.starts(with: Array("FP3".utf8)),
              let type = g_variant_type_new("(issbymsmsia{sv}v)") else { return serialized }
        defer { g_variant_type_free(type) }
        let body = Array(serialized.dropFirst(3))
        guard let bytes = body.withUnsafeBytes({ g_bytes_new($0.baseAddress, gsize($0.count)) }) else { return serialized }
        defer { g_bytes_unref(bytes) }
        guard let whole = g_variant_ref_sink(g_variant_new_from_bytes(type, bytes, 0)) else { return serialized }
        defer { g_variant_unref(whole) }
        func child(_ index: Int) -> OpaquePointer { g_variant_get_child_value(whole, gsize(index)) }
        let kind = child(0), driver = child(1), deviceID = child(2), boxed = child(9)
        defer { for value in [kind, driver, deviceID, boxed] { g_variant_unref(value) } }
        guard let data = g_variant_get_variant(boxed) else { return serialized }
        defer { g_variant_unref(data) }
        guard let normal = g_variant_get_normal_form(data) else { return serialized }
        defer { g_variant_unref(normal) }
        var key: [UInt8] = []
        withUnsafeBytes(of: g_variant_get_int32(kind)) { key += $0 }
        for text in [g_variant_get_string(driver, nil), g_variant_get_string(deviceID, nil),
                     g_variant_get_type_string(normal)] {
            key += Array(String(cString: text!).utf8) + [0]
        }
        if let start = g_variant_get_data(normal) {
            key += UnsafeRawBufferPointer(start: start, count: Int(g_variant_get_size(normal)))
        }
        return key
    }

    /// A new libfprint print from serialized bytes; the caller owns the reference. GLib thread only.
    static func deserialize(_ bytes: [UInt8]) throws -> OpaquePointer {
        // fp_print_deserialize asserts (aborts the process) on 3 bytes or fewer.
        guard bytes.count > 3 else {
            throw FingerprintError.invalidPrintData(detail: "\(bytes.count) bytes is too short for a print")
        }
        if bytes.starts(with: Array("FP3".utf8)), !isNormalForm(bytes) {
            throw FingerprintError.invalidPrintData(detail: "truncated or damaged print data")
        }
        let print = try bytes.withUnsafeBufferPointer { buffer in
            try GErrorFunnel.check { fp_print_deserialize(buffer.baseAddress, gsize(buffer.count), $0) }
        }
        guard let print else { throw FingerprintError.invalidPrintData(detail: "no print in the data") }
        return owned(print)
    }

    /// Whether the GVariant after `FP3` is in normal form, as `fp_print_serialize` writes it.
    /// libfprint reads damaged data with default values and then aborts the process on the
    /// parts that are missing (a truncated blob does that), so such data never reaches it.
    static func isNormalForm(_ bytes: [UInt8]) -> Bool {
        guard let type = g_variant_type_new("(issbymsmsia{sv}v)") else { return false }
        defer { g_variant_type_free(type) }
        let body = Array(bytes.dropFirst(3))
        guard let data = body.withUnsafeBytes({ g_bytes_new($0.baseAddress, gsize($0.count)) }) else { return false }
        defer { g_bytes_unref(data) }
        guard let variant = g_variant_ref_sink(g_variant_new_from_bytes(type, data, 0)) else { return false }
        defer { g_variant_unref(variant) }
        return g_variant_is_normal_form(variant) != 0
    }

    /// Takes ownership of a new print. `FpPrint` is a `GInitiallyUnowned`: a floating
    /// reference would be consumed by the first `ref_sink` inside libfprint, so that our
    /// own unref afterwards would free it under the driver's feet. GLib thread only.
    static func owned(_ print: OpaquePointer) -> OpaquePointer {
        let object = UnsafeMutableRawPointer(print)
        if g_object_is_floating(object) != 0 { g_object_ref_sink(object) }
        return print
    }

    /// A summary without the template; also what `"\(print)"` shows.
    public var debugDescription: String {
        "Print(\(finger), user: \(username ?? "-"), \(driver)/\(deviceID)\(isDeviceStored ? ", on device" : ""))"
    }

    /// The metadata only, so that `dump` and reflection never show the template.
    public var customMirror: Mirror {
        Mirror(self, children: ["finger": finger, "username": username as Any, "description": description as Any,
                                "driver": driver, "deviceID": deviceID, "isDeviceStored": isDeviceStored],
               displayStyle: .struct)
    }
}

/// A grey image returned by a reader that can capture.
public struct CapturedImage: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Row-major 8-bit grey pixels, `width * height` of them.
    public let pixels: [UInt8]
}
