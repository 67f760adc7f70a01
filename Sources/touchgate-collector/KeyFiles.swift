import FoundationEssentials
import TouchgateShipping
import TouchgateVault
import TouchgateAPI
import Glibc

/// The collector's key and state files: read with care, written privately and atomically.
enum KeyFiles {
    /// The text of a small file; a clear error when it cannot be read.
    static func text(_ path: String, what: String) throws(ServiceError) -> String {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 65536 else {
            throw ServiceError(.notFound, "cannot read the \(what) file \(StoredText.escaped(path)): check the path "
                               + "and that you may read it")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A private key of `type` from the file `keygen` wrote.
    static func signer(_ path: String, type: UInt8, what: String) throws(ServiceError) -> NoteSigner {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 {
            throw ServiceError(.forbidden, "the \(what) key \(StoredText.escaped(path)) may be read by others: "
                               + "chmod 600 \(StoredText.escaped(path))")
        }
        guard let signer = NoteSigner.parse(try text(path, what: "\(what) key")), signer.type == type else {
            throw ServiceError(.usage, "\(StoredText.escaped(path)) is not a private \(what) key (make one with "
                               + "`touchgate-collector keygen\(type == SignedNote.cosignature ? " --witness" : "")`)")
        }
        return signer
    }

    /// A verifier key (a `keygen` FILE.pub) of `type`.
    static func verifier(_ path: String, type: UInt8, what: String) throws(ServiceError) -> NoteVerifier {
        guard let verifier = NoteVerifier(text: try text(path, what: "\(what) key")), verifier.type == type else {
            throw ServiceError(.usage, "\(StoredText.escaped(path)) is not the public half of \(what == "enrollment" ? "an" : "a") "
                               + "\(what) key (the FILE.pub `touchgate-collector keygen` wrote)")
        }
        return verifier
    }

    /// A checkpoint: a note (signatures ignored) or a bare three-line body.
    static func checkpoint(_ path: String) throws(ServiceError) -> Checkpoint {
        let text = try text(path, what: "checkpoint")
        let body = SignedNote.parse(text)?.body ?? text
        guard let checkpoint = Checkpoint(body: body) else {
            throw ServiceError(.usage, "\(StoredText.escaped(path)) is not a fleet log checkpoint (three lines: "
                               + "origin, size, root)")
        }
        return checkpoint
    }

    /// Writes a new private file (mode 0600); never replaces one.
    static func writePrivate(_ secret: SecretBytes, to path: String) throws(ServiceError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ServiceError(errno == EEXIST ? .alreadyExists : .forbidden,
                               "cannot create \(StoredText.escaped(path)): \(reason)"
                               + (errno == EEXIST ? " (a key is never overwritten: choose another name)" : ""))
        }
        defer { close(descriptor) }
        let written = secret.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == secret.count, fsync(descriptor) == 0 else {
            unlink(path)
            throw ServiceError(.error, "cannot write \(StoredText.escaped(path)): \(String(cString: strerror(errno)))")
        }
    }

    /// Replaces `path` with `text` atomically (a temporary file renamed over it).
    static func replace(_ path: String, with text: String) throws(ServiceError) {
        let temporary = path + ".new"
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            unlink(temporary)
            throw ServiceError(.error, "cannot write the state file \(StoredText.escaped(path)): \(ErrorText.describe(error))")
        }
    }
}
