import Foundation
import Testing
import TouchgatePolicy
import TouchgatePolicyTesting

@Suite("Configuration")
struct ConfigurationTests {
    @Test("defaults follow the source documents")
    func defaults() {
        let standard = PolicyConfiguration.standard
        #expect(standard.lockoutThreshold == 3)
        #expect(standard.lockoutDuration == .seconds(900))
        #expect(standard.sessionTimeout == .seconds(300))
        #expect(standard.idleTimeout == .seconds(120))
        #expect(standard.passphraseOnlyThreshold == 20)
        #expect(standard.passphraseMaxAge == .seconds(72 * 3600))
        #expect(standard.maximumScans == 5)
    }

    @Test("the session timeout is clamped to 5 minutes and the idle timeout to the session timeout")
    func clamping() throws {
        let long = try PolicyConfiguration(sessionTimeout: .seconds(3600), idleTimeout: .seconds(3600))
        #expect(long.sessionTimeout == .seconds(300))
        #expect(long.idleTimeout == .seconds(300))
        let short = try PolicyConfiguration(sessionTimeout: .seconds(60))
        #expect(short.sessionTimeout == .seconds(60))
        #expect(short.idleTimeout == .seconds(60))
    }

    @Test("a clamped session timeout is enforced: no reuse after 5 minutes")
    func clampEnforced() async throws {
        let fixture = Fixture(configuration: try PolicyConfiguration(sessionTimeout: .seconds(3600), idleTimeout: .seconds(3600)))
        let sensor = ScriptedSensor.alwaysMatching()
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        fixture.clock.advance(by: .seconds(299))
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        #expect(sensor.callCount == 1)
        fixture.clock.advance(by: .seconds(1))
        _ = await fixture.read(item(.biometryAny), sensor: sensor)
        #expect(sensor.callCount == 2)
    }

    @Test("out-of-range values are rejected with a typed error")
    func validation() {
        #expect(throws: ConfigurationError.lockoutThresholdOutOfRange(0)) { try PolicyConfiguration(lockoutThreshold: 0) }
        #expect(throws: ConfigurationError.lockoutThresholdOutOfRange(21)) { try PolicyConfiguration(lockoutThreshold: 21) }
        #expect(throws: ConfigurationError.lockoutDurationOutOfRange(.zero)) { try PolicyConfiguration(lockoutDuration: .zero) }
        #expect(throws: ConfigurationError.lockoutDurationOutOfRange(.seconds(90_000))) {
            try PolicyConfiguration(lockoutDuration: .seconds(90_000))
        }
        #expect(throws: ConfigurationError.negativeTimeout(.seconds(-1))) { try PolicyConfiguration(sessionTimeout: .seconds(-1)) }
        #expect(throws: ConfigurationError.negativeTimeout(.seconds(-1))) { try PolicyConfiguration(idleTimeout: .seconds(-1)) }
        #expect(throws: ConfigurationError.passphraseOnlyThresholdOutOfRange(2)) {
            try PolicyConfiguration(lockoutThreshold: 3, passphraseOnlyThreshold: 2)
        }
        #expect(throws: ConfigurationError.passphraseMaxAgeOutOfRange(.seconds(73 * 3600))) {
            try PolicyConfiguration(passphraseMaxAge: .seconds(73 * 3600))
        }
        #expect(throws: ConfigurationError.maximumScansOutOfRange(0)) { try PolicyConfiguration(maximumScans: 0) }
        #expect(throws: ConfigurationError.maximumScansOutOfRange(11)) { try PolicyConfiguration(maximumScans: 11) }
        #expect((try? PolicyConfiguration(lockoutThreshold: 20)) != nil)
        #expect((try? PolicyConfiguration(lockoutThreshold: 1)) != nil)
    }

    @Test("a custom threshold and duration are enforced")
    func customLockout() async throws {
        let fixture = Fixture(configuration: try PolicyConfiguration(lockoutThreshold: 1, lockoutDuration: .seconds(60)))
        let sensor = ScriptedSensor.neverMatching()
        #expect(await fixture.read(item(.biometryAny), sensor: sensor).error == .lockedOut(LockoutInfo(remaining: .seconds(60), passphraseOnly: false)))
        fixture.clock.advance(by: .seconds(60))
        #expect(try fixture.status().lockout == nil)
    }
}
