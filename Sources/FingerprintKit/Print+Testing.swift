import CFPrint
import FoundationEssentials

/// Internal hooks for FingerprintKit's own tests (reached with `@testable import`):
/// libfprint's verdicts, to check ours against.
extension Print {
    /// libfprint's `fp_print_equal` on the two prints, on the GLib thread.
    static func libfprintEqual(_ lhs: Print, _ rhs: Print) async throws -> Bool {
        let (left, right) = (lhs.serialized, rhs.serialized)
        return try await GLibLoop.shared.run {
            let a = try Print.deserialize(left)
            defer { g_object_unref(UnsafeMutableRawPointer(a)) }
            let b = try Print.deserialize(right)
            defer { g_object_unref(UnsafeMutableRawPointer(b)) }
            return fp_print_equal(a, b) != 0
        }
    }

    /// This print with other metadata (username, description, finger, enrollment date),
    /// serialized anew: the template data stays the same.
    func withMetadata(username: String?, description: String?, finger: Finger,
                      enrolled date: (day: Int, month: Int, year: Int)?) async throws -> Print {
        let bytes = serialized
        return try await GLibLoop.shared.run {
            let print = try Print.deserialize(bytes)
            defer { g_object_unref(UnsafeMutableRawPointer(print)) }
            fp_print_set_username(print, username)
            fp_print_set_description(print, description)
            fp_print_set_finger(print, finger.fpFinger)
            if let date, let gdate = g_date_new_dmy(GDateDay(date.day), GDateMonth(UInt32(date.month)), GDateYear(date.year)) {
                fp_print_set_enroll_date(print, gdate)
                g_date_free(gdate)
            } else {
                fp_print_set_enroll_date(print, nil)
            }
            return try Print(fpPrint: print)
        }
    }
}
