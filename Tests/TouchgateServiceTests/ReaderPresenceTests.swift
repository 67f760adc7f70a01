import Dispatch
import FingerprintKit
import Logging
import Testing
@testable import TouchgateService
import TouchgateAPI

/// The closed-lid rule, with the lid as a test sets it (the daemon's is read from logind;
/// PAMTests drives that end to end).
@Suite struct ReaderPresenceTests {
    static func check(_ placement: ReaderPresence.Placement, _ lid: LidState?) async -> ServiceError? {
        let rule = ReaderPresence(placement: placement, logger: Logger(label: "test")) { lid }
        do {
            try await rule.check()
            return nil
        } catch {
            return error
        }
    }

    @Test("a closed lid refuses a built-in reader, docked or not, with what to do; an open lid never does")
    func builtIn() async {
        for docked in [false, true] {
            let refused = await Self.check(.builtIn, (closed: true, docked: docked))
            #expect(refused?.code == .noReader)
            #expect(refused?.message.contains("open the lid, or use the password") == true, "\(String(describing: refused))")
        }
        #expect(await Self.check(.builtIn, (closed: false, docked: false)) == nil)
    }

    @Test("auto refuses only an undocked closed lid; external never looks; no lid or no logind asks as before")
    func autoExternalAndUnknown() async {
        #expect(await Self.check(.auto, (closed: true, docked: false))?.code == .noReader)
        #expect(await Self.check(.auto, (closed: true, docked: true)) == nil)
        #expect(await Self.check(.auto, (closed: false, docked: false)) == nil)
        #expect(await Self.check(.external, (closed: true, docked: false)) == nil)
        for placement in ReaderPresence.Placement.allCases {
            #expect(await Self.check(placement, nil) == nil)
        }
    }

    @Test("a logind that never answers holds no request: past the deadline the finger is asked for")
    func silentLogind() async throws {
        // Like a D-Bus call in flight, the wait does not end when its task is cancelled.
        let rule = ReaderPresence(placement: .builtIn, logger: Logger(label: "test")) {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().asyncAfter(deadline: .now() + 6) { continuation.resume() }
            }
            return (closed: true, docked: false)
        }
        let started = ContinuousClock.now
        try await rule.check()
        let took = started.duration(to: .now)
        #expect(took < ReaderPresence.deadline * 3, "took \(took)")
    }
}
