package import FingerprintKit
package import TouchgateAPI

/// How the service reaches a fingerprint reader for a touch or an enrollment: the port
/// every rule that needs a finger goes through, so that the rules can be tested with a
/// scripted reader (``TouchgateService/readerPort``) as well as run on libfprint.
///
/// What only a real reader has (storage on the chip, images, fprintd) stays with
/// FingerprintKit: a handle that is not libfprint's has no ``ReaderHandle/session``, and
/// the service then takes no path that needs one.
package protocol ReaderPort: Sendable {
    /// Whether fprintd may serve a request instead of this port (by the configured backend);
    /// false: this port is the only way to a reader.
    var fprintdMayServe: Bool { get }

    /// Finds and opens the reader `device` names (an id or driver; nil: the first) for one
    /// request, telling the person through `interaction`.
    /// - Throws: ``ServiceError`` `no-reader` with what to do.
    func open(device: String?, interaction: any Interaction) async throws -> any ReaderHandle
}

/// An open reader, for one request. Close it when done.
package protocol ReaderHandle: Sendable {
    /// What the reader is.
    var info: ReaderInfo { get }
    /// The libfprint session behind the handle, for its storage; nil for any other reader.
    var session: ReaderSession? { get }

    /// One scan matched against `templates` (serialized prints), prompting for the finger
    /// (`finger` names it when known). Returns the index that matched, or nil for a good scan
    /// that matched none.
    /// - Throws: ``FingerprintError/retry(_:)`` for a poor scan, or why the reader failed.
    func match(_ templates: [[UInt8]], operation: String, finger: String?) async throws -> Int?

    /// Enrolls `finger`, labelled `username` on readers that keep prints, prompting for each scan.
    func enroll(finger: Finger, username: String) async throws -> EnrolledTemplate

    /// Closes the reader, or gives it back to the pool it came from.
    func close() async
}

/// A print a reader enrolled.
package struct EnrolledTemplate: Sendable {
    /// The serialized print, to store (sealed).
    package let serialized: [UInt8]
    /// Whether the reader keeps the print on its own chip.
    package let onDevice: Bool
    /// libfprint's print, when libfprint made it (to delete it from the chip again).
    let print: Print?

    /// A print from a reader other than libfprint's.
    package init(serialized: [UInt8], onDevice: Bool = false) {
        self.serialized = serialized
        self.onDevice = onDevice
        print = nil
    }

    init(_ print: Print) {
        serialized = print.serialized
        onDevice = print.isDeviceStored
        self.print = print
    }
}

/// The readers libfprint finds, opened directly or taken from a long-lived process's pool.
struct LibfprintReaders: ReaderPort {
    /// touchgated's open readers; nil: each request opens and closes its own.
    let pool: ReaderPool?

    var fprintdMayServe: Bool { true }

    func open(device: String?, interaction: any Interaction) async throws -> any ReaderHandle {
        // Before waiting for a turn at the readers: a reader nobody can touch is refused at once.
        try await pool?.presence?.check()
        return try await ReaderSession.open(device: device, interaction: interaction, pool: pool)
    }
}

extension ReaderSession: ReaderHandle {
    package var session: ReaderSession? { self }

    package func match(_ templates: [[UInt8]], operation: String, finger: String?) async throws -> Int? {
        var gallery: [Print] = []
        for template in templates { gallery.append(try await Print(serialized: template)) }
        return try await match(gallery, operation: operation, finger: finger)
    }

    package func enroll(finger: Finger, username: String) async throws -> EnrolledTemplate {
        EnrolledTemplate(try await prompting("enroll", finger: finger.name) { events in
            try await reader.enroll(finger: finger, username: username, events: events)
        })
    }
}
