import FoundationEssentials
public import TouchgateAPI
import TouchgateTerminal

/// The use cases behind the helpers (`touchgate askpass`, `git-credential-touchgate`,
/// `pinentry-touchgate`): which item answers which request, and what is released, stored
/// or removed. The executables only speak their program's protocol; every request goes
/// through ``TouchgateRequests`` (in this process or touchgated) with the requesting
/// program named in the audit trail: `service` is the one its commands resolved for that
/// requester, which names it in every record.
public struct HelperRequests: Sendable {
    /// Who serves the requests.
    public let service: any TouchgateRequests
    /// The program the helper acts for, as audit records name it.
    public let requester: String

    /// Requests made through `service` for `requester`.
    public init(service: any TouchgateRequests, requester: String) {
        self.service = service
        self.requester = requester
    }

    // MARK: ssh

    /// The passphrase of the SSH key `prompt` asks for, released under its item's policy.
    /// - Throws: ``ServiceError`` `not-found` when no mapping matches the prompt; the
    ///   release's own errors otherwise.
    public func keyPassphrase(prompt: String, settings: HelperSettings,
                              interaction: any Interaction) async throws(ServiceError) -> SecretBytes {
        guard let item = settings.askpassItem(for: prompt) else {
            throw ServiceError(.notFound, "no item is mapped to the prompt \"\(StoredText.escaped(prompt))\"; "
                               + "map one with: touchgate askpass map PATTERN ITEM")
        }
        return try await service.secretGet(item, device: nil, interaction: interaction)
    }

    /// Approves one use of a key added with `ssh-add -c`: a touch of any enrolled finger
    /// (counted, refused during a lockout), recorded as the approval of the use ssh-agent's
    /// `question` names (`ssh.confirm`).
    /// - Throws: ``ServiceError`` `no-match` when the finger did not match; the verification's errors otherwise.
    public func approveKeyUse(_ question: String, interaction: any Interaction) async throws(ServiceError) {
        let report = try await service.sshConfirm(question, interaction: interaction)
        guard report.match else {
            throw ServiceError(.noMatch, "the finger did not match; the key was not used", attemptsLeft: report.attemptsLeft)
        }
    }

    // MARK: git

    /// What git knows about the credential, when the item for it exists: its name and value.
    /// `get` releases it (username and password), or nothing when there is none or its
    /// username differs from the one git asks for.
    public func gitCredential(for request: GitCredentialRequest,
                              interaction: any Interaction) async throws(ServiceError) -> GitCredential? {
        let name = try request.itemName()
        guard try await service.secretList().contains(where: { $0.name == name && !$0.invalidated }) else { return nil }
        let value = try await service.secretGet(name, device: nil, interaction: interaction)
        let credential = try GitCredential(stored: value, item: name)
        if let asked = request.username, asked != credential.username { return nil }
        return credential
    }

    /// Saves what git learned under `policy`, unless an item for the URL exists already
    /// (git stores after every successful use; replacing would ask for a touch each time).
    /// Returns the report, or nil when nothing was stored.
    public func storeGitCredential(_ request: GitCredentialRequest, password: SecretBytes, policy: String,
                                   interaction: any Interaction) async throws(ServiceError) -> StoredReport? {
        let name = try request.itemName()
        guard let username = request.username else { return nil }
        if try await service.secretList().contains(where: { $0.name == name && !$0.invalidated }) { return nil }
        let value = try GitCredential.storedForm(username: username, password: password)
        return try await service.secretAdd(name, value: { value }, policy: policy, fresh: false, replace: true,
                                    device: nil, interaction: interaction)
    }

    /// Removes the item for the URL git rejected; returns whether one existed.
    public func eraseGitCredential(_ request: GitCredentialRequest,
                                   interaction: any Interaction) async throws(ServiceError) -> Bool {
        let name = try request.itemName()
        guard try await service.secretList().contains(where: { $0.name == name }) else { return false }
        try await service.secretRm(name, interaction: interaction)
        return true
    }

    // MARK: gpg

    /// The passphrase of the gpg key `keygrip` names, when an item is mapped to it (nil
    /// otherwise: the caller falls back to a pinentry).
    public func gpgPassphrase(keygrip: String, settings: HelperSettings,
                              interaction: any Interaction) async throws(ServiceError) -> SecretBytes? {
        guard let grip = HelperSettings.canonicalKeygrip(keygrip), let item = settings.pinentryKeys[grip] else {
            return nil
        }
        return try await service.secretGet(item, device: nil, interaction: interaction)
    }
}
