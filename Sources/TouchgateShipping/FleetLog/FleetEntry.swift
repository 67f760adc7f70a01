import FoundationEssentials
import TouchgatePolicy

/// One leaf of the fleet log: what the collector's Merkle tree commits to, as text.
///
/// - A **shipment**: a batch of one machine's trail, named by its first and last sequence
///   and the public link (``AuditSeal``'s chain) of its last record, which commits to every
///   record of the trail up to it. Appended in the transaction that stores the batch.
/// - A **batch head** (schema 3 on): the same, plus the link before the batch's first
///   record, as a note signed by the machine's seal key: the collector's own code appends
///   it (a definer function that checks it names the rows the machine stored), and only the
///   machine could have signed it.
/// - A **shipment** (schema 2, kept readable): the same fields unsigned, vouched for by a
///   checkpoint the machine signed.
/// - A **key registration**: a note signed by the administrator's enrollment key saying
///   which public key signs a machine's trails, from when.
///
/// The leaf hash is RFC 9162's over the entry's UTF-8 text.
public enum FleetEntry: Sendable, Equatable {
    case batch(Batch)
    case shipment(Shipment)
    case registration(Registration)

    /// A batch head: the shipment it names, the public link before its first record, and
    /// the whole signed note.
    public struct Batch: Sendable, Equatable {
        public var shipment: Shipment
        public var previous: [UInt8]
        public var note: String

        public init(shipment: Shipment, previous: [UInt8], note: String) {
            self.shipment = shipment
            self.previous = previous
            self.note = note
        }
    }

    public struct Shipment: Sendable, Equatable {
        public var machine: String
        public var trail: [UInt8]
        public var first: Int64
        public var last: Int64
        public var chain: [UInt8]
        public var publicKey: [UInt8]

        public init(machine: String, trail: [UInt8], first: Int64, last: Int64, chain: [UInt8], publicKey: [UInt8]) {
            self.machine = machine
            self.trail = trail
            self.first = first
            self.last = last
            self.chain = chain
            self.publicKey = publicKey
        }
    }

    public struct Registration: Sendable, Equatable {
        public var machine: String
        public var publicKey: [UInt8]
        public var time: Int64
        /// The whole signed note (body and the enrollment key's signature line).
        public var note: String
    }

    static let batchHeader = "touchgate.fleet/batch/v1"
    static let shipmentHeader = "touchgate.fleet/shipment/v1"
    static let registrationHeader = "touchgate.fleet/registration/v1"

    /// The entry's text: the leaf's data.
    public var text: String {
        switch self {
        case .shipment(let shipment):
            "\(Self.shipmentHeader)\nmachine \(SignedNote.keyName(shipment.machine))\ntrail \(Hex.encode(shipment.trail))\n"
                + "records \(shipment.first) \(shipment.last)\nchain \(Hex.encode(shipment.chain))\n"
                + "key \(Hex.encode(shipment.publicKey))\n"
        case .registration(let registration):
            registration.note
        case .batch(let batch):
            batch.note
        }
    }

    /// The batch of one trail a batch head or a shipment names.
    public var shipped: Shipment? {
        switch self {
        case .batch(let batch): batch.shipment
        case .shipment(let shipment): shipment
        case .registration: nil
        }
    }

    /// The body of a batch head, for the machine to sign. The collector's definer function
    /// `touchgate_ship_batch` builds the same text from the rows stored (FleetSchema, version
    /// 3): the two must stay letter for letter alike.
    public static func batchBody(_ shipment: Shipment, previous: [UInt8]) -> String {
        "\(batchHeader)\nmachine \(SignedNote.keyName(shipment.machine))\ntrail \(Hex.encode(shipment.trail))\n"
            + "records \(shipment.first) \(shipment.last)\nprevious \(Hex.encode(previous))\n"
            + "chain \(Hex.encode(shipment.chain))\nkey \(Hex.encode(shipment.publicKey))\n"
    }

    /// The batch head of `shipment`, signed by `sign` (the machine's seal key, whose public
    /// half the shipment names) under the machine's key name.
    public static func signedBatch(_ shipment: Shipment, previous: [UInt8], sign: ([UInt8]) -> [UInt8]) -> Batch {
        let body = batchBody(shipment, previous: previous)
        let name = SignedNote.keyName(shipment.machine)
        let id = SignedNote.keyID(name: name, type: SignedNote.ed25519, publicKey: shipment.publicKey)
        return Batch(shipment: shipment, previous: previous,
                     note: body + "\n" + SignedNote.line(name: name, keyID: id, payload: sign(Array(body.utf8))))
    }

    /// Whether this is a batch head signed by the key it names, under its machine's name.
    public var isSignedBatch: Bool {
        guard case .batch(let batch) = self else { return false }
        let verifier = NoteVerifier(name: SignedNote.keyName(batch.shipment.machine), type: SignedNote.ed25519,
                                    publicKey: batch.shipment.publicKey)
        return verifier.verifiedBody(batch.note) == Self.batchBody(batch.shipment, previous: batch.previous)
    }

    /// RFC 9162's leaf hash of ``text``.
    public var leafHash: [UInt8] { MerkleTree.leafHash(Array(text.utf8)) }

    /// The body of a registration note, for the enrollment key to sign.
    public static func registrationBody(machine: String, publicKey: [UInt8], time: Int64) -> String {
        "\(registrationHeader)\nmachine \(SignedNote.keyName(machine))\nkey \(Hex.encode(publicKey))\ntime \(time)\n"
    }

    /// A registration signed now by `enrollment`.
    public static func register(machine: String, publicKey: [UInt8], time: Int64, enrollment: NoteSigner) -> FleetEntry {
        let note = enrollment.signNote(registrationBody(machine: machine, publicKey: publicKey, time: time))
        return .registration(Registration(machine: machine, publicKey: publicKey, time: time, note: note))
    }

    /// The entry `text` spells (exactly: parsing then printing gives `text` back); nil for
    /// anything else. A registration's signature is not checked here (``isRegistration(by:)``).
    public init?(text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func field(_ index: Int, _ key: String) -> String? {
            guard index < lines.count, lines[index].hasPrefix(key + " ") else { return nil }
            return String(lines[index].dropFirst(key.count + 1))
        }
        if lines.first == Self.batchHeader {
            guard let (body, _) = SignedNote.parse(text), body.split(separator: "\n").count == 7,
                  let machine = field(1, "machine").flatMap(Self.unescaped), let trail = field(2, "trail").flatMap(Hex.decode),
                  let range = field(3, "records")?.split(separator: " "), range.count == 2,
                  let first = Int64(range[0]), let last = Int64(range[1]),
                  let previous = field(4, "previous").flatMap(Hex.decode),
                  let chain = field(5, "chain").flatMap(Hex.decode), let key = field(6, "key").flatMap(Hex.decode),
                  body == Self.batchBody(.init(machine: machine, trail: trail, first: first, last: last, chain: chain,
                                               publicKey: key), previous: previous)
            else { return nil }
            self = .batch(Batch(shipment: Shipment(machine: machine, trail: trail, first: first, last: last, chain: chain,
                                                   publicKey: key), previous: previous, note: text))
        } else if lines.first == Self.shipmentHeader {
            guard let machine = field(1, "machine").flatMap(Self.unescaped), let trail = field(2, "trail").flatMap(Hex.decode),
                  let range = field(3, "records")?.split(separator: " "), range.count == 2,
                  let first = Int64(range[0]), let last = Int64(range[1]),
                  let chain = field(4, "chain").flatMap(Hex.decode), let key = field(5, "key").flatMap(Hex.decode)
            else { return nil }
            self = .shipment(Shipment(machine: machine, trail: trail, first: first, last: last, chain: chain, publicKey: key))
        } else if lines.first == Self.registrationHeader {
            guard let (body, _) = SignedNote.parse(text), body.split(separator: "\n").count == 4,
                  let machine = field(1, "machine").flatMap(Self.unescaped), let key = field(2, "key").flatMap(Hex.decode),
                  let time = field(3, "time").flatMap({ Int64($0) }) else { return nil }
            self = .registration(Registration(machine: machine, publicKey: key, time: time, note: text))
        } else {
            return nil
        }
        guard self.text == text else { return nil }
    }

    /// Whether this is a registration the enrollment key `verifier` signed.
    public func isRegistration(by verifier: NoteVerifier) -> Bool {
        guard case .registration(let registration) = self, let body = verifier.verifiedBody(registration.note) else {
            return false
        }
        return body == Self.registrationBody(machine: registration.machine, publicKey: registration.publicKey,
                                             time: registration.time)
    }

    /// A %-escaped key name read back; nil when an escape is malformed.
    static func unescaped(_ name: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(name.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
