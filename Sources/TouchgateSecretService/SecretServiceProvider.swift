import FoundationEssentials
import Synchronization
public import TouchgateAPI
import TouchgateBasics

/// The Secret Service (`org.freedesktop.secrets`) on the user's session bus, over the
/// vault: the door through which browsers, editors, `git` and Python's `keyring` keep their
/// secrets. It decides nothing: every search, store and release is a request to the
/// service (`secret-service.search`, `.store`, `.read`), which applies the item's policy and
/// the per-application rule and audits; this door turns the D-Bus API into those requests,
/// keeps the transport sessions and prompts, and shows what the service says as desktop
/// notifications.
///
/// An item is locked for a program until a touch naming that program approved it (the
/// specification's Unlock and Prompt, which libsecret calls by itself), so a second program
/// finds the item locked and must be approved by a touch of its own.
public final class SecretServiceProvider: Sendable {
    /// The service for each caller this door finds (behind the host's gate, or touchgated's client).
    private let requests: RequestsForCaller
    /// Where the agent reports: each event a request shows (as the terminal would show it),
    /// and a notice per release, refusal and prompt (never a secret).
    private let report: @Sendable (InteractionEvent) -> Void
    private let state = ProviderState()
    private let connection = Mutex<(bus: BusConnection, clients: BusClients)?>(nil)
    /// How long a prompt for a locked vault waits for `touchgate unlock`.
    let unlockWait: Duration

    /// A provider over `requests` (the service, hosted or in touchgated), reporting to `report`.
    public init(requests: @escaping RequestsForCaller, unlockWait: Duration = .seconds(120),
                report: @escaping @Sendable (InteractionEvent) -> Void) {
        self.requests = requests
        self.unlockWait = unlockWait
        self.report = report
    }

    private func log(_ line: String) {
        report(InteractionEvent(.notice, line))
    }

    /// The well-known name.
    public static let busName = "org.freedesktop.secrets"

    /// Connects to the session bus at `address` and takes the name.
    /// - Returns: ``SecretServiceStart/taken(by:)`` naming the program that owns it (a
    ///   keyring, or a program posing as one); this one then serves nothing and the
    ///   connection is closed.
    /// - Throws: ``ServiceError`` when the bus cannot be reached.
    public func start(address: String) throws(ServiceError) -> SecretServiceStart {
        let bus: BusConnection
        let names = BusNames()
        do {
            bus = try BusConnection(address: address, prefix: SecretServicePath.root, onCall: { [weak self] call in
                guard let self else { return }
                Task { await self.handle(call) }
            }, onSignal: { [weak self] member, arguments in
                guard member == "NameOwnerChanged", arguments.count == 3, let name = arguments[0].text,
                      name.hasPrefix(":") else { return }
                // Recorded here, in the bus's order, before any later message is handled.
                let present = arguments[2].text != ""
                names.changed(name, present: present)
                guard let self, !present else { return }
                Task { await self.clientLeft(name) }
            })
            try bus.watchClientsLeaving()
            guard try bus.requestName(Self.busName) else {
                let owner = Self.owner(of: Self.busName, on: bus)
                bus.close()
                return .taken(by: owner)
            }
        } catch {
            throw ServiceError(.error, "the Secret Service cannot start: \(error)")
        }
        connection.withLock { $0 = (bus, BusClients(bus: bus, names: names)) }
        return .serving
    }

    /// The keyrings known to serve the Secret Service, by executable name.
    static let knownKeyrings = ["gnome-keyring-daemon", "kwalletd5", "kwalletd6", "ksecretd", "keepassxc", "touchgate-cli"]

    /// Who owns `name` on `bus`, in words: the program and pid, and whether it is a keyring
    /// at all. A squatter (any program of the user can take a free name) is said to be one.
    static func owner(of name: String, on bus: BusConnection) -> String {
        let driver = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
        guard let unique = (try? bus.call(driver.0, driver.1, driver.2, "GetNameOwner", [.string(name)]))?.first?.text,
              let credentials = (try? bus.call(driver.0, driver.1, driver.2, "GetConnectionCredentials",
                                                [.string(unique)]))?.first?.properties,
              case .uint32(let pid)? = credentials["ProcessID"] else {
            return "another program (the bus does not say which)"
        }
        let executable = ProcessTable.executable(of: Int32(bitPattern: pid)) ?? "an unknown program"
        let program = PathText.lastComponent(of: executable)
        let known = knownKeyrings.contains(program)
        let shown = StoredText.escaped(executable)
        return known ? "\(StoredText.escaped(program)) (pid \(pid))"
            : "pid \(pid) \(shown), which is no keyring Touchgate knows: a program may be posing as your keyring to "
                + "collect the secrets other programs store"
    }

    /// Whether it still serves: started, and its bus still there.
    public var isServing: Bool {
        guard let bus = connection.withLock({ $0?.bus }) else { return false }
        return !bus.isClosed
    }

    /// Leaves the bus (the name is free again) and ends every prompt.
    public func stop() {
        let taken = connection.withLock { current in defer { current = nil }; return current }
        taken?.bus.close()
    }

    // MARK: Dispatch

    private func handle(_ call: BusCall) async {
        guard let (bus, clients) = connection.withLock({ $0 }) else { return }
        let reply: BusReply
        do {
            reply = .values(try await dispatch(call, bus: bus, clients: clients))
        } catch {
            reply = .error(name: error.name, message: error.message)
        }
        bus.answer(call, with: reply)
    }

    private func clientLeft(_ sender: String) async {
        guard let (_, clients) = connection.withLock({ $0 }) else { return }
        await clients.forget(sender)
        await state.forget(sender)
    }

    private func dispatch(_ call: BusCall, bus: BusConnection, clients: BusClients) async throws(SecretServiceError) -> [BusValue] {
        let target = SecretServicePath.target(of: call.path)
        guard let own = SecretInterface.interface(of: target) else {
            throw .noSuchObject("no Secret Service object at \(call.path)")
        }
        var interface = call.interface
        if interface.isEmpty {
            interface = [own, SecretInterface.properties, SecretInterface.introspectable]
                .first { SecretInterface.signatures[$0]?[call.member] != nil } ?? own
        }
        guard [own, SecretInterface.properties, SecretInterface.introspectable].contains(interface),
              let expected = SecretInterface.signatures[interface]?[call.member] else {
            throw .unknownMethod("\(call.path) has no method \(interface.isEmpty ? "" : interface + ".")\(call.member)")
        }
        guard call.signature == expected else {
            throw .invalidArguments("\(interface).\(call.member) takes (\(expected)), not (\(call.signature))")
        }
        if interface == SecretInterface.introspectable {
            return [.string(SecretInterface.introspection(of: own))]
        }
        // Opening a session, and the service's own properties, decide nothing by the program:
        // they do not wait for all that is found out of it.
        let judged = !(call.member == "OpenSession" || (interface == SecretInterface.properties && target == .service))
        let client = try await clients.client(call.sender, judged: judged)
        let context = Context(call: call, bus: bus, client: client, target: target)
        if interface == SecretInterface.properties {
            return try await properties(context, own: own)
        }
        switch (target, call.member) {
        case (.service, "OpenSession"): return try await openSession(context)
        case (.service, "CreateCollection"): return try await createCollection(context)
        case (.service, "SearchItems"): return try await searchService(context)
        case (.service, "Unlock"): return try await unlock(context)
        case (.service, "Lock"): return try await lock(context)
        case (.service, "GetSecrets"): return try await getSecrets(context)
        case (.service, "ReadAlias"):
            return [.objectPath(call.arguments[0].text == SecretServicePath.defaultAlias
                                    ? SecretServicePath.collection(SecretServicePath.defaultCollection) : "/")]
        case (.service, "SetAlias"):
            guard call.arguments[0].text == SecretServicePath.defaultAlias,
                  call.arguments[1].text == SecretServicePath.collection(SecretServicePath.defaultCollection) else {
                throw .notSupported("only the default alias exists, and it names the login collection")
            }
            return []
        case (.collection(let name), "SearchItems"): return try await searchCollection(context, name)
        case (.collection(let name), "CreateItem"): return try await createItem(context, name)
        case (.collection, "Delete"):
            throw .notSupported("collections are not deleted through the Secret Service; remove their items "
                                + "(touchgate secret rm) instead")
        case (.item(let collection, let id), "GetSecret"): return try await getSecret(context, collection, id)
        case (.item(let collection, let id), "SetSecret"): return try await setSecret(context, collection, id)
        case (.item(let collection, let id), "Delete"): return try await deleteItem(context, collection, id)
        case (.session(let id), "Close"):
            await state.closeSession(id, owner: call.sender)
            return []
        case (.prompt(let id), "Prompt"): return try await prompt(context, id)
        case (.prompt(let id), "Dismiss"):
            try await state.dismiss(id, owner: call.sender)
            bus.emit(call.path, SecretInterface.prompt, "Completed", [.boolean(true), .variant(.pathArray([]))],
                     to: call.sender)
            return []
        default:
            throw .unknownMethod("\(call.path) has no method \(interface).\(call.member)")
        }
    }

    /// One call, with who made it.
    struct Context: Sendable {
        let call: BusCall
        let bus: BusConnection
        let client: BusClients.Client
        let target: SecretServicePath.Target
        var application: ApplicationIdentity { client.identity }
        /// The caller this door found: the bus's uid and pid for the connection, the program
        /// as judged at this message, and its process chain for the trail.
        var caller: Caller {
            Caller(uid: client.uid, loginName: client.loginName, pid: Int32(bitPattern: client.pid),
                   executable: client.identity.executable, door: .secretService,
                   requester: "secret service for \(client.identity.chain)")
        }
        var program: String { PathText.lastComponent(of: client.identity.executable) }
    }

    /// Runs a request to the service for the client: its records name the client's chain,
    /// and the service's refusals become the Secret Service's errors.
    private func request<T: Sendable>(_ context: Context,
                                      _ body: (any TouchgateRequests) async throws(ServiceError) -> T)
        async throws(SecretServiceError) -> T {
        do {
            return try await body(requests(context.caller))
        } catch {
            log("secret service: \(context.program) (pid \(context.client.pid)): \(error.message)")
            throw SecretServiceError.from(error)
        }
    }

    private func interaction(_ context: Context, confirmed: Bool = false) -> BusInteraction {
        BusInteraction(bus: context.bus, application: context.program, confirmed: confirmed, report: report)
    }

    // MARK: Sessions

    private func openSession(_ context: Context) async throws(SecretServiceError) -> [BusValue] {
        let algorithm = context.call.arguments[0].text ?? ""
        let (output, transport) = try SecretTransport.negotiate(algorithm, input: context.call.arguments[1])
        let id = try await state.openSession(owner: context.call.sender, transport: transport)
        return [output, .objectPath(SecretServicePath.session(id))]
    }

    /// The transport of the session at `path`, which must be the caller's own.
    private func transport(_ path: String, _ context: Context) async throws(SecretServiceError) -> SecretTransport {
        guard case .session(let id) = SecretServicePath.target(of: path),
              let transport = await state.session(id, owner: context.call.sender) else {
            throw .noSession("no session \(path) of this connection; open one with OpenSession")
        }
        return transport
    }

    // MARK: Finding items

    /// The items `attributes` and `collection` select, as the caller may see them. One
    /// lookup is three or four calls that each need the listing (libsecret's GetAll,
    /// SearchItems, GetSecrets): the service's whole listing for this program is kept for
    /// ``listingLife`` and filtered here (a release asks the service again, which decides), and
    /// dropped whenever this provider changes anything. Kept for a measurement: a lookup cost
    /// 1.2 times gnome-keyring's with a listing for each call.
    private func search(_ context: Context, _ attributes: [SecretAttribute] = [],
                        collection: String? = nil) async throws(SecretServiceError) -> SecretServiceSearchReport {
        // What a listing says depends on the program only (which items it may read now), and
        // on whether that program is doubted: a doubted one never shares the real one's listing.
        let program = context.application.executable + "\u{0}" + (context.application.doubt ?? "")
        let whole: SecretServiceSearchReport
        if let kept = await state.listing(for: program, within: Self.listingLife) {
            whole = kept
        } else {
            let application = context.application
            whole = try await request(context) { requests async throws(ServiceError) in
                try await requests.secretServiceSearch([], collection: nil, application: application)
            }
            await state.keep(whole, for: program)
        }
        return SecretServiceSearchReport(locked: whole.locked, items: whole.items.filter { item in
            (collection == nil || item.details.collection == collection) && item.details.matches(attributes)
        })
    }

    /// How long a client's listing is kept.
    static let listingLife: Duration = .seconds(1)

    /// Drops every kept listing: something changed.
    private func changed() async {
        await state.dropListings()
    }

    private func item(_ context: Context, _ collection: String, _ id: String) async throws(SecretServiceError)
        -> SecretServiceItemReport {
        guard let found = try await search(context, collection: collection).items
            .first(where: { SecretServicePath.itemID($0.name) == id }) else {
            throw .noSuchObject("no item \(context.call.path)")
        }
        return found
    }

    private static func attributes(_ value: BusValue) throws(SecretServiceError) -> [SecretAttribute] {
        guard let pairs = value.stringPairs else { throw .invalidArguments("attributes must be a{ss}") }
        var byName: [String: String] = [:]
        for (name, value) in pairs { byName[name] = value }
        return byName.map { SecretAttribute($0.key, $0.value) }
    }

    private func searchService(_ context: Context) async throws(SecretServiceError) -> [BusValue] {
        let found = try await search(context, try Self.attributes(context.call.arguments[0]))
        let paths = { (unlocked: Bool) in
            found.items.filter { $0.unlocked == unlocked }.map { SecretServicePath.item($0.details.collection, $0.name) }
        }
        return [.pathArray(paths(true)), .pathArray(paths(false))]
    }

    private func searchCollection(_ context: Context, _ collection: String) async throws(SecretServiceError) -> [BusValue] {
        let found = try await search(context, try Self.attributes(context.call.arguments[0]), collection: collection)
        return [.pathArray(found.items.map { SecretServicePath.item(collection, $0.name) })]
    }

    // MARK: Releasing

    private func read(_ context: Context, _ item: SecretServiceItemReport,
                      into transport: SecretTransport, session: String) async throws(SecretServiceError) -> BusValue {
        let application = context.application, interaction = interaction(context)
        let value = try await request(context) { requests async throws(ServiceError) in
            defer { Task { await interaction.finish() } }
            return try await requests.secretServiceRead(item.name, application: application, approveOnly: false,
                                                        interaction: interaction)
        }
        guard let value else { throw .failed("nothing was released") }
        let (parameters, sealed) = try transport.seal(value)
        log("secret service: gave '\(StoredText.escaped(item.name))' to \(context.program) (pid \(context.client.pid))")
        return .tuple([.objectPath(session), .bytes(parameters), .bytes(sealed), .string(item.details.contentType)])
    }

    private func getSecrets(_ context: Context) async throws(SecretServiceError) -> [BusValue] {
        guard let paths = context.call.arguments[0].paths, let session = context.call.arguments[1].text else {
            throw .invalidArguments("GetSecrets takes item paths and a session")
        }
        let transport = try await transport(session, context)
        let found = try await search(context)
        var entries: [(BusValue, BusValue)] = []
        for path in Set(paths).sorted() {
            guard case .item(_, let id) = SecretServicePath.target(of: path),
                  let item = found.items.first(where: { SecretServicePath.itemID($0.name) == id }), item.unlocked else { continue }
            entries.append((.objectPath(path), try await read(context, item, into: transport, session: session)))
        }
        return [.dictionary(keyType: "o", valueType: "(oayays)", entries)]
    }

    private func getSecret(_ context: Context, _ collection: String, _ id: String) async throws(SecretServiceError)
        -> [BusValue] {
        guard let session = context.call.arguments[0].text else { throw .invalidArguments("GetSecret takes a session") }
        let transport = try await transport(session, context)
        let item = try await item(context, collection, id)
        guard item.unlocked else {
            throw .isLocked("the item is locked for \(context.program): unlock it (a touch that names the program) first")
        }
        return [try await read(context, item, into: transport, session: session)]
    }

    // MARK: Storing

    /// The value and content type of a secret struct, opened with the caller's session.
    private func secretValue(_ value: BusValue, _ context: Context) async throws(SecretServiceError)
        -> (SecretBytes, String) {
        guard case .tuple(let members) = value, members.count == 4, let session = members[0].text,
              case .bytes(let parameters) = members[1], case .bytes(let sealed) = members[2],
              let contentType = members[3].text else {
            throw .invalidArguments("a secret is (oayays): session, parameters, value, content type")
        }
        let transport = try await transport(session, context)
        return (try transport.open(parameters: parameters, value: sealed), contentType)
    }

    private func collectionExists(_ name: String, _ context: Context) async throws(SecretServiceError) -> Bool {
        if name == SecretServicePath.defaultCollection { return true }
        if await state.created.contains(name) { return true }
        return try await search(context).items.contains { $0.details.collection == name }
    }

    private func createItem(_ context: Context, _ collection: String) async throws(SecretServiceError) -> [BusValue] {
        guard try await collectionExists(collection, context) else {
            throw .noSuchObject("no collection \(context.call.path)")
        }
        guard let properties = context.call.arguments[0].properties, case .boolean(let replace) = context.call.arguments[2] else {
            throw .invalidArguments("CreateItem takes properties (a{sv}), a secret and replace (b)")
        }
        let label = properties[SecretInterface.itemLabel].flatMap(\.text) ?? ""
        let attributes = try properties[SecretInterface.itemAttributes].map(Self.attributes) ?? []
        let (value, contentType) = try await secretValue(context.call.arguments[1], context)
        let details = ItemDetails(collection: collection, label: label, attributes: attributes, contentType: contentType)
        let application = context.application, interaction = interaction(context)
        let stored = try await request(context) { requests async throws(ServiceError) in
            defer { Task { await interaction.finish() } }
            return try await requests.secretServiceStore(details, value: { value }, replace: replace,
                                                         application: application, interaction: interaction)
        }
        await changed()
        let path = SecretServicePath.item(collection, stored.name)
        log("secret service: \(context.program) (pid \(context.client.pid)) stored '\(StoredText.escaped(stored.name))'")
        context.bus.emit(SecretServicePath.collection(collection), SecretInterface.collection,
                         stored.replaced ? "ItemChanged" : "ItemCreated", [.objectPath(path)])
        return [.objectPath(path), .objectPath("/")]
    }

    private func setSecret(_ context: Context, _ collection: String, _ id: String) async throws(SecretServiceError)
        -> [BusValue] {
        let item = try await item(context, collection, id)
        let (value, contentType) = try await secretValue(context.call.arguments[0], context)
        var details = item.details
        details.contentType = contentType
        let application = context.application, interaction = interaction(context)
        let stored = details
        _ = try await request(context) { requests async throws(ServiceError) in
            defer { Task { await interaction.finish() } }
            return try await requests.secretServiceStore(stored, value: { value }, replace: true, application: application,
                                                         interaction: interaction)
        }
        await changed()
        context.bus.emit(SecretServicePath.collection(collection), SecretInterface.collection, "ItemChanged",
                         [.objectPath(context.call.path)])
        return []
    }

    private func deleteItem(_ context: Context, _ collection: String, _ id: String) async throws(SecretServiceError)
        -> [BusValue] {
        let item = try await item(context, collection, id)
        let application = context.application, interaction = interaction(context, confirmed: true)
        try await request(context) { requests async throws(ServiceError) in
            defer { Task { await interaction.finish() } }
            try await requests.secretServiceDelete(item.name, application: application, interaction: interaction)
        }
        await changed()
        log("secret service: \(context.program) (pid \(context.client.pid)) deleted '\(StoredText.escaped(item.name))'")
        context.bus.emit(SecretServicePath.collection(collection), SecretInterface.collection, "ItemDeleted",
                         [.objectPath(SecretServicePath.item(collection, item.name))])
        return [.objectPath("/")]
    }

    // MARK: Collections

    private func createCollection(_ context: Context) async throws(SecretServiceError) -> [BusValue] {
        guard let properties = context.call.arguments[0].properties else {
            throw .invalidArguments("CreateCollection takes properties (a{sv}) and an alias")
        }
        let alias = context.call.arguments[1].text ?? ""
        let label = properties[SecretInterface.collectionLabel].flatMap(\.text) ?? ""
        if alias == SecretServicePath.defaultAlias || label.isEmpty
            || SecretServicePath.collectionName(forLabel: label) == SecretServicePath.defaultCollection {
            return [.objectPath(SecretServicePath.collection(SecretServicePath.defaultCollection)), .objectPath("/")]
        }
        guard alias.isEmpty else { throw .notSupported("only the default alias exists") }
        let name = SecretServicePath.collectionName(forLabel: label)
        if try await state.create(name) {
            context.bus.emit(SecretServicePath.root, SecretInterface.service, "CollectionCreated",
                             [.objectPath(SecretServicePath.collection(name))])
        }
        return [.objectPath(SecretServicePath.collection(name)), .objectPath("/")]
    }

    private func collections(_ context: Context) async throws(SecretServiceError) -> [String] {
        let found = try await search(context)
        let names = Set([SecretServicePath.defaultCollection] + found.items.map(\.details.collection))
            .union(await state.created)
        return names.sorted().map(SecretServicePath.collection)
    }

    // MARK: Locking and prompts

    private func unlock(_ context: Context) async throws(SecretServiceError) -> [BusValue] {
        guard let paths = context.call.arguments[0].paths else { throw .invalidArguments("Unlock takes object paths") }
        let found = try await search(context)
        var unlocked: [String] = [], pending: [PendingUnlock] = []
        var vaultPending = false
        for path in paths {
            switch SecretServicePath.target(of: path) {
            case .collection, .service:
                if found.locked { vaultPending = true; pending.append(PendingUnlock(path: path, item: nil)) }
                else { unlocked.append(path) }
            case .item(_, let id):
                guard let item = found.items.first(where: { SecretServicePath.itemID($0.name) == id }) else { continue }
                if item.unlocked { unlocked.append(path) } else { pending.append(PendingUnlock(path: path, item: item.name)) }
            default:
                continue
            }
        }
        guard !pending.isEmpty else { return [.pathArray(unlocked), .objectPath("/")] }
        let id = try await state.addPrompt(owner: context.call.sender, pending: pending, vaultLocked: vaultPending || found.locked)
        return [.pathArray(unlocked), .objectPath(SecretServicePath.prompt(id))]
    }

    private func lock(_ context: Context) async throws(SecretServiceError) -> [BusValue] {
        guard let paths = context.call.arguments[0].paths else { throw .invalidArguments("Lock takes object paths") }
        // Locking through the Secret Service locks the vault, as touchgate lock does: the
        // key is forgotten and every program's approval ends.
        _ = try await request(context) { requests async throws(ServiceError) in try await requests.lock() }
        await changed()
        log("secret service: \(context.program) (pid \(context.client.pid)) locked the vault")
        return [.pathArray(paths), .objectPath("/")]
    }

    private func prompt(_ context: Context, _ id: String) async throws(SecretServiceError) -> [BusValue] {
        guard let prompt = await state.startPrompt(id, owner: context.call.sender) else {
            throw .noSuchObject("no prompt \(context.call.path) of this connection (already run, or dismissed)")
        }
        let task = Task { [self] in await self.run(prompt, context) }
        await state.attach(task, to: id)
        return []
    }

    /// Runs an unlock prompt: waits for the vault to be unlocked if it is locked (saying how),
    /// then asks a touch naming the program for each item, and says which it got.
    private func run(_ prompt: ProviderState.Prompt, _ context: Context) async {
        let path = SecretServicePath.prompt(prompt.id)
        var approved: [String] = []
        if prompt.vaultLocked {
            let interaction = interaction(context)
            interaction.event(InteractionEvent(.notice, "Touchgate is locked: run touchgate unlock in a terminal "
                                               + "to let \(context.program) in"))
            let deadline = ContinuousClock.now + unlockWait
            var unlocked = false
            while !Task.isCancelled, ContinuousClock.now < deadline {
                if let found = try? await search(context), !found.locked { unlocked = true; break }
                try? await Task.sleep(for: .milliseconds(500))
            }
            await interaction.finish()
            guard unlocked else {
                await complete(prompt, context, path: path, approved: [])
                return
            }
            approved += prompt.pending.filter { $0.item == nil }.map(\.path)
        }
        for pending in prompt.pending {
            guard let name = pending.item, !Task.isCancelled else { continue }
            let application = context.application, interaction = interaction(context)
            do {
                _ = try await request(context) { requests async throws(ServiceError) in
                    defer { Task { await interaction.finish() } }
                    return try await requests.secretServiceRead(name, application: application, approveOnly: true,
                                                                interaction: interaction)
                }
                approved.append(pending.path)
                log("secret service: a touch let \(context.program) (pid \(context.client.pid)) read "
                    + "'\(StoredText.escaped(name))'")
            } catch {
                if !Task.isCancelled { await interaction.refused(error.message) }
                break
            }
        }
        await complete(prompt, context, path: path, approved: approved)
    }

    private func complete(_ prompt: ProviderState.Prompt, _ context: Context, path: String, approved: [String]) async {
        await changed()
        // A dismissed prompt already said so.
        guard await state.finishPrompt(prompt.id) else { return }
        context.bus.emit(path, SecretInterface.prompt, "Completed",
                         [.boolean(approved.isEmpty), .variant(.pathArray(approved))], to: context.call.sender)
    }

    // MARK: Properties

    private func properties(_ context: Context, own: String) async throws(SecretServiceError) -> [BusValue] {
        let arguments = context.call.arguments
        let interface = arguments[0].text ?? ""
        guard interface == own || interface.isEmpty else {
            throw .invalidArguments("\(context.call.path) has no interface \(interface)")
        }
        switch context.call.member {
        case "Get":
            let name = arguments[1].text ?? ""
            guard let value = try await propertyValues(context)[name] else {
                throw SecretServiceError(name: "org.freedesktop.DBus.Error.UnknownProperty",
                                         message: "\(own) has no property \(name)")
            }
            return [.variant(value)]
        case "GetAll":
            let values = try await propertyValues(context)
            return [.dictionary(keyType: "s", valueType: "v",
                                values.keys.sorted().map { (.string($0), .variant(values[$0]!)) })]
        default:
            throw SecretServiceError(name: "org.freedesktop.DBus.Error.PropertyReadOnly",
                                     message: "labels and attributes are not changed through the Secret Service here; "
                                         + "store the item again (it is replaced) instead")
        }
    }

    private func propertyValues(_ context: Context) async throws(SecretServiceError) -> [String: BusValue] {
        switch context.target {
        case .service:
            return ["Collections": .pathArray(try await collections(context))]
        case .collection(let name):
            guard try await collectionExists(name, context) else { throw .noSuchObject("no collection \(context.call.path)") }
            let found = try await search(context, collection: name)
            let seconds = { (date: Date) in BusValue.uint64(UInt64(max(0, date.timeIntervalSince1970))) }
            return ["Items": .pathArray(found.items.map { SecretServicePath.item(name, $0.name) }),
                    "Label": .string(name == SecretServicePath.defaultCollection ? "Login" : name),
                    "Locked": .boolean(found.locked),
                    "Created": found.items.map(\.created).min().map(seconds) ?? .uint64(0),
                    "Modified": found.items.map(\.modified).max().map(seconds) ?? .uint64(0)]
        case .item(let collection, let id):
            let item = try await item(context, collection, id)
            return ["Locked": .boolean(!item.unlocked),
                    "Attributes": .stringDictionary(item.details.attributes.map { ($0.name, $0.value) }),
                    "Label": .string(item.details.label),
                    "Created": .uint64(UInt64(max(0, item.created.timeIntervalSince1970))),
                    "Modified": .uint64(UInt64(max(0, item.modified.timeIntervalSince1970)))]
        case .session, .prompt, .none:
            return [:]
        }
    }
}

/// An object an Unlock waits on: a collection (the vault), or an item for the program.
struct PendingUnlock: Sendable {
    let path: String
    /// The item's vault name; nil for a collection.
    let item: String?
}

/// The provider's own objects: transport sessions and prompts, each its client's, and
/// the collections made in this run. Bounded, so a client cannot grow it without end.
actor ProviderState {
    struct Prompt: Sendable {
        let id: String
        let owner: String
        let pending: [PendingUnlock]
        let vaultLocked: Bool
        var started = false
        var task: Task<Void, Never>?
    }

    private var sessions: [String: (owner: String, transport: SecretTransport)] = [:]
    private var listings: [String: (report: SecretServiceSearchReport, at: ContinuousClock.Instant)] = [:]
    private var prompts: [String: Prompt] = [:]
    private(set) var created: Set<String> = []
    private var counter = 0
    static let maximumSessions = 1024
    static let maximumPerClient = 64
    static let maximumPrompts = 256
    static let maximumCollections = 64

    private func nextID(_ prefix: String) -> String {
        counter += 1
        return prefix + String(counter)
    }

    func openSession(owner: String, transport: SecretTransport) throws(SecretServiceError) -> String {
        guard sessions.count < Self.maximumSessions,
              sessions.values.filter({ $0.owner == owner }).count < Self.maximumPerClient else {
            throw .failed("too many open sessions; close some (Session.Close) first")
        }
        let id = nextID("s")
        sessions[id] = (owner, transport)
        return id
    }

    func session(_ id: String, owner: String) -> SecretTransport? {
        guard let session = sessions[id], session.owner == owner else { return nil }
        return session.transport
    }

    func closeSession(_ id: String, owner: String) {
        if sessions[id]?.owner == owner { sessions[id] = nil }
    }

    func addPrompt(owner: String, pending: [PendingUnlock], vaultLocked: Bool) throws(SecretServiceError) -> String {
        guard prompts.count < Self.maximumPrompts,
              prompts.values.filter({ $0.owner == owner }).count < Self.maximumPerClient else {
            throw .failed("too many prompts waiting; complete or dismiss some first")
        }
        let id = nextID("p")
        prompts[id] = Prompt(id: id, owner: owner, pending: pending, vaultLocked: vaultLocked)
        return id
    }

    /// The prompt, marked started, if it is the caller's and was not started before.
    func startPrompt(_ id: String, owner: String) -> Prompt? {
        guard var prompt = prompts[id], prompt.owner == owner, !prompt.started else { return nil }
        prompt.started = true
        prompts[id] = prompt
        return prompt
    }

    func attach(_ task: Task<Void, Never>, to id: String) {
        if prompts[id] != nil { prompts[id]?.task = task } else { task.cancel() }
    }

    /// Ends a prompt; whether it was still there (not dismissed meanwhile).
    func finishPrompt(_ id: String) -> Bool {
        prompts.removeValue(forKey: id) != nil
    }

    func dismiss(_ id: String, owner: String) throws(SecretServiceError) {
        guard let prompt = prompts[id], prompt.owner == owner else {
            throw .noSuchObject("no prompt \(SecretServicePath.prompt(id)) of this connection")
        }
        prompt.task?.cancel()
        prompts[id] = nil
    }

    func create(_ collection: String) throws(SecretServiceError) -> Bool {
        guard !created.contains(collection) else { return false }
        guard created.count < Self.maximumCollections else { throw .failed("too many collections") }
        created.insert(collection)
        return true
    }

    /// The listing kept for `program`, if kept no longer than `life` ago.
    func listing(for program: String, within life: Duration) -> SecretServiceSearchReport? {
        guard let kept = listings[program], ContinuousClock.now - kept.at <= life else { return nil }
        return kept.report
    }

    func keep(_ report: SecretServiceSearchReport, for program: String) {
        if listings.count >= Self.maximumSessions { listings.removeAll() }
        listings[program] = (report, ContinuousClock.now)
    }

    func dropListings() {
        listings.removeAll()
    }

    /// Forgets a client that left: its sessions close, its prompts end.
    func forget(_ owner: String) {
        sessions = sessions.filter { $0.value.owner != owner }
        for (id, prompt) in prompts where prompt.owner == owner {
            prompt.task?.cancel()
            prompts[id] = nil
        }
    }
}
