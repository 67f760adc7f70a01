import CTouchgateSys
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A file as the kernel names it, whatever path reaches it: its device and inode. An
/// executable is compared by this, never by its path, which a mount or a rename can put
/// another file behind.
public struct FileID: Sendable, Hashable, CustomStringConvertible {
    public let device: UInt64
    public let inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The file at `path` (following links: `/proc/PID/exe` leads to the file the process
    /// runs, in whatever mount namespace it runs), nil when it cannot be read.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public var description: String { "dev \(device) ino \(inode)" }
}

/// What the kernel says about a running process, read at one moment: the facts a door
/// judges "which program asks" by. Read again at each message that needs them, and compared
/// with what was read when the door first saw the process.
public struct ProcessFacts: Sendable, Equatable {
    /// The process id.
    public let pid: Int32
    /// When it started (clock ticks after boot, `/proc/PID/stat`'s 22nd field): with the pid,
    /// names the process, not the next one given the same pid.
    public let startTime: UInt64
    /// The file it runs (``FileID`` of `/proc/PID/exe`), nil when it cannot be read.
    public let executable: FileID?
    /// The path of that file, as its own mount namespace names it; for words, not decisions.
    public let executablePath: String?
    /// Its mount namespace (the inode of `/proc/PID/ns/mnt`).
    public let mountNamespace: UInt64?
    /// Its user namespace (the inode of `/proc/PID/ns/user`).
    public let userNamespace: UInt64?

    /// The facts of `pid` now; nil when it is gone or not readable.
    public static func of(_ pid: Int32) -> ProcessFacts? {
        guard pid > 0, let started = startTime(of: pid) else { return nil }
        return ProcessFacts(pid: pid, startTime: started, executable: FileID(path: "/proc/\(pid)/exe"),
                            executablePath: ProcessTable.executable(of: pid),
                            mountNamespace: FileID(path: "/proc/\(pid)/ns/mnt")?.inode,
                            userNamespace: FileID(path: "/proc/\(pid)/ns/user")?.inode)
    }

    /// This process's own facts.
    public static var own: ProcessFacts? { of(getpid()) }

    /// What names the image `pid` runs now, and nothing else: its start time and the file it
    /// runs. Two reads, for a door that judges every message (``isSameImage(as:)``).
    public static func image(of pid: Int32) -> (startTime: UInt64, executable: FileID)? {
        guard pid > 0, let started = startTime(of: pid), let file = FileID(path: "/proc/\(pid)/exe") else { return nil }
        return (started, file)
    }

    /// Whether the process now runs the image these facts describe (``image(of:)``).
    public func isSameImage(as image: (startTime: UInt64, executable: FileID)?) -> Bool {
        guard let image else { return false }
        return startTime == image.startTime && executable == image.executable
    }

    /// Whether it runs in the same mount and user namespaces as `other`.
    public func sharesNamespaces(with other: ProcessFacts) -> Bool {
        mountNamespace != nil && mountNamespace == other.mountNamespace
            && userNamespace != nil && userNamespace == other.userNamespace
    }

    static func startTime(of pid: Int32) -> UInt64? { ProcessTable.startTime(of: pid) }
}

/// Whether a user could change the program at a path: the file, or a directory on the way
/// to it, is theirs or open to their writes. A program the user can rewrite is not a program
/// an approval can name: whatever the user runs could be put there.
public enum ExecutableWritability {
    /// Why `uid` could replace the file at `path` (words for a prompt), or nil when it
    /// could not. Root can replace anything, and is never asked this (nil).
    public static func reason(_ path: String, writableBy uid: UInt32) -> String? {
        guard uid != 0, path.hasPrefix("/") else { return nil }
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path) cannot be examined" }
        if let why = open(info, uid: uid, sticky: false) { return "you can write \(path) (\(why))" }
        var directory = path
        while let slash = directory.lastIndex(of: "/"), directory != "/" {
            directory = slash == directory.startIndex ? "/" : String(directory[..<slash])
            var parent = stat()
            guard lstat(directory, &parent) == 0 else { return "\(directory) cannot be examined" }
            if let why = open(parent, uid: uid, sticky: parent.st_mode & S_ISVTX != 0 && info.st_uid != uid) {
                return "you can replace files in \(directory) (\(why))"
            }
        }
        return nil
    }

    /// Whether a file or directory with `info` is open to `uid`'s writes: owned by it, or
    /// writable by its group or by everyone (a sticky directory protects files others own).
    private static func open(_ info: stat, uid: UInt32, sticky: Bool) -> String? {
        if info.st_uid == uid { return "it is yours" }
        if sticky { return nil }
        if info.st_mode & S_IWOTH != 0 { return "anyone may write it" }
        if info.st_mode & S_IWGRP != 0, ProcessFacts.inGroup(info.st_gid) { return "your group may write it" }
        return nil
    }
}

extension ProcessFacts {
    /// Whether this process belongs to group `gid` (its own, or a supplementary one).
    static func inGroup(_ gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        var groups = [gid_t](repeating: 0, count: 256)
        let count = getgroups(Int32(groups.count), &groups)
        return count > 0 && groups[..<Int(count)].contains(gid)
    }
}

/// A process held by a pidfd: it names that process for as long as the handle lives, never a
/// later one given the same pid, so what is read of the pid while ``isRunning`` holds is of
/// the process that connected.
public final class ProcessHandle: HeldProcess {
    /// The process id.
    public let pid: Int32
    /// How it was held: `SO_PEERPIDFD`, or `pidfd_open` checked against the connection.
    public let source: Source
    private let descriptor: Int32
    /// The facts, once read.
    private let read = Mutex<ProcessFacts??>(nil)

    public enum Source: String, Sendable {
        /// The kernel's pidfd of the connecting process (Linux 6.5 and later).
        case peerPidfd = "SO_PEERPIDFD"
        /// A pidfd opened by pid, then found holding the connection's other end.
        case openedAndChecked = "pidfd_open"
    }

    private init(pid: Int32, descriptor: Int32, source: Source) {
        self.pid = pid
        self.descriptor = descriptor
        self.source = source
    }

    /// What the kernel says of the process (start time, the file it runs, its namespaces),
    /// read when first asked for (measured: reading /proc at every connection was a third of
    /// touchgated's time for a one-request connection) and only while it still runs; nil
    /// once it has exited.
    public var facts: ProcessFacts? {
        if let known = read.withLock({ $0 }) { return known }
        let facts = whileRunning(ProcessFacts.of) ?? nil
        read.withLock { $0 = facts }
        return facts
    }

    deinit { close(descriptor) }

    /// The process at the other end of the connected Unix socket `socket`, whose pid the
    /// kernel recorded as `pid`: its pidfd from the kernel where it has one; else one opened
    /// by pid, kept only if that process holds the socket `socket` is connected to (a pid
    /// given to another process since holds nothing of it). Nil when neither holds.
    public static func peer(of socket: Int32, pid: Int32) -> ProcessHandle? {
        let given = CTouchgateSys_peer_pidfd(socket)
        if given >= 0 { return ProcessHandle(pid: pid, descriptor: given, source: .peerPidfd) }
        return opened(checking: socket, pid: pid)
    }

    /// What ``peer(of:pid:)`` falls back to where the kernel gives no pidfd of the peer.
    public static func opened(checking socket: Int32, pid: Int32) -> ProcessHandle? {
        let opened = CTouchgateSys_pidfd_open(pid)
        guard opened >= 0 else { return nil }
        var info = stat()
        guard fstat(socket, &info) == 0, let peer = SocketHolders.peer(of: UInt32(truncatingIfNeeded: info.st_ino)),
              SocketHolders.sockets(of: pid)?.values.contains(peer) == true else {
            close(opened)
            return nil
        }
        return ProcessHandle(pid: pid, descriptor: opened, source: .openedAndChecked)
    }

    /// Whether the process still runs: once it has exited, its pid may be another's.
    public var isRunning: Bool { CTouchgateSys_pidfd_exited(descriptor) == 0 }
}

/// The Unix sockets processes hold, and what they are connected to: how a door tells
/// whether the process the bus names for a connection is the one holding it.
public enum SocketHolders {
    /// The Unix and other sockets `pid` holds open, by descriptor (`/proc/PID/fd/N` →
    /// `socket:[INODE]`), nil when its descriptors cannot be read.
    public static func sockets(of pid: Int32) -> [Int32: UInt32]? {
        guard let directory = opendir("/proc/\(pid)/fd") else { return nil }
        defer { closedir(directory) }
        var inodes: [Int32: UInt32] = [:]
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let descriptor = Int32(name) else { continue }
            let count = readlink("/proc/\(pid)/fd/\(name)", &target, target.count - 1)
            guard count > 8 else { continue }
            let link = String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if link.hasPrefix("socket:["), link.hasSuffix("]"), let inode = UInt32(link.dropFirst(8).dropLast()) {
                inodes[descriptor] = inode
            }
        }
        return inodes
    }

    /// The socket at the other end of the Unix socket `inode`, nil when it has none or the
    /// kernel does not say (NETLINK_SOCK_DIAG).
    public static func peer(of inode: UInt32) -> UInt32? {
        var peer: UInt32 = 0
        guard CTouchgateSys_unix_peer_inode(inode, &peer) == 0, peer != 0 else { return nil }
        return peer
    }

    /// Whether descriptor `descriptor` of `pid` closes when the process starts another
    /// program (`O_CLOEXEC` in `/proc/PID/fdinfo/N`), nil when that cannot be read.
    ///
    /// Why it tells who made a descriptor: starting a program closes every descriptor marked
    /// so, so one that is marked was made (opened, duplicated or received) by the program
    /// the process runs now; one that is not may have come from whatever ran in the process
    /// before, and been shared with another process then.
    public static func closesOnExec(pid: Int32, descriptor: Int32) -> Bool? {
        guard let file = fopen("/proc/\(pid)/fdinfo/\(descriptor)", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 128)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("flags:") else { continue }
            guard let flags = Int(String(text.dropFirst(6).filter { !$0.isWhitespace }), radix: 8) else { return nil }
            return flags & Int(O_CLOEXEC) != 0
        }
        return nil
    }
}

extension ProcessFacts {
    /// One of a process's ancestors, as an approval binds it: which process (its pid and
    /// start time: a pid used again is another process) and what it ran.
    public struct Ancestor: Sendable, Equatable {
        public let pid: Int32
        public let startTime: UInt64
        public let executable: String
    }

    /// The parents of `pid`, nearest first, up to ``ProcessTable/maximumChain``, stopping
    /// before init; empty when `pid` is gone.
    public static func ancestry(above pid: Int32) -> [Ancestor] {
        var chain: [Ancestor] = []
        var current = pid
        while chain.count < ProcessTable.maximumChain, let parent = ProcessTable.parent(of: current), parent > 1,
              let started = startTime(of: parent), let executable = ProcessTable.executable(of: parent) {
            chain.append(Ancestor(pid: parent, startTime: started, executable: executable))
            current = parent
        }
        return chain
    }

    /// The control group of `pid` (`/proc/PID/cgroup`'s unified line: `/user.slice/…`), nil
    /// when it cannot be read.
    public static func cgroup(of pid: Int32) -> String? {
        let file = open("/proc/\(pid)/cgroup", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let lines = String(decoding: bytes[..<count], as: UTF8.self).split(separator: "\n")
        let unified = lines.first { $0.hasPrefix("0::") } ?? lines.last
        return unified.map { String($0.split(separator: ":", maxSplits: 2).last ?? "") }.map { StoredText.escaped($0) }
    }
}
