import CTouchgateSys
#if canImport(Glibc)
import Glibc
#endif

// Apart from SiblingProgram.swift, which the fuzz targets compile without the C module.
extension SiblingProgram {
    /// The file name this program was started by (the last component of the path execve was
    /// given, a symbolic link not resolved): which of its installed names it runs as.
    public static func startedAs() -> String {
        PathText.lastComponent(of: startedBy() ?? "")
    }

    /// The path this program was started by, absolute (a relative one is taken from the
    /// working directory), a symbolic link not resolved: what to run to start it as the same
    /// name again.
    public static func startedBy() -> String? {
        guard let raw = CTouchgateSys_exec_path() else { return nil }
        let path = String(cString: raw)
        guard !path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        return PathText.appending(path.hasPrefix("./") ? String(path.dropFirst(2)) : path,
                                  to: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
