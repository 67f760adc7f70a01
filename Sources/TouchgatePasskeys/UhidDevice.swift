public import TouchgateAPI
import Synchronization
import TouchgateBasics
import TouchgateFIDO
#if canImport(Glibc)
import Glibc
#endif

/// The authenticator as a USB FIDO security key through `/dev/uhid`: the kernel makes a HID
/// device of it (usage page 0xF1D0), udev a `/dev/hidrawN` node, and browsers and libfido2
/// find it as they find a plugged-in key. Events are the kernel's `struct uhid_event`
/// (include/uapi/linux/uhid.h), written and read whole.
public final class UhidDevice: ReportChannel {
    /// `struct uhid_event`: a 32-bit type, then the largest request (`uhid_create2_req`).
    static let eventSize = 4 + 128 + 64 + 64 + 2 + 2 + 4 + 4 + 4 + 4 + 4096
    static let create2: UInt32 = 11, input2: UInt32 = 12, output: UInt32 = 6, destroy: UInt32 = 1
    /// BUS_USB: libfido2 lists only USB-bus devices.
    static let busUSB: UInt16 = 0x03
    /// pid.codes' open-source vendor id, and a product number of Touchgate's (not registered).
    public static let vendor: UInt32 = 0x1209, product: UInt32 = 0x7467
    /// The FIDO report descriptor: usage page 0xF1D0, usage CTAPHID, 64-byte input and output
    /// reports without report ids (CTAP 2.1 §11.2.8.1).
    static let reportDescriptor: [UInt8] = [
        0x06, 0xD0, 0xF1, 0x09, 0x01, 0xA1, 0x01,
        0x09, 0x20, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x81, 0x02,
        0x09, 0x21, 0x15, 0x00, 0x26, 0xFF, 0x00, 0x75, 0x08, 0x95, 0x40, 0x91, 0x02,
        0xC0,
    ]

    private let descriptor: Int32
    /// Set by ``stop()``: ``read()`` looks at it between waits of at most 200 ms (a character
    /// device cannot be shut down as a socket can).
    private let stopped = Atomic(false)
    /// The device's name: udev's rule gives its hidraw node to the user it names.
    public let name: String
    /// The owner's uid, in the device's `uniq` (udev's rule reads it as HID_UNIQ).
    public let owner: UInt32

    /// Makes the device for `owner`.
    /// - Throws: `usage` naming what to do when `/dev/uhid` cannot be opened.
    public init(owner: UInt32, path: String = "/dev/uhid") throws(ServiceError) {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            let problem = String(cString: strerror(errno))
            throw ServiceError(.usage, "cannot open \(path) (\(problem)): the passkey device needs the uhid module "
                               + "(modprobe uhid) and access to it (touchgate passkey enable sets both up)")
        }
        self.descriptor = descriptor
        self.owner = owner
        name = "Touchgate passkey authenticator"
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.create2, at: 0, in: &event)
        var offset = 4
        Self.text(name, width: 128, at: offset, in: &event)
        offset += 128
        Self.text("touchgate/uid-\(owner)", width: 64, at: offset, in: &event)
        offset += 64
        Self.text(String(owner), width: 64, at: offset, in: &event)
        offset += 64
        Self.put16(UInt16(Self.reportDescriptor.count), at: offset, in: &event)
        Self.put16(Self.busUSB, at: offset + 2, in: &event)
        Self.put(Self.vendor, at: offset + 4, in: &event)
        Self.put(Self.product, at: offset + 8, in: &event)
        Self.put(1, at: offset + 12, in: &event)
        offset += 20
        event.replaceSubrange(offset..<offset + Self.reportDescriptor.count, with: Self.reportDescriptor)
        guard event.withUnsafeBytes({ Glibc.write(descriptor, $0.baseAddress, $0.count) }) == Self.eventSize else {
            let problem = String(cString: strerror(errno))
            close(descriptor)
            throw ServiceError(.error, "the kernel refused the passkey device (\(problem))")
        }
    }

    deinit {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.destroy, at: 0, in: &event)
        _ = event.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }

    public func read() -> [UInt8]? {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        while true {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 200)
            if stopped.load(ordering: .relaxed) { return nil }
            if polled == 0 || (polled < 0 && errno == EINTR) { continue }
            guard polled > 0 else { return nil }
            let count = event.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 4 else { return nil }
            let type = UInt32(event[0]) | UInt32(event[1]) << 8 | UInt32(event[2]) << 16 | UInt32(event[3]) << 24
            guard type == Self.output else { continue }
            // uhid_output_req: data[4096], then its size. A write to hidraw for a device without
            // report ids arrives with the report id byte (0) first.
            let size = Int(event[4 + 4096]) | Int(event[4 + 4097]) << 8
            guard size > 0, size <= 4096 else { continue }
            var report = Array(event[4..<4 + size])
            if report.count == CTAPHID.reportSize + 1, report[0] == 0 { report.removeFirst() }
            guard report.count <= CTAPHID.reportSize else { continue }
            return report + [UInt8](repeating: 0, count: CTAPHID.reportSize - report.count)
        }
    }

    public func write(_ report: [UInt8]) {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(Self.input2, at: 0, in: &event)
        Self.put16(UInt16(report.count), at: 4, in: &event)
        event.replaceSubrange(6..<6 + report.count, with: report)
        _ = event.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }

    /// Ends ``read()`` in the thread that serves the device.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private static func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<4 { bytes[offset + index] = UInt8((value >> (8 * UInt32(index))) & 0xFF) }
    }

    private static func put16(_ value: UInt16, at offset: Int, in bytes: inout [UInt8]) {
        bytes[offset] = UInt8(value & 0xFF)
        bytes[offset + 1] = UInt8(value >> 8)
    }

    private static func text(_ text: String, width: Int, at offset: Int, in bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8.prefix(width - 1))
        bytes.replaceSubrange(offset..<offset + utf8.count, with: utf8)
    }
}

extension PasskeySocketServer {
    /// Serves the authenticator on a uhid device for its owner until the device ends: every
    /// request is the owner's (the udev rule gives the node to them alone). The process is
    /// the owner's own (`touchgate passkey serve --uhid`) or touchgated, which makes one for
    /// each user at the seat (``SeatPasskeyDevices``).
    public static func serveDevice(_ device: UhidDevice, requests: RequestsForCaller, interaction: PasskeyPrompts,
                                   policy: String? = nil, log: @escaping @Sendable (String) -> Void) async {
        let caller = Caller.connected(uid: device.owner, pid: getpid(), executable: nil, door: .passkey,
                                      requester: "passkey device \(device.name) (its node is uid \(device.owner)'s alone)")
        let server = CTAPHIDServer(channel: device, authenticator: PasskeyAuthenticator(requests: requests(caller),
                                                                                        interaction: interaction, policy: policy,
                                                                                        log: log))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            SystemThread.detach(name: "touchgate-uhid") {
                server.serve()
                done.resume()
            }
        }
    }
}
