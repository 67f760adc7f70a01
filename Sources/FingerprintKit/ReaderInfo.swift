import CFPrint

/// How a finger is presented to a reader.
public enum ScanType: String, Sendable, Codable {
    /// The finger rests on the sensor.
    case press
    /// The finger is swiped across a narrow sensor.
    case swipe
}

/// What a reader can do (`FpDeviceFeature`).
public struct ReaderFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `FP_DEVICE_FEATURE_CAPTURE`: returns images.
    public static let capture = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_CAPTURE.rawValue)
    /// `FP_DEVICE_FEATURE_IDENTIFY`: matches one scan against many prints.
    public static let identify = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_IDENTIFY.rawValue)
    /// `FP_DEVICE_FEATURE_VERIFY`: matches one scan against one print.
    public static let verify = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_VERIFY.rawValue)
    /// `FP_DEVICE_FEATURE_STORAGE`: keeps prints on the reader.
    public static let storage = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_STORAGE.rawValue)
    /// `FP_DEVICE_FEATURE_STORAGE_LIST`: lists prints on the reader.
    public static let storageList = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_STORAGE_LIST.rawValue)
    /// `FP_DEVICE_FEATURE_STORAGE_DELETE`: deletes one print on the reader.
    public static let storageDelete = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_STORAGE_DELETE.rawValue)
    /// `FP_DEVICE_FEATURE_STORAGE_CLEAR`: wipes the reader's storage.
    public static let storageClear = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_STORAGE_CLEAR.rawValue)
    /// `FP_DEVICE_FEATURE_DUPLICATES_CHECK`: refuses to enroll a finger it already holds.
    public static let duplicatesCheck = ReaderFeatures(rawValue: FP_DEVICE_FEATURE_DUPLICATES_CHECK.rawValue)

    /// Stable names, for output.
    public static let names: [(ReaderFeatures, String)] = [
        (.capture, "capture"), (.identify, "identify"), (.verify, "verify"), (.storage, "storage"),
        (.storageList, "list"), (.storageDelete, "delete"), (.storageClear, "clear"),
        (.duplicatesCheck, "duplicates-check"),
    ]

    /// The names of the features present.
    public var names: [String] { Self.names.filter { contains($0.0) }.map(\.1) }
}

/// A reader as found at enumeration: a snapshot, safe to pass anywhere.
public struct ReaderInfo: Sendable, Hashable {
    /// libfprint driver name, such as `elan` or `virtual_image`.
    public let driver: String
    /// Identifies the reader among those of its driver (stable across plugs for USB readers).
    public let deviceID: String
    /// Human-readable name.
    public let name: String
    /// Press or swipe.
    public let scanType: ScanType
    /// How many scans enrollment takes.
    public let enrollStages: Int
    /// What the reader can do.
    public let features: ReaderFeatures

    /// A reader described by its facts: one not reached through libfprint (a scripted
    /// reader for tests, another backend).
    public init(driver: String, deviceID: String, name: String, scanType: ScanType, enrollStages: Int,
                features: ReaderFeatures) {
        self.driver = driver
        self.deviceID = deviceID
        self.name = name
        self.scanType = scanType
        self.enrollStages = enrollStages
        self.features = features
    }

    /// Reads the snapshot from a device. GLib thread only.
    init(device: UnsafeMutablePointer<FpDevice>) {
        driver = String(cString: fp_device_get_driver(device))
        deviceID = String(cString: fp_device_get_device_id(device))
        name = String(cString: fp_device_get_name(device))
        scanType = fp_device_get_scan_type(device) == FP_SCAN_TYPE_SWIPE ? .swipe : .press
        enrollStages = Int(fp_device_get_nr_enroll_stages(device))
        features = ReaderFeatures(rawValue: fp_device_get_features(device).rawValue)
    }
}

/// Whether the reader wants a finger and whether one is on it (`FpFingerStatusFlags`).
public struct FingerStatus: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `FP_FINGER_STATUS_NEEDED`: the reader is waiting for a finger.
    public static let needed = FingerStatus(rawValue: FP_FINGER_STATUS_NEEDED.rawValue)
    /// `FP_FINGER_STATUS_PRESENT`: a finger is on the reader.
    public static let present = FingerStatus(rawValue: FP_FINGER_STATUS_PRESENT.rawValue)

    /// The moment to ask for a finger: needed, and none is on the reader yet.
    public var isWaitingForFinger: Bool { contains(.needed) && !contains(.present) }
}

/// Something a reader reports while an operation runs, in the order it happened.
public enum ReaderEvent: Sendable, Equatable {
    /// The finger status changed.
    case fingerStatus(FingerStatus)
    /// Enrollment completed `completed` of `total` stages.
    case enrollStage(completed: Int, total: Int)
    /// A scan was poor; the person should try again (enrollment goes on by itself).
    case retry(RetryReason)
}
