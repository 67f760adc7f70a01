import CFPrint
import FoundationEssentials
import Glibc

extension Reader {
    /// Opens the reader. Throws ``DeviceErrorCode/alreadyOpen`` if it is open, or a
    /// device error when it cannot be claimed (for instance held by fprintd, or no
    /// permission to the USB device).
    public func open() async throws {
        try await perform { device, cancellable, data in
            fp_device_open(device, cancellable, asyncReadyCallback, data)
        } finish: { device, result in
            _ = try GErrorFunnel.check { fp_device_open_finish(device, result, $0) }
        }
    }

    /// Closes the reader. Not cancellable: a cancelled task still releases the reader.
    ///
    /// An unplugged reader is closed too, without error: libfprint holds it open (and the
    /// context does not report it removed) until it is closed.
    public func close() async throws {
        do {
            try await perform(cancellable: false, closing: true) { device, cancellable, data in
                fp_device_close(device, cancellable, asyncReadyCallback, data)
            } finish: { device, result in
                _ = try GErrorFunnel.check { fp_device_close_finish(device, result, $0) }
            }
        } catch DeviceErrorCode.removed {
            // Gone: libfprint has closed it all the same.
        }
    }

    /// Enrolls a finger: the reader asks for ``ReaderInfo/enrollStages`` scans (the stage
    /// events carry the count the reader uses now, should its driver have changed it since).
    ///
    /// `events` receives finger status changes, ``ReaderEvent/enrollStage(completed:total:)``
    /// after each good scan and ``ReaderEvent/retry(_:)`` after a poor one (enrollment goes on).
    /// - Parameters:
    ///   - username: stored in the print; nil stores none.
    ///   - description: stored in the print; nil stores none. Match-on-chip drivers derive the
    ///     user id they write to the reader from the print's metadata, so what is set here
    ///     may be visible to other programs that list the reader's storage.
    /// - Returns: the new print, carrying `finger`, `username`, `description` and today's
    ///   date (no date when replaying a recording, `FP_DEVICE_EMULATION=1`).
    /// - Throws: ``DeviceErrorCode/dataDuplicate`` on readers with a duplicate check when
    ///   the finger is already enrolled there; `CancellationError` when cancelled.
    public func enroll(finger: Finger, username: String?, description: String? = nil,
                       events: AsyncStream<ReaderEvent>.Continuation? = nil) async throws -> Print {
        return try await perform(events: events) { [self] device, cancellable, data in
            let template = Print.owned(fp_print_new(device)!)
            defer { g_object_unref(UnsafeMutableRawPointer(template)) }
            fp_print_set_finger(template, finger.fpFinger)
            if let username { fp_print_set_username(template, username) }
            if let description { fp_print_set_description(template, description) }
            // Replaying a recorded reader (FP_DEVICE_EMULATION=1) leaves the date out, as libfprint
            // then leaves out its random id: match-on-chip drivers send both to the reader inside
            // the print's user id, and a replay only goes on if the bytes are the recording's.
            // Today in local time, from the C library: FoundationEssentials knows no time zone
            // by name, and its `TimeZone.current` is GMT without ICU.
            var now = time(nil)
            var today = tm()
            localtime_r(&now, &today)
            if ProcessInfo.processInfo.environment["FP_DEVICE_EMULATION"] != "1",
               let date = g_date_new_dmy(GDateDay(today.tm_mday), GDateMonth(UInt32(today.tm_mon + 1)),
                                         GDateYear(today.tm_year + 1900)) {
                fp_print_set_enroll_date(template, date)
                g_date_free(date)
            }
            // The progress callback gets the reader unretained: it lives as long as its
            // context, and the callback only runs while the operation does.
            let progress: FpEnrollProgress = { device, completed, _, data, error in
                guard let device, let data else { return }
                let reader = Unmanaged<Reader>.fromOpaque(data).takeUnretainedValue()
                if let error, error.pointee.domain == fp_device_retry_quark() {
                    reader.yield(.retry(RetryReason(rawValue: error.pointee.code)))
                } else {
                    // Read now, not from `info`: a driver may change the count after enumeration.
                    reader.yield(.enrollStage(completed: Int(completed),
                                              total: Int(fp_device_get_nr_enroll_stages(device))))
                }
            }
            fp_device_enroll(device, template, cancellable, progress,
                             Unmanaged.passUnretained(self).toOpaque(), nil, asyncReadyCallback, data)
        } finish: { device, result in
            let print = try GErrorFunnel.check { fp_device_enroll_finish(device, result, $0) }
            guard let print else { throw FingerprintError.other(domain: "touchgate", code: 0, detail: "enrollment returned no print") }
            defer { g_object_unref(UnsafeMutableRawPointer(print)) }
            return try Print(fpPrint: print)
        }
    }

    /// Scans a finger and compares it with one enrolled print.
    /// - Returns: whether it matched, and the print the reader made of the scan when its
    ///   driver reports one.
    /// - Throws: ``FingerprintError/retry(_:)`` after a poor scan (restart to try again),
    ///   ``FingerprintError/invalidPrintData(detail:)`` when `print` cannot be read,
    ///   ``DeviceErrorCode/removed`` when the reader goes away, `CancellationError`.
    public func verify(_ print: Print, events: AsyncStream<ReaderEvent>.Continuation? = nil) async throws -> VerifyResult {
        let serialized = print.serialized
        return try await perform(events: events, writesNothing: true) { device, cancellable, data in
            let enrolled = try Print.deserialize(serialized)
            defer { g_object_unref(UnsafeMutableRawPointer(enrolled)) }
            fp_device_verify(device, enrolled, cancellable, nil, nil, nil, asyncReadyCallback, data)
        } finish: { device, result in
            var matched: gboolean = 0
            var scanned: OpaquePointer?
            _ = try GErrorFunnel.check { fp_device_verify_finish(device, result, &matched, &scanned, $0) }
            defer { if let scanned { g_object_unref(UnsafeMutableRawPointer(scanned)) } }
            return VerifyResult(matched: matched != 0, scanned: try scanned.map { try Print(fpPrint: $0) })
        }
    }

    /// Scans a finger and looks for it among `gallery`.
    /// - Returns: the index in `gallery` of the print that matched (nil for no match), that
    ///   print as the reader reported it, and the print the reader made of the scan when its
    ///   driver reports one. On a reader with storage the scanned print may name a print the
    ///   reader holds that `gallery` lacks (libfprint reports no match then): compare it
    ///   with the reader's ``listPrints()`` to see which.
    /// - Throws: as ``verify(_:events:)``; ``FingerprintError/unsupported(_:)`` on readers
    ///   without identification.
    public func identify(_ gallery: [Print],
                         events: AsyncStream<ReaderEvent>.Continuation? = nil) async throws -> IdentifyResult {
        guard info.features.contains(.identify) else { throw FingerprintError.unsupported("identify a finger among several prints") }
        let blobs = gallery.map(\.serialized)
        let prints = GObjectRef(pointer: GalleryBox())
        return try await perform(events: events, writesNothing: true) { device, cancellable, data in
            let array = g_ptr_array_new_with_free_func { g_object_unref($0) }!
            prints.pointer.array = array
            for blob in blobs {
                g_ptr_array_add(array, UnsafeMutableRawPointer(try Print.deserialize(blob)))
            }
            fp_device_identify(device, array, cancellable, nil, nil, nil, asyncReadyCallback, data)
        } finish: { device, result in
            defer { prints.pointer.release() }
            var match: OpaquePointer?
            var scanned: OpaquePointer?
            _ = try GErrorFunnel.check { fp_device_identify_finish(device, result, &match, &scanned, $0) }
            defer {
                if let match { g_object_unref(UnsafeMutableRawPointer(match)) }
                if let scanned { g_object_unref(UnsafeMutableRawPointer(scanned)) }
            }
            var index: Int?
            if let match, let array = prints.pointer.array {
                for candidate in 0..<Int(array.pointee.len) {
                    let print = OpaquePointer(array.pointee.pdata[candidate]!)
                    if print == match || fp_print_equal(print, match) != 0 {
                        index = candidate
                        break
                    }
                }
            }
            return IdentifyResult(index: index, matched: try match.map { try Print(fpPrint: $0) },
                                  scanned: try scanned.map { try Print(fpPrint: $0) })
        }
    }

    /// Captures one image.
    /// - Parameter waitForFinger: wait until a finger is on the reader (otherwise capture at once).
    /// - Throws: ``FingerprintError/unsupported(_:)`` on readers that cannot capture.
    public func capture(waitForFinger: Bool = true,
                        events: AsyncStream<ReaderEvent>.Continuation? = nil) async throws -> CapturedImage {
        guard info.features.contains(.capture) else { throw FingerprintError.unsupported("capture images") }
        return try await perform(events: events, writesNothing: true) { device, cancellable, data in
            fp_device_capture(device, waitForFinger ? 1 : 0, cancellable, asyncReadyCallback, data)
        } finish: { device, result in
            let image = try GErrorFunnel.check { fp_device_capture_finish(device, result, $0) }
            guard let image else { throw FingerprintError.other(domain: "touchgate", code: 0, detail: "capture returned no image") }
            defer { g_object_unref(UnsafeMutableRawPointer(image)) }
            let width = Int(fp_image_get_width(image)), height = Int(fp_image_get_height(image))
            var length: gsize = 0
            let data = fp_image_get_data(image, &length)!
            let count = min(Int(length), width * height)
            return CapturedImage(width: width, height: height,
                                 pixels: Array(UnsafeBufferPointer(start: data, count: count)))
        }
    }

    /// The prints stored on a reader with on-device storage.
    ///
    /// Read from the reader only when its storage can have changed since the last listing:
    /// otherwise that listing is returned without any traffic (see ``storageListing``).
    public func listPrints() async throws -> [Print] {
        guard info.features.contains(.storageList) else { throw FingerprintError.unsupported("list the prints it stores") }
        let kept = await GLibLoop.shared.run { [self] in
            // Only for a reader that is open and working; otherwise the call below says why not.
            fp_device_is_open(device.pointer) != 0 && !isGone && !isSuspended ? storageListing : nil
        }
        if let kept { return kept }
        return try await perform(writesNothing: true) { device, cancellable, data in
            fp_device_list_prints(device, cancellable, asyncReadyCallback, data)
        } finish: { [self] device, result in
            let array = try GErrorFunnel.check { fp_device_list_prints_finish(device, result, $0) }
            var prints: [Print] = []
            if let array {
                defer { g_ptr_array_unref(array) }
                prints = try (0..<Int(array.pointee.len)).map { index in
                    try Print(fpPrint: OpaquePointer(array.pointee.pdata[index]!))
                }
            }
            // On the GLib thread, before any other call can begin.
            storageListing = prints
            return prints
        }
    }

    /// Deletes a print from the reader's storage.
    public func deletePrint(_ print: Print) async throws {
        guard info.features.contains(.storageDelete) else { throw FingerprintError.unsupported("delete prints it stores") }
        let serialized = print.serialized
        try await perform { device, cancellable, data in
            let stored = try Print.deserialize(serialized)
            defer { g_object_unref(UnsafeMutableRawPointer(stored)) }
            fp_device_delete_print(device, stored, cancellable, asyncReadyCallback, data)
        } finish: { device, result in
            _ = try GErrorFunnel.check { fp_device_delete_print_finish(device, result, $0) }
        }
    }

    /// Deletes every print from the reader's storage.
    public func clearStorage() async throws {
        guard info.features.contains(.storageClear) else { throw FingerprintError.unsupported("clear its storage") }
        try await perform { device, cancellable, data in
            fp_device_clear_storage(device, cancellable, asyncReadyCallback, data)
        } finish: { device, result in
            _ = try GErrorFunnel.check { fp_device_clear_storage_finish(device, result, $0) }
        }
    }
}

/// The gallery handed to `fp_device_identify`, kept alive until the call finishes.
///
/// Used on the GLib thread only (created empty elsewhere, filled and released there).
final class GalleryBox {
    var array: UnsafeMutablePointer<GPtrArray>?
    func release() {
        if let array { g_ptr_array_unref(array) }
        array = nil
    }
}
