// virtual-finger: runs a command against libfprint's virtual_image reader and plays the
// finger. Each time the command asks for a finger (a `finger-needed` JSON event or a
// "Place/Swipe your …" line on standard error) the next NIST print is sent to the
// reader. Standard input and output pass through; the exit status is the command's.
//
//   virtual-finger [--print NAME]... [--socket PATH] -- touchgate verify
//
// Prints are fixture names (whorl, arch, loop-right, tented_arch) from shared/fixtures
// or TOUCHGATE_FIXTURES; the last one repeats. This is a development and demo tool: it
// is not installed with touchgate.
import Foundation
import TouchgateTestSupport
#if canImport(Glibc)
import Glibc
#endif

func usage() -> Never {
    FileHandle.standardError.write(Data("""
        usage: virtual-finger [--print NAME]... [--socket PATH] -- COMMAND [ARGS...]
          --print NAME   a print to present (whorl, arch, loop-right, tented_arch); repeat for several
          --socket PATH  the virtual_image socket (default: a private temporary path)

        """.utf8))
    exit(64)
}

var prints: [String] = []
var socketPath: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while let first = arguments.first, first != "--" {
    arguments.removeFirst()
    switch first {
    case "--print": guard let value = arguments.first else { usage() }; prints.append(value); arguments.removeFirst()
    case "--socket": guard let value = arguments.first else { usage() }; socketPath = value; arguments.removeFirst()
    default: usage()
    }
}
guard arguments.first == "--", arguments.count > 1 else { usage() }
let command = Array(arguments.dropFirst())
if prints.isEmpty { prints = ["whorl"] }

let directory: TemporaryDirectory? = socketPath == nil ? try? TemporaryDirectory("virtual-finger") : nil
let socket = socketPath ?? directory!.path("virtual-image.socket")
let finger = VirtualImageFinger(socketPath: socket)
finger.present(prints)

var environment = ProcessInfo.processInfo.environment
environment["FP_VIRTUAL_IMAGE"] = socket
environment["FP_DRIVERS_WHITELIST"] = environment["FP_DRIVERS_WHITELIST"] ?? "virtual_image"

let process = Process()
process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
process.arguments = command
process.environment = environment
let errors = Pipe()
process.standardError = errors
do { try process.run() } catch {
    FileHandle.standardError.write(Data("virtual-finger: cannot run \(command[0]): \(error)\n".utf8))
    exit(127)
}
// Ctrl-C reaches the child through the terminal; the tool itself waits for it.
signal(SIGINT, SIG_IGN)

var pending = Data()
let handle = errors.fileHandleForReading
while true {
    let chunk = handle.availableData
    if chunk.isEmpty { break }
    FileHandle.standardError.write(chunk)
    pending.append(chunk)
    while let newline = pending.firstIndex(of: 0x0A) {
        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
        pending = Data(pending[(newline + 1)...])
        finger.handle(line)
    }
}
process.waitUntilExit()
directory?.remove()
exit(process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus)
