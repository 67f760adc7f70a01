import Foundation
import TouchgateAPI
import TouchgateTerminal
import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif

/// A command run after a touch approved it (`touchgate run`, the MCP tool `run_with_secrets`):
/// the approval asked of the service, the secrets put in the child's environment only, and
/// everything the child prints passed through a ``Redaction`` of them before it goes on.
enum ApprovedRun {
    /// What came of it.
    struct Outcome: Sendable {
        /// The receipt the host signed (approved or refused).
        var receipt: Receipt
        /// Why it was refused; nothing ran then.
        var refusal: ServiceError?
        /// The command's exit status (128 + the signal when one ended it); nil when it did not run.
        var status: Int32?
    }

    /// Where the filtered output goes.
    enum Output: Sendable {
        /// Straight to this process's standard output and error (a terminal, a pipe).
        case passThrough
        /// Collected, up to `limit` bytes of each stream (the MCP tool's answer).
        case collected(limit: Int)
    }

    /// The collected streams of a ``Output/collected(limit:)`` run.
    final class Collected: @unchecked Sendable {
        // @unchecked Sendable: written by the one thread that pumps the child's output, read after it ended.
        var standardOutput: [UInt8] = []
        var standardError: [UInt8] = []
        var truncated = false
    }

    /// Asks `service` to approve `request` (a command with its secrets) and runs it when approved.
    static func run(_ request: ApprovalRequest, service: any TouchgateRequests, device: String?,
                    interaction: any Interaction, standardInput: Int32?, output: Output,
                    collected: Collected? = nil) async throws(ServiceError) -> Outcome {
        let command = request.command ?? []
        let (report, packed) = try await service.approve(request, device: device, interaction: interaction)
        guard report.refusal == nil, let packed else {
            return Outcome(receipt: report.receipt, refusal: report.refusal, status: nil)
        }
        let values = try PackedValues.unpack(packed, count: request.secrets.count)
        guard values.count == request.secrets.count else {
            throw ServiceError(.dataError, "the service released \(values.count) values for \(request.secrets.count) secrets; nothing was run")
        }
        let named = zip(request.secrets, values).map { binding, value in
            (name: binding.variable, value: value.withUnsafeBytes { Array($0) }, asFile: binding.asFile == true)
        }
        let status = try await spawnAndPump(command, directory: request.directory, secrets: named,
                                            standardInput: standardInput, output: output, collected: collected)
        return Outcome(receipt: report.receipt, refusal: nil, status: status)
    }

    /// Starts `command` with `secrets` added to this process's environment, its output
    /// through the filter, and waits for it on a thread of its own (the reads and `waitpid` block).
    private static func spawnAndPump(_ command: [String], directory: String?,
                                     secrets: [(name: String, value: [UInt8], asFile: Bool)],
                                     standardInput: Int32?, output: Output,
                                     collected: Collected?) async throws(ServiceError) -> Int32 {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        guard CTouchgateSys_pipe(&outPipe) == 0, CTouchgateSys_pipe(&errPipe) == 0 else {
            throw ServiceError(.execFailed, "cannot make a pipe for the command's output: \(String(cString: strerror(errno)))")
        }
        // The environment: this process's, less any variable a secret replaces, plus each
        // secret. The secrets' entries are wiped as soon as the child has its copy.
        let replaced = Set(secrets.map(\.name))
        var entries: [UnsafeMutablePointer<CChar>?] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !replaced.contains(name) { entries.append(strdup(entry)) }
            index += 1
        }
        // A secret as a file: a sealed file in memory, the child's descriptor 3 and up, its path in the variable.
        var files: [Int32] = []
        defer { files.forEach { close($0) } }
        var secretEntries: [(UnsafeMutablePointer<CChar>, Int)] = []
        for (name, value, asFile) in secrets {
            var shown = value
            if asFile {
                let file = value.withUnsafeBytes { CTouchgateSys_sealed_memory_file($0.baseAddress, $0.count) }
                guard file >= 0 else {
                    throw ServiceError(.execFailed, "cannot make the file for \(name): \(String(cString: strerror(-file))); nothing was run")
                }
                shown = Array("/dev/fd/\(3 + files.count)".utf8)
                files.append(file)
            }
            let bytes = Array(name.utf8) + [UInt8(ascii: "=")] + shown + [0]
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
            bytes.withUnsafeBufferPointer { source in
                UnsafeMutableRawPointer(pointer).copyMemory(from: source.baseAddress!, byteCount: bytes.count)
            }
            secretEntries.append((pointer, bytes.count))
            entries.append(pointer)
        }
        entries.append(nil)
        var arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        let pid = CTouchgateSys_spawn_piped(command[0], &arguments, &entries, directory, standardInput ?? -1,
                                            outPipe[1], errPipe[1], files, Int32(files.count))
        for (pointer, count) in secretEntries {
            memset(pointer, 0, count)
            pointer.deallocate()
        }
        for entry in entries.dropLast() where !secretEntries.contains(where: { $0.0 == entry }) { free(entry) }
        for argument in arguments { free(argument) }
        close(outPipe[1])
        close(errPipe[1])
        guard pid > 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw ServiceError(.execFailed, "cannot run \(StoredText.escaped(command[0])): \(String(cString: strerror(-pid)))"
                               + " (approved, but nothing ran; check the command's name and PATH)")
        }
        let streams = (outPipe[0], errPipe[0])
        let redaction = secrets.map { ($0.name, $0.value) }
        files.forEach { close($0) }
        files.removeAll()
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                var filters = [Redaction(redaction), Redaction(redaction)]
                pump(streams, filters: &filters, output: output, collected: collected)
                for index in filters.indices { filters[index].wipe() }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                let exited = status & 0x7F == 0
                continuation.resume(returning: exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F))
            }
            thread.start()
        }
    }

    /// Reads both streams until both end, each through its own filter.
    private static func pump(_ streams: (Int32, Int32), filters: inout [Redaction], output: Output, collected: Collected?) {
        var open = [streams.0, streams.1]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func deliver(_ bytes: [UInt8], stream: Int) {
            guard !bytes.isEmpty else { return }
            switch output {
            case .passThrough:
                FileOutput.write(bytes, to: stream == 0 ? 1 : 2)
            case .collected(let limit):
                guard let collected else { return }
                let room = limit - (stream == 0 ? collected.standardOutput.count : collected.standardError.count)
                if bytes.count > room { collected.truncated = true }
                let kept = bytes.prefix(max(0, room))
                if stream == 0 { collected.standardOutput += kept } else { collected.standardError += kept }
            }
        }
        while open.contains(where: { $0 >= 0 }) {
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&polls, nfds_t(polls.count), -1) >= 0 || errno == EINTR else { break }
            for (stream, entry) in polls.enumerated() where entry.fd >= 0 && entry.revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    deliver(filters[stream].filter(Array(buffer[..<count])), stream: stream)
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    deliver(filters[stream].finish(), stream: stream)
                    close(entry.fd)
                    open[stream] = -1
                }
            }
        }
        for index in buffer.indices { buffer[index] = 0 }
    }
}
