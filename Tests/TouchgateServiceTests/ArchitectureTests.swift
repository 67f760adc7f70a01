import Foundation
import Subprocess
import Testing
import TouchgateAPI

/// docs/ARCHITECTURE.md's module table against `Package.swift` (as `swift package
/// dump-package` reads it), and every target's imports against what it declares.
@Suite struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each target: its kind, declared dependencies (target and product names) and directory.
    struct Target {
        let name: String
        let type: String
        let dependencies: [String]
        let path: String
    }

    static func targets() async throws -> [Target] {
        // A scratch directory of its own: the running `swift test` holds the package's lock.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("touchgate-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let dumped = try await Subprocess.run(
            .name("swift"), arguments: ["package", "--package-path", root.path, "--scratch-path", scratch.path, "dump-package"],
            output: .bytes(limit: 1 << 24))
        try #require(dumped.terminationStatus.isSuccess, "swift package dump-package failed: is swift on PATH?")
        let package = try #require(try JSONSerialization.jsonObject(with: Data(dumped.standardOutput)) as? [String: Any])
        let targets = try #require(package["targets"] as? [[String: Any]])
        return targets.compactMap { target in
            guard let name = target["name"] as? String, let type = target["type"] as? String else { return nil }
            let dependencies = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency in
                (dependency.values.first as? [Any])?.first as? String
            }
            let path = target["path"] as? String ?? (type == "test" ? "Tests/" : "Sources/") + name
            return Target(name: name, type: type, dependencies: dependencies, path: path)
        }
    }

    @Test("the module table in docs/ARCHITECTURE.md names every target with exactly its declared dependencies")
    func moduleTable() async throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- modules: checked against Package.swift by ArchitectureTests -->"))
        let end = try #require(text.range(of: "<!-- modules: end -->", range: start.upperBound..<text.endIndex))
        var rows: [String: Set<String>] = [:]
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5 else { continue }
            let names = { (cell: String) in Set(cell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")) }.filter { !$0.isEmpty }) }
            rows[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = names(cells[3])
        }
        let targets = try await Self.targets().filter { $0.type != "test" }
        #expect(Set(rows.keys) == Set(targets.map(\.name)),
                "table only: \(Set(rows.keys).subtracting(targets.map(\.name))); Package.swift only: \(Set(targets.map(\.name)).subtracting(rows.keys))")
        for target in targets {
            #expect(rows[target.name] == Set(target.dependencies),
                    "\(target.name): the table says \(rows[target.name]?.sorted() ?? []), Package.swift \(target.dependencies.sorted())")
        }
    }

    @Test("every target imports only the modules it declares (or the toolchain's)")
    func importsAreDeclared() async throws {
        let toolchain: Set<String> = ["Foundation", "FoundationEssentials", "Glibc", "Dispatch", "Testing", "Synchronization",
                                      "_Concurrency", "XCTest", "Darwin", "Musl"]
        for target in try await Self.targets() {
            let directory = Self.root.appendingPathComponent(target.path)
            guard let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { continue }
            var imported: Set<String> = []
            for case let file as URL in files where file.pathExtension == "swift" {
                imported.formUnion(Self.imports(of: try String(contentsOf: file, encoding: .utf8)))
            }
            let undeclared = imported.subtracting(target.dependencies).subtracting(toolchain).subtracting([target.name])
            #expect(undeclared.isEmpty, "\(target.name) imports \(undeclared.sorted()) without declaring them in Package.swift")
        }
    }

    /// Where a shipped target may import the whole of Foundation, each with the measured
    /// need: none. Foundation (swift-corelibs-foundation) brings FoundationInternationalization
    /// and ICU's 34 MB of data into every program linking it (BENCHMARKS.md, "Weight");
    /// FoundationEssentials has what the code needs. Tests and the benchmark tool may.
    static let fullFoundationAllowed: [String: String] = [:]

    @Test("no target that ships imports the whole of Foundation: FoundationEssentials only, so no program carries ICU")
    func foundationEssentialsOnly() async throws {
        for target in try await Self.targets() where target.type != "test" && target.type != "system"
            && !["touchgate-bench", "virtual-finger", "fpcmoc-lifecycle", "TouchgateTestSupport"].contains(target.name) {
            let directory = Self.root.appendingPathComponent(target.path)
            guard let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let imported = Self.imports(of: try String(contentsOf: file, encoding: .utf8))
                #expect(!imported.contains("Foundation") || Self.fullFoundationAllowed[target.name] != nil,
                        "\(file.path) imports Foundation: use FoundationEssentials (or say in fullFoundationAllowed what needs it)")
            }
        }
    }

    /// The modules a file imports: its import lines before the first declaration.
    static func imports(of source: String) -> Set<String> {
        var modules: Set<String> = []
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("//") || trimmed.hasPrefix("#if") || trimmed.hasPrefix("#else")
                || trimmed.hasPrefix("#elseif") || trimmed.hasPrefix("#endif") { continue }
            let words = trimmed.split(separator: " ").map(String.init)
            guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                  words[..<index].allSatisfy({ $0.hasPrefix("@") || ["public", "internal", "package", "private"].contains($0) })
            else { break }
            let rest = words[(index + 1)...]
            let name = ["struct", "class", "enum", "func", "var", "protocol", "typealias"].contains(rest.first!) ? rest.dropFirst().first! : rest.first!
            modules.insert(String(name.split(separator: ".").first!))
        }
        return modules
    }
}

/// docs/ARCHITECTURE.md's "How to add an operation", counted on the last one added: the
/// files that name it are the ones the document lists, and no door or host grew code of
/// its own for it beyond its one line.
@Suite struct OperationFootprintTests {
    @Test("the last operation added touched exactly the files \"How to add an operation\" names")
    func lastOperationsFiles() throws {
        let root = ArchitectureTests.root
        let sources = root.appendingPathComponent("Sources")
        let last = try #require(TouchgateAPI.DaemonOperation.allCases.last)
        // Its names: the case and use case (`sshConfirm`), the table entry (`SshConfirm`).
        let swiftName = String(describing: last)
        let entry = swiftName.prefix(1).uppercased() + swiftName.dropFirst()
        var files: [String] = []
        let walker = FileManager.default.enumerator(atPath: sources.path)
        while let relative = walker?.nextObject() as? String {
            guard relative.hasSuffix(".swift"),
                  let text = try? String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8) else { continue }
            if text.contains(swiftName) || text.contains("Operations.\(entry)") || text.contains("enum \(entry):") {
                files.append(relative)
            }
        }
        let document = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let start = try #require(document.range(of: "<!-- last operation: "))
        let line = document[start.upperBound...].prefix { $0 != "\n" }
        let listed = line.components(separatedBy: " -->").first?.split(separator: " ").map(String.init) ?? []
        #expect(listed.first == last.rawValue, "ARCHITECTURE.md counts \(listed.first ?? "nothing"), the last operation is \(last.rawValue)")
        #expect(Set(files) == Set(listed.dropFirst()), """
            the files naming \(last.rawValue) are \(files.sorted()); ARCHITECTURE.md lists \(listed.dropFirst().sorted())
            """)
    }
}
