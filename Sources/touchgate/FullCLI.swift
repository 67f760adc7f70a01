#if canImport(Glibc)
import Glibc
#endif
import TouchgateBasics

/// touchgate-cli, which serves every command: installed beside this binary (a build
/// directory) or in `../libexec/touchgate/` (`make install`).
enum FullCLI {
    /// Where touchgate-cli may be, relative to this binary's directory.
    static let places = ["touchgate-cli", "../libexec/touchgate/touchgate-cli"]

    /// Replaces this process with touchgate-cli, given the same arguments (the program
    /// name too, so that a helper's name still selects the helper); returns only by exiting.
    static func exec(_ arguments: [String]) -> Never {
        let directory = ownDirectory()
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        var failure = ENOENT
        for place in places {
            let path = directory + "/" + place
            execv(path, &argv)
            if errno != ENOENT { failure = errno }
        }
        FileOutput.write(TerminalText.failure("cannot run touchgate-cli (looked for \(places.joined(separator: " and ")) in "
                                              + "\(directory)): \(String(cString: strerror(failure))); "
                                              + "build it (swift build --product touchgate-cli) or reinstall touchgate "
                                              + "(make install)") + "\n", to: 2)
        exit(ExitStatus.commandNotRunnable)
    }

    /// The directory of the running binary (symlinks resolved, as /proc/self/exe is).
    private static func ownDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return "." }
        let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
