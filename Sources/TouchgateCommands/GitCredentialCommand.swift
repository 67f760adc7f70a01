import ArgumentParser
import FoundationEssentials
import TouchgateAPI
import TouchgateHelpers
import TouchgateTerminal
import Glibc

/// `git-credential-touchgate OPERATION` (also `touchgate git-credential OPERATION`): git's
/// credential helper protocol, git-credential(1).
struct GitCredentialHelper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "git-credential",
        abstract: "A git credential helper: passwords for git over HTTPS, released with a touch.",
        discussion: """
            Run by git as `git credential-touchgate get|store|erase` after \
            `git config --global credential.helper touchgate` (with git-credential-touchgate, a \
            symlink to touchgate, on PATH). get releases the item git:PROTOCOL://HOST[/PATH] (after \
            what its policy asks for) and prints its username and password; store saves what git \
            learned under --policy when no item exists for the URL; erase removes it. Other \
            operations and unknown attributes are ignored, as git asks. Every release names git \
            in the audit trail.
            """)

    @Option(help: "The policy of credentials stored from git.", completion: Completions.policies)
    var policy = "user-presence"

    @Argument(help: "get, store or erase (git chooses).")
    var operation: String

    func validate() throws {
        do {
            try PolicyText.check(policy)
        } catch {
            throw ValidationError("invalid --policy: \(error.message)")
        }
    }

    func run() async throws {
        let (operation, policy) = (operation, policy)
        guard ["get", "store", "erase"].contains(operation) else { return }  // ignored, as git-credential(1) asks
        try await CommandRunner.run(json: false) { console in
            let request = try GitCredentialRequest(parsing: try SecretValue.readAll(from: 0))
            let helpers = HelperRequests.forThisProcess(requester: ProcessTable.describe(helper: "git-credential-touchgate", pid: getppid()))
            let interaction = TerminalInteraction(console: console, assumeYes: true)
            switch operation {
            case "get":
                if let credential = try await helpers.gitCredential(for: request, interaction: interaction) {
                    try SecretValue.writeStandardOutput(credential.output)
                }
            case "store":
                guard let password = request.password else { return ExitStatus.success }
                _ = try await helpers.storeGitCredential(request, password: password, policy: policy,
                                                         interaction: interaction)
            default:
                _ = try await helpers.eraseGitCredential(request, interaction: interaction)
            }
            return ExitStatus.success
        }
    }
}
