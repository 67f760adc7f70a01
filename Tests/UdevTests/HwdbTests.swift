import Foundation
import Testing

@Suite("udev hwdb of supported readers")
struct HwdbTests {
    @Test("the committed hwdb is what generate-hwdb.sh makes from the installed libfprint")
    func committedHwdbIsUpToDate() async throws {
        let bash = try Tool.bash.path()
        _ = try Paths.libfprintHwdb()
        // No input argument: the script finds the installed libfprint hwdb itself, as
        // it does when a developer regenerates the file.
        // LIBFPRINT_VERSION would override the version the script finds.
        let result = try await runProcess(bash, [Paths.generator.path, "--output", "-"], environment: ["LIBFPRINT_VERSION": ""])
        try #require(result.succeeded, "generate-hwdb.sh failed: \(result.summary)")

        let committed = try String(contentsOf: Paths.hwdb, encoding: .utf8)
        if result.stdout != committed {
            let new = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let old = committed.split(separator: "\n", omittingEmptySubsequences: false)
            let line = zip(old, new).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(old.count, new.count)
            let oldLine = line < old.count ? String(old[line]) : "<end of file>"
            let newLine = line < new.count ? String(new[line]) : "<end of file>"
            Issue.record("""
                udev/60-touchgate-fingerprint-reader.hwdb is out of date for the installed libfprint: \
                run udev/generate-hwdb.sh and commit the result. First difference at line \(line + 1): \
                committed \"\(oldLine)\", generated \"\(newLine)\"
                """)
        }
    }

    @Test("it lists exactly libfprint's supported readers, none of the known unsupported ones")
    func listsSupportedReadersOnly() throws {
        let source = try Paths.libfprintHwdb()
        let libfprint = try LibfprintHwdb(contentsOf: source)
        try #require(!libfprint.supported.isEmpty, "no supported readers parsed from libfprint's hwdb")
        if try String(contentsOf: source, encoding: .utf8).contains("# Known unsupported devices") {
            try #require(!libfprint.unsupported.isEmpty, "no \"Known unsupported devices\" parsed from libfprint's hwdb")
        }

        let records = parseHwdb(try String(contentsOf: Paths.hwdb, encoding: .utf8))
        var listed: Set<USBID> = []
        for record in records {
            #expect(record.properties == ["ID_TOUCHGATE_READER": "1"], "record \(record.matches)")
            for match in record.matches {
                let id = try #require(USBID(hwdbMatch: match), "not a usb:vXXXXpYYYY* match: \(match)")
                listed.insert(id)
            }
        }

        // An id libfprint lists in both places is still handled by a driver.
        let onlyUnsupported = libfprint.unsupported.subtracting(libfprint.supported)
        #expect(listed.intersection(onlyUnsupported).sorted() == [], "unsupported readers must not be listed")
        #expect(libfprint.supported.subtracting(listed).sorted() == [], "supported readers missing from our hwdb")
        #expect(listed.subtracting(libfprint.supported).sorted() == [], "ids that libfprint does not support")
    }

    @Test("every recorded reader that libfprint supports is in our hwdb")
    func recordedReadersAreListed() throws {
        let libfprint = try LibfprintHwdb(contentsOf: try Paths.libfprintHwdb())
        let listed = Set(parseHwdb(try String(contentsOf: Paths.hwdb, encoding: .utf8))
            .flatMap(\.matches).compactMap(USBID.init(hwdbMatch:)))
        let readers = try Paths.recordedReaders()

        var checked = 0
        for reader in readers {
            if libfprint.supported.contains(reader.id) {
                #expect(listed.contains(reader.id), "recorded reader \(reader) is supported by libfprint but not in our hwdb")
                checked += 1
            } else if libfprint.unsupported.contains(reader.id) {
                #expect(!listed.contains(reader.id), "recorded reader \(reader) is unsupported by libfprint but in our hwdb")
                checked += 1
            }
        }
        #expect(checked > 0, "none of the recorded readers \(readers) appears in libfprint's hwdb")
    }
}
