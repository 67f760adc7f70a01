#!/usr/bin/python3
"""tlogwitness.py - independent transparency log witness (C2SP tlog-witness).

Written only from the specification texts; it shares no code with the
project's Swift sources nor with tlogcheck.py:

  * c2sp.org/tlog-witness       (C2SP/C2SP tlog-witness.md, "add-checkpoint",
                                 "Monitor Retrieval Mechanism")
  * c2sp.org/tlog-cosignature   (C2SP/C2SP tlog-cosignature.md, Ed25519
                                 cosignature/v1, vkey type 0x04)
  * c2sp.org/tlog-checkpoint    (C2SP/C2SP tlog-checkpoint.md)
  * c2sp.org/signed-note        (C2SP/C2SP signed-note.md)
  * RFC 9162 section 2.1.4.2 (verifying a consistency proof); the proof is
    the RFC 6962 section 2.1.2 / RFC 9162 section 2.1.4.1 PROOF(m, D[n]).

Usage:
  tlogwitness.py keygen --name NAME --out FILE
  tlogwitness.py serve --key FILE --log ORIGIN=LOGVKEY [--log ...]
                       --state DIR --listen HOST:PORT [--port-file FILE]
  tlogwitness.py state --state DIR --log ORIGIN

keygen writes the private key to FILE (mode 0600, refuses to overwrite) and
prints the witness vkey (name+hex(keyid)+base64(0x04||pubkey)) to stdout and
to FILE.pub.

serve answers, one request at a time as far as the witness state goes:
  POST /add-checkpoint          tlog-witness "add-checkpoint"
  GET  /<sha256hex(origin)>/checkpoint
                                tlog-witness "Monitor Retrieval Mechanism"
The submission and monitoring prefixes are both the server root. --log may
be repeated, also for one origin (several trusted log keys); ORIGIN is split
from the vkey at the first '='. Log vkeys may be type 0x01 (signed-note
Ed25519) or 0x04 (Ed25519 cosignature/v1). With --listen 127.0.0.1:0 the
kernel picks the port; --port-file receives it (decimal, newline) once the
socket listens. One line per request is logged to stderr.

state prints the stored (latest cosigned) checkpoint for ORIGIN as a signed
note (log signature lines the witness verified, then the witness's
cosignature), or nothing if the witness never cosigned for ORIGIN.

Exit status: 0 ok, 1 runtime failure, 2 usage error.
Dependencies: Python 3.11 standard library and python3-cryptography (Ed25519).
"""

import argparse
import base64
import binascii
import hashlib
import http.server
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey, Ed25519PublicKey)


class UsageError(Exception):
    """Bad command-line input or configuration (exit status 2)."""


class Reject(Exception):
    """An add-checkpoint failure: HTTP status, body, content type."""

    def __init__(self, status, message, body=None, ctype="text/plain; charset=utf-8"):
        super().__init__(message)
        self.status = status
        self.body = body if body is not None else (message + "\n").encode()
        self.ctype = ctype


# ---------------------------------------------------------------------------
# Encodings (all specs: "standard Base 64 encoding specified in RFC 4648,
# Section 4")
# ---------------------------------------------------------------------------

def b64d(s):
    """Strict standard base64; non-canonical encodings are refused too."""
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError("bad base64: %s" % e)
    if base64.b64encode(raw).decode() != s:
        raise ValueError("non-canonical base64")
    return raw


def b64e(b):
    return base64.b64encode(b).decode()


DECIMAL = re.compile(r"0|[1-9][0-9]*")   # "ASCII decimal with no leading zeroes"
U64_LIMIT = 2 ** 64


# ---------------------------------------------------------------------------
# RFC 9162 section 2.1: hashes and consistency proof verification
# ---------------------------------------------------------------------------

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()   # RFC 6962 2.1: MTH({}) = SHA-256()


def node_hash(left, right):
    """HASH(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_consistency(first, second, first_hash, second_hash, consistency_path):
    """RFC 9162 section 2.1.4.2, for 0 < first < second."""
    if not 0 < first < second:
        return False
    path = list(consistency_path)
    # 1. If consistency_path is an empty array, stop and fail.
    if not path:
        return False
    # 2. If first is an exact power of 2, prepend first_hash.
    if first & (first - 1) == 0:
        path.insert(0, first_hash)
    # 3. Set fn to first - 1 and sn to second - 1.
    fn, sn = first - 1, second - 1
    # 4. If LSB(fn) is set, right-shift both fn and sn equally until LSB(fn)
    #    is not set.
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # 5. Set both fr and sr to the first value in the consistency_path.
    fr = sr = path[0]
    # 6. For each subsequent value c in the consistency_path array:
    for c in path[1:]:
        # a. If sn is 0, then stop the iteration and fail the verification.
        if sn == 0:
            return False
        # b. If LSB(fn) is set, or if fn is equal to sn, then:
        if fn & 1 or fn == sn:
            # 1. Set fr to HASH(0x01 || c || fr); set sr to HASH(0x01 || c || sr).
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            # 2. If LSB(fn) is not set, then right-shift both fn and sn
            #    equally until either LSB(fn) is set or fn is 0.
            if not fn & 1:
                while not (fn & 1) and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            # Otherwise: set sr to HASH(0x01 || sr || c).
            sr = node_hash(sr, c)
        # c. Finally, right-shift both fn and sn one time.
        fn >>= 1
        sn >>= 1
    # 7. Compare fr to first_hash and sr to second_hash, and sn to 0.
    return fr == first_hash and sr == second_hash and sn == 0


# ---------------------------------------------------------------------------
# c2sp.org/signed-note
# ---------------------------------------------------------------------------

SIG_ED25519 = 0x01      # signed-note "Ed25519 signatures"
SIG_COSIG_V1 = 0x04     # tlog-cosignature, timestamped Ed25519 cosignature/v1
MAX_SIGNATURES = 64     # "MUST accept at least up to 16 signatures"
EM_DASH = "\u2014"


def valid_key_name(name):
    """signed-note: key names MUST be non-empty and MUST NOT contain any
    Unicode spaces or plus (U+002B) characters."""
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


def key_id(name, sig_type, pubkey):
    """key ID = SHA-256(key name || 0x0A || signature type || public key)[:4]
    (signed-note; tlog-cosignature makes this a MUST for type 0x04)."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([sig_type]) + pubkey).digest()[:4]


def make_vkey(name, sig_type, pubkey):
    """<key name>+hex(32-bit key ID)+base64(signature type || public key)."""
    return "%s+%s+%s" % (name, key_id(name, sig_type, pubkey).hex(),
                         b64e(bytes([sig_type]) + pubkey))


def cosignature_v1_message(timestamp, note_text):
    """tlog-cosignature "Ed25519 signed message": "cosignature/v1" line, "time
    <t>" line, then the whole note body including its final newline."""
    return ("cosignature/v1\ntime %d\n" % timestamp).encode() + note_text.encode()


class LogKey:
    """A log's verifier key, type 0x01 or 0x04, Ed25519."""

    def __init__(self, vkey):
        parts = vkey.split("+", 2)        # names have no '+', base64 may
        if len(parts) != 3:
            raise ValueError("vkey must be name+keyid+key")
        name, hexid, keyb64 = parts
        if not valid_key_name(name):
            raise ValueError("vkey has an invalid key name")
        if not re.fullmatch(r"[0-9a-f]{8}", hexid):
            raise ValueError("vkey key ID must be 8 lowercase hex digits")
        raw = b64d(keyb64)
        if len(raw) != 33 or raw[0] not in (SIG_ED25519, SIG_COSIG_V1):
            raise ValueError("log vkey must be type 0x01 or 0x04 with a 32-byte Ed25519 key")
        self.name, self.type, self.pub = name, raw[0], raw[1:]
        self.id = bytes.fromhex(hexid)
        if self.id != key_id(name, self.type, self.pub):
            raise ValueError("vkey key ID does not match its name and key")
        self.key = Ed25519PublicKey.from_public_bytes(self.pub)
        self.vkey = vkey

    def verify(self, text, sig):
        try:
            if self.type == SIG_ED25519:
                # signed-note: RFC 8032 Ed25519 over the note text
                if len(sig) != 64:
                    return False
                self.key.verify(sig, text.encode())
                return True
            # tlog-cosignature: u64 big-endian timestamp || 64-byte signature
            if len(sig) != 72:
                return False
            ts = int.from_bytes(sig[:8], "big")
            if ts > 2 ** 63 - 1:
                return False
            self.key.verify(sig[8:], cosignature_v1_message(ts, text))
            return True
        except InvalidSignature:
            return False


def split_note(s):
    """signed-note "Format". Returns (text, [(name, keyid bytes, sig bytes,
    line)]); raises ValueError on a malformed note."""
    if any(ord(c) < 0x20 and c != "\n" for c in s):
        raise ValueError("note contains control characters")
    if not s.endswith("\n"):
        raise ValueError("note does not end in a newline")
    cut = s.rfind("\n\n")   # "separated from the signatures by the last empty line"
    if cut < 0:
        raise ValueError("note has no empty line before its signatures")
    text, block = s[:cut + 1], s[cut + 2:]
    sigs = []
    for line in block.split("\n")[:-1]:
        if not line.startswith(EM_DASH + " "):
            raise ValueError("malformed signature line")
        parts = line[2:].split(" ")
        if len(parts) != 2 or not valid_key_name(parts[0]):
            raise ValueError("malformed signature line")
        raw = b64d(parts[1])
        if len(raw) < 5:                     # 4+n bytes
            raise ValueError("signature too short")
        sigs.append((parts[0], raw[:4], raw[4:], line + "\n"))
    if not sigs:
        raise ValueError("note has no signatures")
    if len(sigs) > MAX_SIGNATURES:
        raise ValueError("note has too many signatures")
    return text, sigs


# ---------------------------------------------------------------------------
# c2sp.org/tlog-checkpoint "Note text"
# ---------------------------------------------------------------------------

def parse_checkpoint_text(text):
    """Returns (origin, size, root hash, extension lines)."""
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not l for l in lines):
        raise ValueError("checkpoint needs at least three non-empty lines")
    origin, size_s, root_s = lines[:3]
    if not DECIMAL.fullmatch(size_s) or int(size_s) >= U64_LIMIT:
        raise ValueError("checkpoint tree size is not a canonical decimal")
    root = b64d(root_s)
    if len(root) != HASH_SIZE:
        raise ValueError("checkpoint root hash is not 32 bytes")
    return origin, int(size_s), root, lines[3:]


# ---------------------------------------------------------------------------
# Witness key (own format: one line "tlogwitness-key/v1 <name> <b64 seed>")
# ---------------------------------------------------------------------------

KEY_MAGIC = "tlogwitness-key/v1"


class WitnessKey:
    def __init__(self, name, seed):
        if not valid_key_name(name):
            raise UsageError("invalid witness key name %r" % name)
        self.name = name
        self.priv = Ed25519PrivateKey.from_private_bytes(seed)
        self.pub = self.priv.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.id = key_id(name, SIG_COSIG_V1, self.pub)
        self.vkey = make_vkey(name, SIG_COSIG_V1, self.pub)

    @classmethod
    def load(cls, path):
        try:
            with open(path, "r", encoding="utf-8") as f:
                parts = f.read().split()
        except OSError as e:
            raise UsageError("cannot read key file: %s" % e)
        if len(parts) != 3 or parts[0] != KEY_MAGIC:
            raise UsageError("%s is not a tlogwitness key file" % path)
        try:
            seed = b64d(parts[2])
        except ValueError as e:
            raise UsageError("key file seed: %s" % e)
        if len(seed) != 32:
            raise UsageError("key file seed is not 32 bytes")
        return cls(parts[1], seed)

    def cosign(self, note_text, timestamp):
        """tlog-cosignature: signature line '— <name> base64(keyID ||
        u64 BE timestamp || Ed25519 signature)'."""
        sig = self.priv.sign(cosignature_v1_message(timestamp, note_text))
        payload = self.id + timestamp.to_bytes(8, "big") + sig
        return "%s %s %s\n" % (EM_DASH, self.name, b64e(payload))


# ---------------------------------------------------------------------------
# State: one file per origin, named sha256hex(origin), holding the latest
# cosigned checkpoint as a signed note (verified log signatures followed by
# the witness cosignature). Replaced atomically (temp file, fsync, rename).
# ---------------------------------------------------------------------------

def origin_hash(origin):
    return hashlib.sha256(origin.encode()).hexdigest()


def state_path(state_dir, origin):
    return os.path.join(state_dir, origin_hash(origin))


def read_state(state_dir, origin):
    """Returns (note string, size, root) or None if never cosigned."""
    try:
        with open(state_path(state_dir, origin), "r", encoding="utf-8") as f:
            note = f.read()
    except FileNotFoundError:
        return None
    text, _ = split_note(note)
    o, size, root, _ = parse_checkpoint_text(text)
    if o != origin:
        raise ValueError("state file for %r holds origin %r" % (origin, o))
    return note, size, root


def write_state(state_dir, origin, note):
    fd, tmp = tempfile.mkstemp(dir=state_dir, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(note)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, state_path(state_dir, origin))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dfd = os.open(state_dir, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# ---------------------------------------------------------------------------
# tlog-witness "add-checkpoint"
# ---------------------------------------------------------------------------

MAX_PROOF_LINES = 63          # "The client MUST NOT send more than 63"
MAX_BODY = 1 << 20


def parse_request(body):
    """Request body: old size line, proof lines, empty line, checkpoint.
    Returns (old, proof, note text, sigs, checkpoint fields). 400 on error."""
    try:
        s = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject(400, "request body is not UTF-8")
    cut = s.find("\n\n")       # old/proof lines are non-empty: first empty line
    if cut < 0:
        raise Reject(400, "request has no empty line before the checkpoint")
    head, note = s[:cut + 1].split("\n")[:-1], s[cut + 2:]
    m = re.fullmatch(r"old (0|[1-9][0-9]*)", head[0])
    if not m or int(m.group(1)) >= U64_LIMIT:
        raise Reject(400, "malformed old size line")
    old = int(m.group(1))
    if len(head) - 1 > MAX_PROOF_LINES:
        raise Reject(400, "more than %d consistency proof lines" % MAX_PROOF_LINES)
    proof = []
    for line in head[1:]:
        try:
            h = b64d(line)
        except ValueError:
            raise Reject(400, "malformed consistency proof line")
        if len(h) != HASH_SIZE:
            raise Reject(400, "consistency proof hash is not 32 bytes")
        proof.append(h)
    try:
        text, sigs = split_note(note)
        cp = parse_checkpoint_text(text)
    except ValueError as e:
        raise Reject(400, "malformed checkpoint: %s" % e)
    return old, proof, text, sigs, cp


class Witness:
    def __init__(self, key, logs, state_dir):
        self.key = key
        self.logs = logs              # origin -> [LogKey]
        self.state_dir = state_dir
        self.lock = threading.Lock()  # check-and-persist is one critical section

    def add_checkpoint(self, body):
        """Returns (response body, log detail); raises Reject."""
        old, proof, text, sigs, (origin, size, root, _) = parse_request(body)
        with self.lock:
            return self._add(old, proof, text, sigs, origin, size, root)

    def _add(self, old, proof, text, sigs, origin, size, root):
        where = "origin=%r old=%d size=%d" % (origin, old, size)
        # "If the checkpoint origin is unknown ... 404 Not Found"
        keys = self.logs.get(origin)
        if not keys:
            raise Reject(404, "unknown log origin (%s)" % where)
        # "MUST verify the checkpoint signature against the public key(s) it
        # trusts for the checkpoint origin, and it MUST ignore signatures from
        # unknown keys ... 403 Forbidden if either no signature from a trusted
        # key for the origin is present, or a signature line's key name and ID
        # match a trusted key but the signature itself fails to verify"
        verified = []
        for name, kid, sig, line in sigs:
            for k in keys:
                if (name, kid) == (k.name, k.id):
                    if not k.verify(text, sig):
                        raise Reject(403, "log signature by %s does not verify (%s)" % (name, where))
                    verified.append(line)
        if not verified:
            raise Reject(403, "no signature from a trusted log key (%s)" % where)
        # "The old size MUST be equal to or lower than the checkpoint size.
        # Otherwise, the witness MUST respond with a 400 Bad Request"
        if old > size:
            raise Reject(400, "old size exceeds checkpoint size (%s)" % where)
        # "MUST check that the old size matches the size of the latest
        # checkpoint it cosigned for the checkpoint's origin (or zero if it
        # never cosigned ...). If it doesn't match ... 409 Conflict. The
        # response body MUST consist of the tree size of the latest cosigned
        # checkpoint in decimal, followed by a newline ... Content-Type of
        # text/x.tlog.size"
        try:
            state = read_state(self.state_dir, origin)
        except (OSError, ValueError) as e:
            raise Reject(500, "cannot read witness state: %s" % e)
        cur_size, cur_root = (state[1], state[2]) if state else (0, EMPTY_ROOT)
        if old != cur_size:
            raise Reject(409, "old size %d != latest cosigned size %d (%s)" % (old, cur_size, where),
                         body=b"%d\n" % cur_size, ctype="text/x.tlog.size")
        # "A checkpoint of size zero MUST have the root hash of the empty
        # tree ... Otherwise ... 422 Unprocessable Entity"
        if size == 0 and root != EMPTY_ROOT:
            raise Reject(422, "size 0 checkpoint without the empty tree root (%s)" % where)
        if old == 0:
            # "If the old size is zero, the consistency proof MUST be empty"
            if proof:
                raise Reject(422, "non-empty consistency proof from size 0 (%s)" % where)
        elif old == size:
            # "If the old size matches the checkpoint size, the witness MUST
            # check that the root hashes are also identical" -> else 422.
            # PROOF(m, D[m]) is empty (RFC 9162 2.1.4.1), so lines here fail
            # as a proof that doesn't verify.
            if root != cur_root:
                raise Reject(422, "same size, different root hash (%s)" % where)
            if proof:
                raise Reject(422, "non-empty consistency proof between equal sizes (%s)" % where)
        else:
            # "if a Merkle Consistency Proof doesn't verify ... 422"
            if not verify_consistency(old, size, cur_root, root, proof):
                raise Reject(422, "consistency proof does not verify (%s)" % where)
        # All checks passed: cosign, persist, respond ("MUST persist the new
        # checkpoint before responding"). Timestamp MUST NOT be zero.
        ts = max(1, int(time.time()))
        cosig = self.key.cosign(text, ts)
        try:
            write_state(self.state_dir, origin, text + "\n" + "".join(verified) + cosig)
        except OSError as e:
            raise Reject(500, "cannot persist witness state: %s" % e)
        return cosig.encode(), "cosigned %s time=%d" % (where, ts)

    def monitor_checkpoint(self, ohash):
        """tlog-witness "Monitor Retrieval Mechanism"."""
        with self.lock:
            for origin in self.logs:
                if origin_hash(origin) == ohash:
                    try:
                        state = read_state(self.state_dir, origin)
                    except (OSError, ValueError) as e:
                        raise Reject(500, "cannot read witness state: %s" % e)
                    if state is None:
                        raise Reject(404, "never cosigned a checkpoint for this log")
                    return state[0].encode()
        raise Reject(404, "unknown log")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive ("SHOULD support")
    server_version = "tlogwitness.py"
    timeout = 60

    def log_message(self, fmt, *args):   # replaced by log_line
        pass

    def log_line(self, status, detail):
        sys.stderr.write("%s %s %s %s %d %s\n" % (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), self.client_address[0],
            self.command, self.path, status, detail))
        sys.stderr.flush()

    def send(self, status, body, ctype="text/plain; charset=utf-8", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def reject(self, r):
        self.send(r.status, r.body, r.ctype)
        self.log_line(r.status, str(r))

    def do_POST(self):
        if self.path != "/add-checkpoint":
            self.close_connection = True
            return self.reject(Reject(404, "no such endpoint"))
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            return self.reject(Reject(411, "Content-Length required"))
        try:
            n = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.close_connection = True
            return self.reject(Reject(411, "Content-Length required"))
        if n < 0 or n > MAX_BODY:
            self.close_connection = True
            return self.reject(Reject(413, "request body too large"))
        body = self.rfile.read(n)
        if len(body) != n:
            self.close_connection = True
            return
        try:
            out, detail = self.server.witness.add_checkpoint(body)
        except Reject as r:
            return self.reject(r)
        self.send(200, out)
        self.log_line(200, detail)

    def do_GET(self):
        m = re.fullmatch(r"/([0-9a-f]{64})/checkpoint", self.path)
        if self.path == "/add-checkpoint":
            return self.reject_method()
        if not m:
            return self.reject(Reject(404, "no such endpoint"))
        try:
            out = self.server.witness.monitor_checkpoint(m.group(1))
        except Reject as r:
            return self.reject(r)
        self.send(200, out)
        self.log_line(200, "served checkpoint")

    do_HEAD = do_GET

    def reject_method(self):
        # "The request MUST be an HTTP POST."
        self.close_connection = True      # any request body is left unread
        self.send(405, b"add-checkpoint requires POST\n", extra=[("Allow", "POST")])
        self.log_line(405, "add-checkpoint requires POST")

    def do_PUT(self):
        if self.path == "/add-checkpoint":
            return self.reject_method()
        self.reject(Reject(404, "no such endpoint"))

    do_DELETE = do_PATCH = do_PUT


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def cmd_keygen(args):
    if not valid_key_name(args.name):
        raise UsageError("key name must be non-empty with no spaces or '+'")
    seed = os.urandom(32)
    key = WitnessKey(args.name, seed)
    try:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise UsageError("cannot create %s: %s" % (args.out, e))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("%s %s %s\n" % (KEY_MAGIC, args.name, b64e(seed)))
    with open(args.out + ".pub", "w", encoding="utf-8") as f:
        f.write(key.vkey + "\n")
    print(key.vkey)
    return 0


def parse_logs(specs):
    logs = {}
    for spec in specs:
        origin, sep, vkey = spec.partition("=")
        if not sep or not origin or "\n" in origin:
            raise UsageError("--log wants ORIGIN=LOGVKEY, got %r" % spec)
        try:
            logs.setdefault(origin, []).append(LogKey(vkey))
        except ValueError as e:
            raise UsageError("--log %s: %s" % (origin, e))
    return logs


def parse_listen(s):
    host, sep, port = s.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError("--listen wants HOST:PORT")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host, int(port)


def cmd_serve(args):
    key = WitnessKey.load(args.key)
    logs = parse_logs(args.log)
    os.makedirs(args.state, mode=0o700, exist_ok=True)
    for origin in logs:           # refuse to start on an unreadable state
        try:
            read_state(args.state, origin)
        except (OSError, ValueError) as e:
            raise UsageError("state for %r: %s" % (origin, e))
    host, port = parse_listen(args.listen)
    Server.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        srv = Server((host, port), Handler)
    except OSError as e:
        sys.stderr.write("tlogwitness: cannot listen on %s: %s\n" % (args.listen, e))
        return 1
    srv.witness = Witness(key, logs, args.state)
    bound = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % bound)
        os.replace(tmp, args.port_file)
    sys.stderr.write("tlogwitness: %s listening on %s:%d, %d log(s)\n"
                     % (key.vkey, host, bound, len(logs)))
    sys.stderr.flush()

    def stop(signum, frame):
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        srv.serve_forever()
    finally:
        srv.server_close()
    return 0


def cmd_state(args):
    try:
        state = read_state(args.state, args.log)
    except (OSError, ValueError) as e:
        sys.stderr.write("tlogwitness: %s\n" % e)
        return 1
    if state:
        sys.stdout.write(state[0])
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="tlogwitness.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("keygen", help="create a witness key")
    k.add_argument("--name", required=True)
    k.add_argument("--out", required=True, metavar="FILE")
    s = sub.add_parser("serve", help="run the witness HTTP server")
    s.add_argument("--key", required=True, metavar="FILE")
    s.add_argument("--log", required=True, action="append", metavar="ORIGIN=LOGVKEY")
    s.add_argument("--state", required=True, metavar="DIR")
    s.add_argument("--listen", required=True, metavar="HOST:PORT")
    s.add_argument("--port-file", metavar="FILE")
    t = sub.add_parser("state", help="print the stored checkpoint for an origin")
    t.add_argument("--state", required=True, metavar="DIR")
    t.add_argument("--log", required=True, metavar="ORIGIN")
    args = ap.parse_args(argv)
    try:
        return {"keygen": cmd_keygen, "serve": cmd_serve, "state": cmd_state}[args.cmd](args)
    except UsageError as e:
        sys.stderr.write("tlogwitness: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
