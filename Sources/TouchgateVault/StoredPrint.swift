public import FoundationEssentials

/// An enrolled fingerprint as the store keeps it.
///
/// `template` is libfprint's serialized print. For image readers it holds minutiae,
/// which are biometric data: it never appears in ``description`` and only
/// ``PrintStore`` reads or writes it on disk.
public struct StoredPrint: Sendable, Equatable, CustomStringConvertible {
    /// The person the print belongs to.
    public var user: String
    /// Finger name, such as `right-index`.
    public var finger: String
    /// libfprint driver of the reader that made it.
    public var driver: String
    /// Device id of that reader (prints only match on the reader that made them).
    public var deviceID: String
    /// When it was enrolled.
    public var enrolledAt: Date
    /// Whether the template lives on the reader, the stored bytes being the handle the reader returned.
    public var onDevice: Bool
    /// The serialized template (or on-device handle).
    public var template: [UInt8]

    /// A print ready to store.
    public init(user: String, finger: String, driver: String, deviceID: String,
                enrolledAt: Date, onDevice: Bool, template: [UInt8]) {
        self.user = user
        self.finger = finger
        self.driver = driver
        self.deviceID = deviceID
        self.enrolledAt = enrolledAt
        self.onDevice = onDevice
        self.template = template
    }

    public var description: String {
        "StoredPrint(\(user), \(finger), \(driver)/\(deviceID), \(template.count) template bytes)"
    }
}
