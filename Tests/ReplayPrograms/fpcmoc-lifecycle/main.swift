// Runs, under umockdev-run, exactly the sequence the fpcmoc recording holds (enumerate,
// open, clear storage, enroll, list, verify, identify against the deserialized listed
// prints, delete, close) and prints one JSON object per step. Exits 1 on any deviation.
import FingerprintKit
import Foundation

/// One line of output: `{"step": …, …}`.
func report(_ step: String, _ fields: [String: Any] = [:]) {
    var object = fields
    object["step"] = step
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
    fflush(nil)
}

/// Reports a failed step and exits.
func fail(_ step: String, _ why: String) -> Never {
    report(step, ["error": why])
    exit(1)
}

/// Runs one step, turning a thrown error into a failure of that step.
func step<T>(_ name: String, _ body: () async throws -> T) async -> T {
    do { return try await body() } catch { fail(name, String(describing: error)) }
}

// A replay that stalls would otherwise hang the test that runs us.
Thread.detachNewThread {
    Thread.sleep(forTimeInterval: 60)
    fail("timeout", "the replay did not finish within 60 seconds")
}

let context = await FingerprintContext()
let readers = await context.readers()
guard readers.count == 1, let reader = readers.first else { fail("enumerate", "expected one reader, found \(readers.count)") }
guard reader.info.driver == "fpcmoc" else { fail("enumerate", "expected driver fpcmoc, found \(reader.info.driver)") }
report("enumerate", ["driver": reader.info.driver, "readers": readers.count,
                     "enroll_stages": reader.info.enrollStages, "features": reader.info.features.names])

await step("open") { try await reader.open() }
report("open")

await step("clear") { try await reader.clearStorage() }
report("clear")

let (events, continuation) = AsyncStream.makeStream(of: ReaderEvent.self)
let collected = Task {
    var stages: [Int] = []
    var totals: Set<Int> = []
    var retries = 0
    var sequence: [String] = []
    for await event in events {
        switch event {
        case .enrollStage(let completed, _): sequence.append("stage \(completed)")
        case .retry: sequence.append("retry")
        case .fingerStatus(let status): sequence.append("status \(status.rawValue)")
        }
        switch event {
        case .enrollStage(let completed, let total):
            stages.append(completed)
            totals.insert(total)
        case .retry:
            retries += 1
        case .fingerStatus:
            break
        }
    }
    return (stages, totals, retries, sequence)
}
// The recording was made with a fresh print: no finger and no user name, which libfprint
// spells "nobody" in the user id it sends to the reader.
let enrolled = await step("enroll") { try await reader.enroll(finger: .unknown, username: "nobody", events: continuation) }
let (stages, totals, retries, sequence) = await collected.value
report("enroll", ["stages": stages, "totals": totals.sorted(), "retries": retries, "events": sequence,
                  "device_stored": enrolled.isDeviceStored, "driver": enrolled.driver])

let listed = await step("list") { try await reader.listPrints() }
report("list", ["count": listed.count, "device_stored": listed.map(\.isDeviceStored)])
guard listed.count == 1 else { fail("list", "expected one stored print, found \(listed.count)") }

let verified = await step("verify") { try await reader.verify(enrolled) }
let matched = verified.matched
/// Whether a reported print equals `print` (NSNull when the driver reported none).
func equality(_ reported: Print?, _ print: Print) -> Any {
    guard let reported else { return NSNull() }
    return reported == print
}
report("verify", ["match": matched, "scanned_equal": equality(verified.scanned, enrolled)])
guard matched else { fail("verify", "the enrolled finger did not match") }

let gallery = await step("deserialize") {
    var prints: [Print] = []
    for print in listed { prints.append(try await Print(serialized: print.serialized)) }
    return prints
}
guard gallery == listed else { fail("deserialize", "a listed print did not read back the same from its serialized form") }
report("deserialize", ["count": gallery.count])
let identified = await step("identify") { try await reader.identify(gallery) }
let index = identified.index
let indexValue: Any = index.map { $0 as Any } ?? NSNull()
report("identify", ["index": indexValue, "matched_equal": equality(identified.matched, gallery[0]),
                    "scanned_equal": equality(identified.scanned, gallery[0])])
guard index == 0 else { fail("identify", "expected a match with the listed print") }

await step("delete") { try await reader.deletePrint(gallery[0]) }
report("delete")

await step("close") { try await reader.close() }
report("close")
exit(0)

