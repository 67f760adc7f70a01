import Testing

/// Every test that makes a libfprint context runs in here, one at a time: the
/// `FP_VIRTUAL_*` variables are process-wide and read when a context is made.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DeviceTests {}
