import FingerprintKit
import Foundation
import TouchgateAPI
import TouchgateService

/// A reader that plays a script, for the service's rules: each scan takes the next step
/// (a finger put on it, a poor scan, the reader unplugged), enrollment makes a print per
/// finger, and it counts what it was asked. It holds no prints of its own.
final class ScriptedReader: ReaderPort, @unchecked Sendable {
    // @unchecked Sendable: every stored property is touched only under `lock`.
    /// What the next scan sees.
    enum Scan: Sendable {
        /// This enrolled finger (by name) is put on the reader.
        case finger(String)
        /// A finger that was never enrolled.
        case stranger
        /// A poor scan: the reader asks for another.
        case poor
        /// The reader is gone.
        case unplugged
    }

    private let lock = NSLock()
    private var script: [Scan]
    private var enrolled: [String: [UInt8]] = [:]
    private var scanCount = 0
    private var openCount = 0
    private var generation = 0

    let info = ReaderInfo(driver: "scripted", deviceID: "scripted-0", name: "Scripted reader", scanType: .press,
                          enrollStages: 3, features: [])

    init(_ script: [Scan] = []) { self.script = script }

    var fprintdMayServe: Bool { false }

    /// Scans made so far.
    var scans: Int { lock.withLock { scanCount } }
    /// Times the reader was opened.
    var opens: Int { lock.withLock { openCount } }

    /// Adds steps to the script.
    func then(_ steps: Scan...) { lock.withLock { script += steps } }

    func open(device: String?, interaction: any Interaction) async throws -> any ReaderHandle {
        lock.withLock { openCount += 1 }
        return Handle(reader: self, interaction: interaction)
    }

    fileprivate func nextScan() -> Scan? {
        lock.withLock {
            scanCount += 1
            return script.isEmpty ? nil : script.removeFirst()
        }
    }

    fileprivate func template(for finger: String) -> [UInt8]? { lock.withLock { enrolled[finger] } }

    fileprivate func enroll(_ finger: String) -> [UInt8] {
        lock.withLock {
            generation += 1
            let template = Array("scripted print of \(finger) #\(generation)".utf8)
            enrolled[finger] = template
            return template
        }
    }

    private struct Handle: ReaderHandle {
        let reader: ScriptedReader
        let interaction: any Interaction

        var info: ReaderInfo { reader.info }
        var session: ReaderSession? { nil }

        func match(_ templates: [[UInt8]], operation: String, finger: String?) async throws -> Int? {
            interaction.event(InteractionEvent(.fingerNeeded, "Place your finger on the scripted reader"))
            switch reader.nextScan() {
            case .finger(let name):
                guard let template = reader.template(for: name) else { return nil }
                return templates.firstIndex(of: template)
            case .stranger:
                return nil
            case .poor:
                throw FingerprintError.retry(.centerFinger)
            case .unplugged, nil:
                throw ServiceError(.noReader, "the scripted reader has nothing more to scan")
            }
        }

        func enroll(finger: Finger, username: String) async throws -> EnrolledTemplate {
            EnrolledTemplate(serialized: reader.enroll(finger.name))
        }

        func close() async {}
    }
}
