// virtual-finger: runs a command against libfprint's virtual_image reader and plays the
// finger. Each time the command asks for a finger (a `finger-needed` JSON event or a
// "Place/Swipe your …" line on standard error) the next NIST print is sent to the
// reader. The command runs as a shell would run it in the foreground: in this process
// group (so it can ask for a passphrase on the terminal, and Ctrl-C reaches it), with
// every descriptor this tool was given (standard input and output, `3<file`, …); its
// standard error is copied through unchanged. The exit status is the command's
// (128 + N when signal N ended it).
//
//   virtual-finger [--print NAME]... [--socket PATH] -- touchgate verify
//   virtual-finger --watch --socket PATH [--print NAME]...
//
// With --watch it runs no command: it plays the finger each time any program waits on the
// virtual reader at PATH (touchgated started with FP_VIRTUAL_IMAGE=PATH, touchgate agent,
// a helper), as FingerprintKit announces in PATH.waiting, until Ctrl-C. That is how sudo,
// ssh, git and pass can be tried without a reader: their prompts come from the daemon or
// the agent, not from a command this tool starts.
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
               virtual-finger --watch --socket PATH [--print NAME]...
          --print NAME   a print to present (whorl, arch, loop-right, tented_arch); repeat for several;
                         none presents nothing, so the command waits (to try Ctrl-C)
          --socket PATH  the virtual_image socket (default: a private temporary path)
          --watch        run no command: present a print each time any program (touchgated started
                         with FP_VIRTUAL_IMAGE=PATH, touchgate agent, …) waits on that reader; Ctrl-C stops

        """.utf8))
    exit(64)
}

var prints: [String] = []
var socketPath: String?
var watching = false
var arguments = Array(CommandLine.arguments.dropFirst())
while let first = arguments.first, first != "--" {
    arguments.removeFirst()
    switch first {
    case "--watch": watching = true
    case "--print": guard let value = arguments.first else { usage() }; prints.append(value); arguments.removeFirst()
    case "--socket": guard let value = arguments.first else { usage() }; socketPath = value; arguments.removeFirst()
    default: usage()
    }
}
if prints.isEmpty { prints = ["whorl"] }
if watching {
    guard let socketPath, arguments.isEmpty else { usage() }
    watch(socket: socketPath, prints: prints)
}
guard arguments.first == "--", arguments.count > 1 else { usage() }
let command = Array(arguments.dropFirst())

let directory: TemporaryDirectory? = socketPath == nil ? try? TemporaryDirectory("virtual-finger") : nil
let socket = socketPath ?? directory!.path("virtual-image.socket")
let finger = VirtualImageFinger(socketPath: socket)
finger.present(prints == ["none"] ? [] : prints)

setenv("FP_VIRTUAL_IMAGE", socket, 1)
setenv("FP_DRIVERS_WHITELIST", "virtual_image", 0)  // unless the caller chose drivers

// The one descriptor the child must not inherit is this pipe: close-on-exec on both ends
// (the child's copy on descriptor 2 is made by dup2, which clears the flag).
var errors: [Int32] = [-1, -1]
guard pipe(&errors) == 0, errors.allSatisfy({ fcntl($0, F_SETFD, FD_CLOEXEC) == 0 }) else {
    FileHandle.standardError.write(Data("virtual-finger: pipe: \(Errno(errno))\n".utf8))
    exit(71)
}
let child: Child
switch Child.spawn(command, standardError: errors[1]) {
case .success(let started): child = started
case .failure(let error):
    FileHandle.standardError.write(Data("virtual-finger: cannot run \(command[0]): \(error)\n".utf8))
    directory?.remove()
    exit(error.code == ENOENT ? 127 : 126)
}
close(errors[1])

var pending = [UInt8]()
var buffer = [UInt8](repeating: 0, count: 4096)
while true {
    let count = read(errors[0], &buffer, buffer.count)
    if count < 0 && errno == EINTR { continue }
    if count <= 0 { break }
    var written = 0
    while written < count {
        let result = buffer[written..<count].withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        if result < 0 && errno == EINTR { continue }
        if result <= 0 { break }  // our standard error is gone; keep feeding the finger
        written += result
    }
    pending += buffer[0..<count]
    while let newline = pending.firstIndex(of: 0x0A) {
        finger.handle(String(decoding: pending[..<newline], as: UTF8.self))
        pending.removeSubrange(...newline)
    }
}
let status = child.wait()
directory?.remove()
exit(status)

/// Presents the next of `prints` each time a program announces a finger wait on the reader
/// at `socket` (a new content of `socket.waiting`, written by FingerprintKit). Waits that
/// were announced before it started are not answered.
func watch(socket: String, prints: [String]) -> Never {
    let marker = socket + ".waiting"
    let finger = VirtualImageFinger(socketPath: socket)
    finger.present(prints == ["none"] ? [] : prints)
    var queue = prints
    var seen = VirtualImageWait.announced(in: marker)
    FileHandle.standardError.write(Data("""
        virtual-finger: presenting \(prints.joined(separator: ", ")) each time a program waits on \(socket); \
        Ctrl-C stops

        """.utf8))
    while true {
        usleep(50_000)
        guard let now = VirtualImageWait.announced(in: marker), now != seen else { continue }
        // A wait in another process than the last is on another listener.
        if now.process != seen?.process { finger.reconnect() }
        seen = now
        let name = queue.count > 1 ? queue.removeFirst() : queue[0]
        finger.presentNext()
        // Which wait it answered, so that a log with one print too many says whose it was.
        FileHandle.standardError.write(Data("virtual-finger: presented \(name) (wait \(now.process) \(now.count))\n".utf8))
    }
}
