import ArgumentParser
import Dispatch
import FoundationEssentials
import Synchronization
import TouchgateAPI
import TouchgateTerminal

/// What the shell offers on TAB for values the user would otherwise have to remember:
/// stored secret names, policies and finger names.
///
/// Secret names are looked up when TAB is pressed: the shell runs `touchgate ---completion …`
/// and the closure asks the service, as `secret list` does (no passphrase, works while the
/// vault is locked). It never prompts, never creates the data directory, and offers nothing
/// on any error. The fixed sets are plain lists, written into the generated script.
enum Completions {
    /// The names of the stored secrets, for `secret get/exec/rm/add NAME`.
    static let secretNames = CompletionKind.custom { _, _, _ in storedSecretNames() }

    /// The four single policies for `--policy`; `&`/`|` combinations are typed by hand.
    static let policies = CompletionKind.list(policyNames)

    /// The finger names `enroll` and `prints delete` take.
    static let fingers = CompletionKind.list(Vocabulary.fingers)

    /// The finger names and `any`, for `verify`.
    static let fingersOrAny = CompletionKind.list(Vocabulary.fingers + ["any"])

    /// The policy flags of the string form (see `AccessPolicy+StringForm.swift`).
    static let policyNames = ["biometry-any", "biometry-current-set", "user-presence", "passphrase"]

    /// The stored names the shell can take as they are, in the store's order; none when
    /// there is no store yet or it cannot be read.
    static func storedSecretNames() -> [String] {
        // No store yet: say nothing rather than create one on a TAB.
        if service.mode == .personal, !ServiceChoice.requiredHost.personalStoreExists { return [] }
        let names = NameBox()
        let done = DispatchSemaphore(value: 0)
        // argument-parser calls a synchronous closure from the synchronous `parseAsRoot()`
        // that `Touchgate.main` uses; the lookup is async, so it runs on the global executor
        // while this (main) thread waits. It needs nothing from the main actor.
        Task.detached {
            let items = (try? await service.secretList()) ?? []
            names.set(items.map(\.name).filter(isShellSafe))
            done.signal()
        }
        done.wait()
        return names.value
    }

    /// Whether `name` can be offered to every shell as it is. bash expands each word of
    /// `compgen -W` (a `$(…)` in a name would run) and splits it at blanks, and zsh's
    /// `_describe` reads a colon as the start of a description; such names are not offered.
    static func isShellSafe(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix("-") && name.unicodeScalars.allSatisfy { scalar in
            isAlphanumeric(scalar) || "._+,/@%=-".unicodeScalars.contains(scalar)
        }
    }
}

/// A letter, mark or number (Unicode's L*, M* and N*): what Foundation's
/// `CharacterSet.alphanumerics` holds.
private func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
         .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber: true
    default: false
    }
}

/// The names found by the detached lookup.
private final class NameBox: Sendable {
    // The names, only touched under their lock.
    private let names = Mutex<[String]>([])

    func set(_ names: [String]) { self.names.withLock { $0 = names } }
    var value: [String] { names.withLock { $0 } }
}
