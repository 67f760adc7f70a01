import FoundationEssentials
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
    /// `request.directory` is where the command runs; with `inDirectory` false it is this
    /// process's own, and no path is looked up again after the approval.
    static func run(_ request: ApprovalRequest, service: any TouchgateRequests, device: String?,
                    interaction: any Interaction, standardInput: Int32?, output: Output,
                    inDirectory: Bool = true, collected: Collected? = nil) async throws(ServiceError) -> Outcome {
        let command = request.command ?? []
        let (report, packed) = try await service.approve(request, device: device, interaction: interaction)
        guard report.refusal == nil else {
            return Outcome(receipt: report.receipt, refusal: report.refusal, status: nil)
        }
        guard let packed else {
            throw ServiceError(.dataError, "the service approved the command but released nothing for it; nothing was run")
        }
        let values = try PackedValues.unpack(packed, count: request.secrets.count)
        guard values.count == request.secrets.count else {
            throw ServiceError(.dataError, "the service released \(values.count) values for \(request.secrets.count) secrets; nothing was run")
        }
        let named = zip(request.secrets, values).map { binding, value in
            (name: binding.variable, value: value.withUnsafeBytes { Array($0) }, asFile: binding.asFile == true)
        }
        let status = try await spawnAndPump(command, directory: inDirectory ? request.directory : nil, secrets: named,
                                            standardInput: standardInput, output: output, collected: collected)
        return Outcome(receipt: report.receipt, refusal: nil, status: status)
    }

    /// Variables the command does not get from this process: each makes the program shown
    /// run other code first (the dynamic loader's preloads and audit modules, the library
    /// path, the scripts shells read at start).
    static let withheldVariables: Set<String> = ["LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "BASH_ENV", "ENV"]

    /// The command as it will run: its program as an absolute path (a name is looked up in
    /// PATH here, before the person sees it, so what is shown and bound is what runs), the
    /// arguments as given. Nil when no such program can be run.
    static func resolved(_ command: [String], in directory: String) -> [String]? {
        guard let program = command.first, !program.isEmpty else { return nil }
        func runnable(_ path: String) -> String? {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(path, X_OK) == 0 else { return nil }
            return URL(fileURLWithPath: path).standardizedFileURL.path
        }
        if program.contains("/") {
            let path = program.hasPrefix("/") ? program : directory + "/" + program
            return runnable(path).map { [$0] + command.dropFirst() }
        }
        let search = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in search.split(separator: ":", omittingEmptySubsequences: false) {
            let base = folder.isEmpty ? directory : folder.hasPrefix("/") ? String(folder) : directory + "/" + folder
            if let found = runnable(base + "/" + program) { return [found] + command.dropFirst() }
        }
        return nil
    }

    /// Starts `command` with `secrets` added to this process's environment, its output
    /// through the filter, and waits for it on a thread of its own (the reads and `waitpid`
    /// block). Cancelled (Ctrl-C, SIGTERM), it passes SIGTERM on to the command.
    private static func spawnAndPump(_ command: [String], directory: String?,
                                     secrets: [(name: String, value: [UInt8], asFile: Bool)],
                                     standardInput: Int32?, output: Output,
                                     collected: Collected?) async throws(ServiceError) -> Int32 {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        // Everything made for the child is closed, wiped and freed on every way out.
        var files: [Int32] = []
        var secretEntries: [(UnsafeMutablePointer<CChar>, Int)] = []
        var entries: [UnsafeMutablePointer<CChar>?] = []
        var arguments: [UnsafeMutablePointer<CChar>?] = []
        defer {
            for (pointer, count) in secretEntries {
                memset(pointer, 0, count)
                pointer.deallocate()
            }
            for entry in entries where !secretEntries.contains(where: { $0.0 == entry }) { free(entry) }
            for argument in arguments { free(argument) }
            for file in files + [outPipe[1], errPipe[1]] where file >= 0 { close(file) }
        }
        guard CTouchgateSys_pipe(&outPipe) == 0, CTouchgateSys_pipe(&errPipe) == 0 else {
            for file in outPipe + errPipe where file >= 0 { close(file) }
            (outPipe, errPipe) = ([-1, -1], [-1, -1])
            throw ServiceError(.execFailed, "cannot make a pipe for the command's output: \(String(cString: strerror(errno)))")
        }
        // The environment: this process's, less any variable a secret replaces or that makes
        // the program run other code (``withheldVariables``), plus each secret.
        let replaced = Set(secrets.map(\.name)).union(withheldVariables)
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if !replaced.contains(name) { entries.append(strdup(entry)) }
            index += 1
        }
        // A secret as a file: a sealed file in memory, the child's descriptor 3 and up, its path in the variable.
        for (name, value, asFile) in secrets {
            var shown = value
            if asFile {
                let file = value.withUnsafeBytes { CTouchgateSys_sealed_memory_file($0.baseAddress, $0.count) }
                guard file >= 0 else {
                    close(outPipe[0])
                    close(errPipe[0])
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
        arguments = command.map { strdup($0) } + [nil]
        let pid = CTouchgateSys_spawn_piped(command[0], &arguments, &entries, directory, standardInput ?? -1,
                                            outPipe[1], errPipe[1], files, Int32(files.count))
        // The child has its copies: the values here are wiped now, and the write ends here
        // would keep its output from ever ending.
        for (pointer, count) in secretEntries {
            memset(pointer, 0, count)
            pointer.deallocate()
        }
        entries.removeAll { entry in secretEntries.contains { $0.0 == entry } }
        secretEntries.removeAll()
        close(outPipe[1])
        close(errPipe[1])
        (outPipe[1], errPipe[1]) = (-1, -1)
        guard pid > 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw ServiceError(.execFailed, "cannot run \(StoredText.escaped(command[0])): \(String(cString: strerror(-pid)))"
                               + " (approved, but nothing ran)")
        }
        let streams = (outPipe[0], errPipe[0])
        let redaction = secrets.map { ($0.name, $0.value) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                SystemThread.detach(name: nil) {
                    var filters = [Redaction(redaction), Redaction(redaction)]
                    let status = pump(streams, child: pid, filters: &filters, output: output, collected: collected)
                    for index in filters.indices { filters[index].wipe() }
                    continuation.resume(returning: status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F))
                }
            }
        } onCancel: {
            kill(pid, SIGTERM)
        }
    }

    /// Reads both streams, each through its own filter, until both end or, once the command
    /// has exited, until they fall quiet for a moment (a program it left behind may hold them
    /// open for ever); then reaps it. Its wait status.
    private static func pump(_ streams: (Int32, Int32), child: pid_t, filters: inout [Redaction], output: Output,
                             collected: Collected?) -> Int32 {
        var open = [streams.0, streams.1]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var status: Int32 = 0
        var exited = false
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
            let ready = poll(&polls, nfds_t(polls.count), exited ? 500 : 200)
            if ready < 0 && errno != EINTR { break }
            if !exited, waitpid(child, &status, WNOHANG) == child { exited = true }
            if ready == 0 && exited { break }
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
        for stream in open.indices where open[stream] >= 0 {
            deliver(filters[stream].finish(), stream: stream)
            close(open[stream])
        }
        if !exited { while waitpid(child, &status, 0) < 0 && errno == EINTR {} }
        for index in buffer.indices { buffer[index] = 0 }
        return status
    }
}
