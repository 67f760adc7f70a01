#if canImport(Glibc)
import Glibc
#endif

/// Another Touchgate executable installed beside the running one: in a build directory,
/// or in `../libexec/touchgate/` relative to it (`make install` puts `touchgate` in bin and
/// the others there).
public struct SiblingProgram: Sendable {
    /// Its file name (`touchgate-cli`).
    public let name: String

    /// The program called `name`.
    public init(_ name: String) {
        self.name = name
    }

    /// `touchgate-cli`: every command, in either mode, with the service in-process when the
    /// personal mode serves.
    public static let fullCLI = SiblingProgram("touchgate-cli")
    /// `touchgate-client`: every command through touchgated, linking neither the service
    /// nor the vault; it hands the personal mode to ``fullCLI``.
    public static let client = SiblingProgram("touchgate-client")

    /// Where it may be, relative to the running binary's directory, in the order tried.
    public var places: [String] { [name, "../libexec/touchgate/" + name] }

    /// Replaces this process with the program, given the same arguments (the program name
    /// too, so that a helper's name still selects the helper); returns only by exiting,
    /// with ``ExitStatus/commandNotRunnable`` and a message saying what to build or install
    /// when it is not there.
    public func exec(_ arguments: [String]) -> Never {
        let directory = Self.ownDirectory()
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        var failure = ENOENT
        for place in places {
            let path = directory + "/" + place
            execv(path, &argv)
            if errno != ENOENT { failure = errno }
        }
        FileOutput.write(TerminalText.failure("cannot run \(name) (looked for \(places.joined(separator: " and ")) in "
                                              + "\(directory)): \(String(cString: strerror(failure))); "
                                              + "build it (swift build --product \(name)) or reinstall touchgate "
                                              + "(make install)") + "\n", to: 2)
        exit(ExitStatus.commandNotRunnable)
    }

    /// Where the helper link `name` (`pinentry-touchgate`, …) of the running installation is,
    /// for a `--help` text that tells a user what to configure: the `bin` beside the
    /// `libexec/touchgate` this program runs from (`/usr/bin` for the packages,
    /// `/usr/local/bin` after a plain `make install`), this program's own directory elsewhere
    /// (a build directory). Written into the manual (`--experimental-dump-help`, run from the
    /// build directory), it is the packages' path, `/usr/bin/NAME`.
    public static func helperPath(_ name: String) -> String {
        if CommandLine.arguments.contains("--experimental-dump-help") { return "/usr/bin/" + name }
        let directory = ownDirectory()
        let libexec = "/libexec/touchgate"
        guard directory.hasSuffix(libexec) else { return (directory == "/" ? "" : directory) + "/" + name }
        return String(directory.dropLast(libexec.count)) + "/bin/" + name
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
