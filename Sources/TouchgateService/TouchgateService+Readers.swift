import FingerprintKit
import FoundationEssentials
import TouchgateImageIO
public import TouchgateAPI
import Glibc

extension TouchgateService {
    /// The readers found now (an empty list when there is none): fprintd's while fprintd
    /// owns them (see ``ReaderBackendChoice``), else those libfprint finds. Each says which
    /// backend reaches it.
    public func readers() async -> [ReaderReport] {
        await readerReports().readers
    }

    /// The readers and the backend in use (`libfprint` or `fprintd`).
    func readerReports() async -> (readers: [ReaderReport], backend: String) {
        if case .fprintd(let target)? = try? await resolveBackend(device: nil) {
            let devices = (try? await target.client.devices()) ?? [target.device]
            await target.close()
            return (devices.map { device in
                var report = device.info.report
                report.backend = "fprintd"
                return report
            }, "fprintd")
        }
        var reports: [ReaderReport] = []
        if let readerPool {
            for (reader, open) in await readerPool.readers() {
                var report = reader.info.report
                report.temperature = await reader.temperature.rawValue
                report.open = open
                reports.append(report)
            }
            return (reports, "libfprint")
        }
        for reader in await FingerprintContext().readers() {
            var report = reader.info.report
            report.temperature = await reader.temperature.rawValue
            reports.append(report)
        }
        return (reports, "libfprint")
    }

    /// Why no reader is usable, in words a person can act on.
    public func noReaderExplanation() -> String {
        ReaderDiagnostics.noReaderMessage()
    }

    /// Captures one image from a reader that can, into a private file (mode 0600: it is
    /// biometric data), written through a temporary file so a failure leaves no partial file.
    public func capture(to path: String, format: ImageFormat, device: String? = nil,
                        interaction: any Interaction) async throws(ServiceError) -> CaptureReport {
        try await serviceErrors {
            let image = try await ReaderSession.with(device: device, interaction: interaction, pool: readerPool) { session in
                try await session.prompting("capture", finger: nil) { events in
                    try await session.reader.capture(waitForFinger: true, events: events)
                }
            }
            let grey = GreyImage(width: image.width, height: image.height, pixels: image.pixels)
            try PrivateFile.write(format == .png ? grey.pngData() : grey.pgmData(), to: path)
            return CaptureReport(output: path, width: image.width, height: image.height)
        }
    }
}

/// Files only their owner can read.
enum PrivateFile {
    /// Writes `data` to `path` with mode 0600 through a temporary file in the same
    /// directory, so that an interrupted write never leaves a partial file where the old one was.
    static func write(_ data: Data, to path: String) throws {
        let directory = PathText.deletingLastComponent(of: path)
        let folder = directory.isEmpty ? "." : directory
        var template = Array((folder + "/.touchgate-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else {
            throw ServiceError.dataError("cannot write to \(folder): \(String(cString: strerror(errno)))")
        }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw ServiceError.dataError("cannot write \(path): \(reason)")
        }
    }
}
