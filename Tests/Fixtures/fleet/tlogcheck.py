#!/usr/bin/python3
"""tlogcheck.py - independent verifier for a transparency log published in
the C2SP formats.

Written only from the specification texts; it shares no code with the
project's Swift collector:

  * c2sp.org/signed-note        (C2SP/C2SP signed-note.md)
  * c2sp.org/tlog-checkpoint    (C2SP/C2SP tlog-checkpoint.md)
  * c2sp.org/tlog-cosignature   (C2SP/C2SP tlog-cosignature.md, Ed25519 v1)
  * c2sp.org/tlog-tiles         (C2SP/C2SP tlog-tiles.md)
  * RFC 9162 section 2.1 (Merkle Tree Hash, inclusion and consistency proofs)

Usage:
  tlogcheck.py vectors [--merkle-testdata DIR]
  tlogcheck.py check --tiles DIR_OR_URL --log-key VKEY [--witness-key VKEY ...]
                     [--quorum N] [--old-checkpoint FILE ...] [--prove-every K]
                     [--json]

Exit status: 0 everything holds, 1 verification failed (one-line reason on
stderr), 2 usage error.

Dependencies: Python 3.11 standard library and python3-cryptography (Ed25519).
"""

import argparse
import base64
import binascii
import gzip
import hashlib
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class CheckError(Exception):
    """A verification failure; str() is the one-line reason."""


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def b64d(s):
    """Standard base64 (RFC 4648 section 4), strict alphabet."""
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError("bad base64: %s" % e)


def b64e(b):
    return base64.b64encode(b).decode()


# ---------------------------------------------------------------------------
# RFC 9162 section 2.1.1: Merkle Tree Hash (SHA-256)
# ---------------------------------------------------------------------------

EMPTY_ROOT = hashlib.sha256(b"").digest()  # MTH({}) = HASH()


def leaf_hash(entry):
    """MTH({d(0)}) = HASH(0x00 || d(0))."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left, right):
    """HASH(0x01 || MTH(D[0:k]) || MTH(D[k:n]))."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n):
    """k: the largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def mth_of_hashes(hashes):
    """MTH over a list whose members are already leaf-level hashes (used for
    the 8-leaf reference tree and for a tile's 256 hashes)."""
    n = len(hashes)
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return hashes[0]
    k = split_point(n)
    return node_hash(mth_of_hashes(hashes[:k]), mth_of_hashes(hashes[k:]))


# ---------------------------------------------------------------------------
# RFC 9162 sections 2.1.3.1 and 2.1.4.1: proof construction.
# `mth(a, b)` is any oracle returning MTH(D[a:b]); here it reads tiles.
# ---------------------------------------------------------------------------

def build_inclusion_path(m, n, mth):
    """PATH(m, D[0:n]) (section 2.1.3.1), list ordered leaf to root."""
    def path(m, a, b):
        if b - a == 1:
            return []                                    # PATH(0, {d(0)}) = {}
        k = split_point(b - a)
        if m < k:
            return path(m, a, a + k) + [mth(a + k, b)]   # PATH(m, D[0:k]) : MTH(D[k:n])
        return path(m - k, a + k, b) + [mth(a, a + k)]   # PATH(m-k, D[k:n]) : MTH(D[0:k])
    return path(m, 0, n)


def build_consistency_proof(m, n, mth):
    """PROOF(m, D[n]) = SUBPROOF(m, D[n], true) (section 2.1.4.1), 0 < m <= n."""
    def subproof(m, a, b, b_flag):
        if m == b - a:
            return [] if b_flag else [mth(a, b)]
        k = split_point(b - a)
        if m <= k:
            return subproof(m, a, a + k, b_flag) + [mth(a + k, b)]
        return subproof(m - k, a + k, b, False) + [mth(a, a + k)]
    return subproof(m, 0, n, True)


# ---------------------------------------------------------------------------
# RFC 9162 sections 2.1.3.2 and 2.1.4.2: proof verification.
# Deliberately independent from the construction above: it only uses the
# bit-twiddling algorithms of the RFC.
# ---------------------------------------------------------------------------

def verify_inclusion(leaf_index, tree_size, leaf_hash_, path, root_hash):
    """Section 2.1.3.2. Returns True iff the path proves inclusion."""
    if len(leaf_hash_) != 32 or any(len(p) != 32 for p in path):
        return False
    if leaf_index >= tree_size:                                  # step 1
        return False
    fn, sn = leaf_index, tree_size - 1                           # step 2
    r = leaf_hash_                                               # step 3
    for p in path:                                               # step 4
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root_hash                            # step 5


def verify_consistency(first, second, first_hash, second_hash, path):
    """Section 2.1.4.2, for 0 < first <= second (a proof from the empty tree
    is meaningless; equal sizes need an empty proof and equal roots)."""
    if first == 0 or first > second:
        return False
    if first == second:
        return not path and first_hash == second_hash
    if not path:                                                 # step 1
        return False
    if any(len(c) != 32 for c in path) or len(first_hash) != 32:
        return False
    path = list(path)
    if first & (first - 1) == 0:                                 # step 2
        path.insert(0, first_hash)
    fn, sn = first - 1, second - 1                               # step 3
    while fn & 1:                                                # step 4
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]                                            # step 5
    for c in path[1:]:                                           # step 6
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0    # step 7


# ---------------------------------------------------------------------------
# c2sp.org/signed-note: Format, Signatures, Verifier keys
# ---------------------------------------------------------------------------

MAX_SIGNATURES = 100   # "MUST accept at least up to 16 signatures"
SIG_ED25519 = 0x01     # signed-note "Ed25519 signatures"
SIG_COSIG_V1 = 0x04    # tlog-cosignature Ed25519 "cosignature/v1"


def valid_key_name(name):
    """Key names MUST be non-empty and MUST NOT contain spaces or '+'."""
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


class Note:
    def __init__(self, text, sigs):
        self.text = text    # str, including the final newline
        self.sigs = sigs    # list of (key name, key ID int, signature bytes)


def parse_note(data):
    """signed-note "Format": text, blank line, signature lines."""
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("note is not valid UTF-8")
    if any(ord(c) < 0x20 and c != "\n" for c in s):
        raise ValueError("note contains control characters")
    if not s.endswith("\n"):
        raise ValueError("note does not end in a newline")
    cut = s.rfind("\n\n")              # the last empty line separates
    if cut < 0:
        raise ValueError("note has no blank line before signatures")
    text, block = s[:cut + 1], s[cut + 2:]
    sigs = []
    for line in block.split("\n")[:-1]:
        if not line.startswith("\u2014 "):
            raise ValueError("malformed signature line %r" % line[:40])
        parts = line[2:].split(" ")
        if len(parts) != 2 or not valid_key_name(parts[0]):
            raise ValueError("malformed signature line %r" % line[:40])
        raw = b64d(parts[1])
        if len(raw) < 5:
            raise ValueError("signature too short on line %r" % line[:40])
        sigs.append((parts[0], int.from_bytes(raw[:4], "big"), raw[4:]))
    if not sigs:
        raise ValueError("note has no signatures")
    if len(sigs) > MAX_SIGNATURES:
        raise ValueError("note has too many signatures")
    return Note(text, sigs)


def key_id(name, sig_type, pubkey):
    """key ID = SHA-256(key name || 0x0A || signature type || public key)[:4]."""
    h = hashlib.sha256(name.encode() + b"\n" + bytes([sig_type]) + pubkey)
    return int.from_bytes(h.digest()[:4], "big")


class Verifier:
    """A vkey: <name>+hex(key ID)+base64(signature type || public key)."""

    def __init__(self, vkey):
        parts = vkey.split("+", 2)     # base64 may contain '+', names may not
        if len(parts) != 3:
            raise ValueError("vkey must be name+keyid+key")
        name, hexid, keyb64 = parts
        if not valid_key_name(name):
            raise ValueError("vkey has an invalid key name")
        if not re.fullmatch(r"[0-9a-f]{8}", hexid):
            raise ValueError("vkey key ID must be 8 lowercase hex digits")
        raw = b64d(keyb64)
        if len(raw) != 33 or raw[0] not in (SIG_ED25519, SIG_COSIG_V1):
            raise ValueError("vkey must be type 0x01 or 0x04 with a 32-byte Ed25519 key")
        self.name, self.type, self.pub = name, raw[0], raw[1:]
        self.id = int(hexid, 16)
        # Ed25519 (signed-note) and cosignature/v1 (tlog-cosignature, MUST)
        # both define the key ID as the hash above.
        if self.id != key_id(name, self.type, self.pub):
            raise ValueError("vkey key ID does not match its name and key")
        self.key = Ed25519PublicKey.from_public_bytes(self.pub)
        self.vkey = vkey

    def ident(self):
        return (self.name, self.id)

    def verify(self, text, sig):
        """Returns (ok, cosignature timestamp or None)."""
        try:
            if self.type == SIG_ED25519:
                # signed-note "Ed25519 signatures": RFC 8032 over the note text
                self.key.verify(sig, text.encode())
                return True, None
            # tlog-cosignature: timestamped_signature = u64 BE time || sig[64];
            # message = "cosignature/v1\ntime <t>\n" || note body.
            if len(sig) != 72:
                return False, None
            ts = int.from_bytes(sig[:8], "big")
            if ts > 2**63 - 1:
                return False, ts
            self.key.verify(sig[8:], cosignature_v1_message(ts, text))
            return True, ts
        except InvalidSignature:
            return False, None


def cosignature_v1_message(timestamp, note_text):
    """tlog-cosignature "Ed25519 signed message"."""
    return ("cosignature/v1\ntime %d\n" % timestamp).encode() + note_text.encode()


def note_signature_status(note, verifier):
    """signed-note "Signatures": lines matching (name, ID) MUST be verified;
    others are ignored. Returns ("absent"|"valid"|"invalid", timestamp)."""
    status, ts = "absent", None
    for name, kid, sig in note.sigs:
        if (name, kid) != verifier.ident():
            continue
        ok, t = verifier.verify(note.text, sig)
        if not ok:
            return "invalid", t
        status, ts = "valid", t
    return status, ts


# ---------------------------------------------------------------------------
# c2sp.org/tlog-checkpoint: "Note text"
# ---------------------------------------------------------------------------

class Checkpoint:
    def __init__(self, origin, size, root, extensions):
        self.origin, self.size, self.root, self.extensions = origin, size, root, extensions


def parse_checkpoint(text):
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not l for l in lines):
        raise ValueError("checkpoint needs at least three non-empty lines")
    origin, size_s, root_s = lines[:3]
    if not re.fullmatch(r"0|[1-9][0-9]*", size_s) or int(size_s) >= 2**64:
        raise ValueError("checkpoint tree size %r is not a canonical decimal" % size_s)
    root = b64d(root_s)
    if len(root) != 32:
        raise ValueError("checkpoint root hash is not 32 bytes")
    return Checkpoint(origin, int(size_s), root, lines[3:])


def load_signed_checkpoint(data, log, what):
    """Parse a checkpoint note and require a valid log signature."""
    try:
        note = parse_note(data)
        cp = parse_checkpoint(note.text)
    except ValueError as e:
        raise CheckError("%s: %s" % (what, e))
    status, _ = note_signature_status(note, log)
    if status == "absent":
        raise CheckError("%s not signed by log key %s" % (what, log.vkey))
    if status == "invalid":
        raise CheckError("%s: log key %s signature does not verify" % (what, log.name))
    return note, cp


# ---------------------------------------------------------------------------
# c2sp.org/tlog-tiles: tile paths and layout
# ---------------------------------------------------------------------------

TILE_WIDTH = 256
HASH_SIZE = 32


def tile_index_path(n):
    """<N>: zero-padded 3-digit elements, all but the last prefixed by 'x'."""
    elems = ["%03d" % (n % 1000)]
    n //= 1000
    while n > 0:
        elems.append("x%03d" % (n % 1000))
        n //= 1000
    return "/".join(reversed(elems))


def tile_path(level, n, width=TILE_WIDTH):
    """tile/<L>/<N>[.p/<W>] (level "entries" for entry bundles)."""
    p = "tile/%s/%s" % (level, tile_index_path(n))
    return p if width == TILE_WIDTH else p + ".p/%d" % width


def tile_layout(size):
    """Per level l: (number of full tiles, width of the partial tile or 0).
    Level l holds floor(size / 256**l) hashes; the partial tile has
    floor(size / 256**l) mod 256 of them."""
    levels, count = [], size
    while count > 0:
        levels.append((count // TILE_WIDTH, count % TILE_WIDTH))
        count //= TILE_WIDTH
    return levels


def parse_entry_bundle(data, where):
    """Entry bundle: sequence of big-endian uint16 length-prefixed entries."""
    entries, pos = [], 0
    while pos < len(data):
        if pos + 2 > len(data):
            raise CheckError("%s: truncated entry length" % where)
        n = int.from_bytes(data[pos:pos + 2], "big")
        if pos + 2 + n > len(data):
            raise CheckError("%s: truncated entry %d" % (where, len(entries)))
        entries.append(data[pos + 2:pos + 2 + n])
        pos += 2 + n
    return entries


class Source:
    """<prefix>: a local directory or an http(s):// base URL."""

    def __init__(self, base):
        self.base = base
        self.http = base.startswith("http://") or base.startswith("https://")
        if not self.http and not os.path.isdir(base):
            raise UsageError("--tiles: %s is not a directory or http(s) URL" % base)

    def get(self, path):
        """Returns the bytes, or None if the resource does not exist."""
        if not self.http:
            try:
                with open(os.path.join(self.base, path), "rb") as f:
                    return f.read()
            except FileNotFoundError:
                return None
            except OSError as e:
                raise CheckError("%s: %s" % (path, e))
        url = self.base.rstrip("/") + "/" + path
        req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip, identity"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                body = r.read()
                if r.headers.get("Content-Encoding", "").lower() == "gzip":
                    body = gzip.decompress(body)
                return body
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise CheckError("%s: HTTP %d" % (url, e.code))
        except (urllib.error.URLError, OSError) as e:
            raise CheckError("%s: %s" % (url, e))


class TiledTree:
    """All hashes of a tree of `size` leaves, read from tiles, plus entries."""

    def __init__(self, src, size):
        self.src, self.size = src, size
        self.layout = tile_layout(size)
        self.levels = []      # levels[l] = list of hashes at tile level l
        self.entries = []
        self.fallbacks = 0    # partial resources served from a full tile
        self.tiles_read = 0
        self._perfect, self._mth = {}, {}

    def _fetch(self, level, n, width):
        """A tile or entry bundle. tlog-tiles "Partial Tiles": a client MAY
        fall back to the full tile when the partial one is gone; then only
        its first `width` hashes/entries are used. Returns those items."""
        path = tile_path(level, n, width)
        data = self.src.get(path)
        want = width
        if data is None and width != TILE_WIDTH:
            data = self.src.get(tile_path(level, n))
            if data is not None:
                path, want = tile_path(level, n), TILE_WIDTH
                self.fallbacks += 1
        if data is None:
            raise CheckError("missing %s" % path)
        self.tiles_read += 1
        if level == "entries":
            items = parse_entry_bundle(data, path)
            if len(items) != want:
                raise CheckError("%s: bundle has %d entries, expected %d" % (path, len(items), want))
        else:
            if len(data) != want * HASH_SIZE:
                raise CheckError("%s: %d bytes, expected %d hashes of 32 bytes" % (path, len(data), want))
            items = [data[i:i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]
        return items[:width]

    def _tiles(self, level):
        """Yields (n, width) of every tile of a level, partial one last
        (entry bundles follow the level-0 layout)."""
        full, partial = self.layout[level]
        for n in range(full):
            yield n, TILE_WIDTH
        if partial:
            yield full, partial

    def load(self):
        for level in range(len(self.layout)):
            hashes = []
            for n, width in self._tiles(level):
                hashes.extend(self._fetch(level, n, width))
            self.levels.append(hashes)
        if self.layout:
            for n, width in self._tiles(0):
                self.entries.extend(self._fetch("entries", n, width))

    def tile_name(self, level, index):
        """Path of the tile holding hash `index` of a level."""
        n = index // TILE_WIDTH
        full, partial = self.layout[level]
        return tile_path(level, n, TILE_WIDTH if n < full else partial)

    def check_entries(self):
        """tlog-tiles "Log entries": each entry hashes to the level-0 tile hash."""
        for i, e in enumerate(self.entries):
            if leaf_hash(e) != self.levels[0][i]:
                raise CheckError("entry %d: leaf hash is not the tile's (%s[%d])"
                                 % (i, self.tile_name(0, i), i % TILE_WIDTH))

    def check_levels(self):
        """tlog-tiles "Merkle Tree": each hash at level l+1 is the MTH of the
        256 hashes of the corresponding *full* tile at level l."""
        for level in range(1, len(self.levels)):
            below = self.levels[level - 1]
            for j, h in enumerate(self.levels[level]):
                if mth_of_hashes(below[j * TILE_WIDTH:(j + 1) * TILE_WIDTH]) != h:
                    raise CheckError("%s[%d]: hash is not the root of tile %s"
                                     % (self.tile_name(level, j), j % TILE_WIDTH, tile_path(level - 1, j)))

    def perfect(self, height, index):
        """MTH(D[index * 2**height : (index + 1) * 2**height]); tile level l
        stores exactly the hashes of height 8*l, the rest is hashed up."""
        key = (height, index)
        h = self._perfect.get(key)
        if h is None:
            if height % 8 == 0:
                h = self.levels[height // 8][index]
            else:
                h = node_hash(self.perfect(height - 1, 2 * index),
                              self.perfect(height - 1, 2 * index + 1))
            self._perfect[key] = h
        return h

    def mth(self, a, b):
        """MTH(D[a:b]) per RFC 9162 2.1.1, built from perfect subtrees."""
        n = b - a
        if n == 0:
            return EMPTY_ROOT
        if n & (n - 1) == 0 and a % n == 0:
            return self.perfect(n.bit_length() - 1, a // n)
        key = (a, b)
        h = self._mth.get(key)
        if h is None:
            k = split_point(n)
            h = node_hash(self.mth(a, a + k), self.mth(a + k, b))
            self._mth[key] = h
        return h


# ---------------------------------------------------------------------------
# `check` command
# ---------------------------------------------------------------------------

def parse_vkey_arg(s, opt):
    try:
        return Verifier(s)
    except ValueError as e:
        raise UsageError("%s %s: %s" % (opt, s, e))


def cmd_check(args):
    log = parse_vkey_arg(args.log_key, "--log-key")
    if log.type != SIG_ED25519:
        raise UsageError("--log-key must be an Ed25519 (type 0x01) vkey")
    witnesses = {}
    for s in args.witness_key or []:
        w = parse_vkey_arg(s, "--witness-key")
        witnesses.setdefault((w.name, w.id, w.pub), w)   # distinct witnesses
    witnesses = list(witnesses.values())
    quorum = len(witnesses) if args.quorum is None else args.quorum
    if quorum < 0 or quorum > len(witnesses):
        raise UsageError("--quorum %d with %d witness keys" % (quorum, len(witnesses)))
    if args.prove_every < 1:
        raise UsageError("--prove-every must be >= 1")
    src = Source(args.tiles)
    old_notes = []
    for path in args.old_checkpoint or []:
        try:
            with open(path, "rb") as f:
                old_notes.append((path, f.read()))
        except OSError as e:
            raise UsageError("--old-checkpoint %s: %s" % (path, e))

    # Checkpoint, log signature (signed-note, tlog-checkpoint).
    data = src.get("checkpoint")
    if data is None:
        raise CheckError("missing checkpoint")
    note, cp = load_signed_checkpoint(data, log, "checkpoint")
    warnings = []
    if log.name != cp.origin:
        warnings.append("log key name %r differs from origin %r" % (log.name, cp.origin))

    # Witness cosignatures (tlog-cosignature).
    cosigned = []
    for w in witnesses:
        status, ts = note_signature_status(note, w)
        if status == "invalid":
            raise CheckError("checkpoint: cosignature by witness %s does not verify" % w.name)
        if status == "valid":
            cosigned.append((w.name, ts))
    if len(cosigned) < quorum:
        raise CheckError("quorum: %d of %d witnesses cosigned (need %d)"
                         % (len(cosigned), len(witnesses), quorum))

    # Tiles and entries (tlog-tiles), root (RFC 9162 2.1.1).
    tree = TiledTree(src, cp.size)
    tree.load()
    tree.check_entries()
    tree.check_levels()
    root = tree.mth(0, cp.size)
    if root != cp.root:
        raise CheckError("root: tiles give %s, checkpoint says %s" % (b64e(root), b64e(cp.root)))

    # Consistency with older checkpoints (RFC 9162 2.1.4).
    consistency = 0
    for path, data in old_notes:
        what = "old checkpoint %s" % path
        _, old = load_signed_checkpoint(data, log, what)
        if old.origin != cp.origin:
            raise CheckError("%s: origin %r is not %r" % (what, old.origin, cp.origin))
        if old.size > cp.size:
            raise CheckError("%s: size %d is larger than %d" % (what, old.size, cp.size))
        if old.size == 0:
            ok = old.root == EMPTY_ROOT     # the empty tree precedes any tree
        else:
            proof = build_consistency_proof(old.size, cp.size, tree.mth)
            ok = verify_consistency(old.size, cp.size, old.root, cp.root, proof)
        if not ok:
            raise CheckError("%s (size %d): not consistent with checkpoint size %d"
                             % (what, old.size, cp.size))
        consistency += 1

    # Inclusion of every K-th leaf and the last one (RFC 9162 2.1.3).
    inclusion = 0
    if cp.size:
        indexes = list(range(0, cp.size, args.prove_every))
        if indexes[-1] != cp.size - 1:
            indexes.append(cp.size - 1)
        for i in indexes:
            path = build_inclusion_path(i, cp.size, tree.mth)
            if not verify_inclusion(i, cp.size, leaf_hash(tree.entries[i]), path, cp.root):
                raise CheckError("entry %d: inclusion proof does not verify" % i)
            inclusion += 1

    for w in warnings:
        print("tlogcheck: warning: " + w, file=sys.stderr)
    if args.json:
        print(json.dumps({
            "origin": cp.origin, "size": cp.size, "root": b64e(cp.root),
            "entries": len(tree.entries), "cosigned_by": [n for n, _ in cosigned],
            "inclusion_checked": inclusion, "consistency_checked": consistency}))
    else:
        print("checkpoint  %s, size %d, root %s (signed by %s)" % (cp.origin, cp.size, b64e(cp.root), log.name))
        print("cosigned    %d of %d witnesses (quorum %d): %s" % (
            len(cosigned), len(witnesses), quorum,
            ", ".join("%s@%s" % (n, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)))
                      for n, t in cosigned) or "-"))
        print("tiles       %d read over %d levels%s; every upper-level hash matches"
              % (tree.tiles_read, len(tree.layout),
                 " (%d partial via full-tile fallback)" % tree.fallbacks if tree.fallbacks else ""))
        print("entries     %d, every leaf hash matches its level-0 tile hash" % len(tree.entries))
        print("root        recomputed from tiles, matches checkpoint")
        print("inclusion   %d proofs verified (every %d-th leaf and the last)" % (inclusion, args.prove_every))
        print("consistency %d old checkpoints verified" % consistency)
        print("OK")
    return 0


# ---------------------------------------------------------------------------
# `vectors` command: published examples and test vectors
# ---------------------------------------------------------------------------

# C2SP/C2SP signed-note.md, section "Verifier keys" / "Example".
SN_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SN_NOTE = ("This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tn"
           "agv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n").encode()
# C2SP/C2SP signed-note.md, introduction (note whose text contains an empty line).
SN_POEM = ("Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\n"
           "ed \u00e8 subito sera.\n\n\u2014 quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJ"
           "hUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n").encode()
# C2SP/C2SP tlog-cosignature.md, introduction (tlog-checkpoint.md's example
# checkpoint, plus a witness cosignature), and "Ed25519 signed message".
CP_BODY = ("example.com/behind-the-sofa\n20852163\n"
           "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n")
CP_NOTE = (CP_BODY + "\n\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZ"
           "niMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
           "\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5O"
           "WXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n").encode()
COSIG_MESSAGE = ("cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\n"
                 "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n").encode()

# transparency-dev/merkle testonly/constants.go: LeafInputs() and RootHashes()
# (the RFC 6962 8-leaf reference tree of certificate-transparency).
REF_LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657",
              "606162636465666768696a6b6c6d6e6f"]
REF_ROOTS = ["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
             "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
             "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
             "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
             "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
             "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
             "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
             "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"]
# transparency-dev/merkle cmd/proofgen/main.go: inclusionProofs (1-based leaf
# index, size, proof) and consistencyProofs (size1, size2, proof).
_N = {"96a2": "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f08": "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47": "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
      "bc1a": "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca85": "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37e": "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
      "fac5": "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
      "6e34": "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "0ebc": "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "b086": "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"}
REF_INCLUSION = [(1, 1, []), (1, 8, ["96a2", "5f08", "6b47"]), (6, 8, ["bc1a", "ca85", "d37e"]),
                 (3, 3, ["fac5"]), (2, 5, ["6e34", "5f08", "bc1a"])]
REF_CONSISTENCY = [(1, 1, []), (1, 8, ["96a2", "5f08", "6b47"]), (6, 8, ["0ebc", "ca85", "d37e"]),
                   (2, 5, ["5f08", "bc1a"]), (6, 7, ["0ebc", "b086", "d37e"])]

# transparency-dev/merkle testdata/{inclusion,consistency}/... probe files
# (file path in "file"; contents verbatim). A subset: all happy paths, the
# "additional" and "single-entry" sets, and all corruptions of set 1. The
# full set can be run with `vectors --merkle-testdata <checkout>/testdata`.
MERKLE_PROBES = r"""
{"file":"testdata/consistency/0/happy-path.json","size1":1,"size2":1,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":null,"desc":"happy path","wantErr":false}
{"file":"testdata/consistency/1/empty-proof.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":[],"desc":"empty proof","wantErr":true}
{"file":"testdata/consistency/1/happy-path.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"happy path","wantErr":false}
{"file":"testdata/consistency/1/modified-proof@0-bit-@4.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["hqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"modified proof@0 bit @4","wantErr":true}
{"file":"testdata/consistency/1/modified-proof@1-bit-@4.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Twg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"modified proof@1 bit @4","wantErr":true}
{"file":"testdata/consistency/1/modified-proof@2-bit-@4.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","e0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"modified proof@2 bit @4","wantErr":true}
{"file":"testdata/consistency/1/preceding-garbage.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["","lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"preceding garbage","wantErr":true}
{"file":"testdata/consistency/1/preceding-proof-@0.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"preceding proof @0","wantErr":true}
{"file":"testdata/consistency/1/preceding-root1.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"preceding root1","wantErr":true}
{"file":"testdata/consistency/1/preceding-root2.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"preceding root2","wantErr":true}
{"file":"testdata/consistency/1/size1-XOR-@2.json","size1":3,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"size1 XOR @2","wantErr":true}
{"file":"testdata/consistency/1/size1-plus-@1.json","size1":2,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"size1 plus @1","wantErr":true}
{"file":"testdata/consistency/1/size1-sub-@1.json","size1":0,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"size1 sub @1","wantErr":true}
{"file":"testdata/consistency/1/size2-div-@2.json","size1":1,"size2":4,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"size2 div @2","wantErr":true}
{"file":"testdata/consistency/1/size2-mul-@2.json","size1":1,"size2":16,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"size2 mul @2","wantErr":true}
{"file":"testdata/consistency/1/swapped-roots.json","size1":1,"size2":8,"root1":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","root2":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"swapped roots","wantErr":true}
{"file":"testdata/consistency/1/trailing-garbage.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ=",""],"desc":"trailing garbage","wantErr":true}
{"file":"testdata/consistency/1/trailing-root1.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ=","bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0="],"desc":"trailing root1","wantErr":true}
{"file":"testdata/consistency/1/trailing-root2.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ=","XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg="],"desc":"trailing root2","wantErr":true}
{"file":"testdata/consistency/1/truncated-proof.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4="],"desc":"truncated proof","wantErr":true}
{"file":"testdata/consistency/1/wrong-root1.json","size1":1,"size2":8,"root1":"V3JvbmdSb290","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"wrong root1","wantErr":true}
{"file":"testdata/consistency/1/wrong-root2.json","size1":1,"size2":8,"root1":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","root2":"V3JvbmdSb290","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"wrong root2","wantErr":true}
{"file":"testdata/consistency/2/happy-path.json","size1":6,"size2":8,"root1":"duZ9rbzfHhDht03cYIq9L5jfsW+851J3tSMqEn8gh+8=","root2":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","proof":["DrxdNDf74tsVi58Sah0RjjCBgQMdCpSfje3t68VY72o=","yoVOoSjtBQtBs1/8G4e46yveRh6eO1WW7Oa51ZdaCuA=","037kGJdt2VdTwcc4Yrk5j6Kiz5tP8P3+izDNlSCWFLc="],"desc":"happy path","wantErr":false}
{"file":"testdata/consistency/3/happy-path.json","size1":2,"size2":5,"root1":"+sVCA+fMaWzw38tCySodnbr3CtnmIfS9jZhmLwDjwSU=","root2":"Tju7H3tHjc/nH7YxYxUZo7yhLJrvyhYSv85ME6hiZNQ=","proof":["Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms="],"desc":"happy path","wantErr":false}
{"file":"testdata/consistency/4/happy-path.json","size1":6,"size2":7,"root1":"duZ9rbzfHhDht03cYIq9L5jfsW+851J3tSMqEn8gh+8=","root2":"3bib5AOAnjJXUNPSY814kpwpQreUKjS3fhIslZSnTIw=","proof":["DrxdNDf74tsVi58Sah0RjjCBgQMdCpSfje3t68VY72o=","sIaT7C5yFZcTBkHoIR5+7cy0wmQTlj7ubB4u0W/7Gl8=","037kGJdt2VdTwcc4Yrk5j6Kiz5tP8P3+izDNlSCWFLc="],"desc":"happy path","wantErr":false}
{"file":"testdata/consistency/additional/consistency-check-on-empty-tree-size1-is-zero-is-useless.json","size1":0,"size2":1,"root1":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","root2":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","proof":["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="],"desc":"consistency check on empty tree (size1 is zero) is useless","wantErr":true}
{"file":"testdata/consistency/additional/roots-do-not-match-and-sizes-are-zero.json","size1":0,"size2":0,"root1":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"roots do not match and sizes are zero","wantErr":true}
{"file":"testdata/consistency/additional/roots-do-not-not-match-and-sizes-are-one.json","size1":1,"size2":1,"root1":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"roots do not not match and sizes are one","wantErr":true}
{"file":"testdata/consistency/additional/size1-is-greater-than-size2-again.json","size1":2,"size2":1,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"size1 is greater than size2 again","wantErr":true}
{"file":"testdata/consistency/additional/size1-is-greater-than-size2.json","size1":1,"size2":0,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"size1 is greater than size2","wantErr":true}
{"file":"testdata/consistency/additional/size1-is-zero-and-does-not-equal-size2.json","size1":0,"size2":1,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"size1 is zero and does not equal size2","wantErr":true}
{"file":"testdata/consistency/additional/size1-is-zero-and-size2-is-not-zero.json","size1":0,"size2":1,"root1":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"size1 is zero and size2 is not zero","wantErr":true}
{"file":"testdata/consistency/additional/sizes-are-equal-one-and-proof-is-empty.json","size1":1,"size2":1,"root1":"ZG9uJ3QgY2FyZSAy","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"sizes are equal (one) and proof is empty","wantErr":false}
{"file":"testdata/consistency/additional/sizes-are-equal-one-but-roots-are-not.json","size1":1,"size2":1,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"sizes are equal (one) but roots are not","wantErr":true}
{"file":"testdata/consistency/additional/sizes-are-equal-zero-and-proof-is-empty.json","size1":0,"size2":0,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAx","proof":[],"desc":"sizes are equal (zero) and proof is empty","wantErr":true}
{"file":"testdata/consistency/additional/sizes-are-equal-zero-but-roots-are-not.json","size1":0,"size2":0,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"sizes are equal (zero) but roots are not","wantErr":true}
{"file":"testdata/consistency/additional/sizes-do-not-watch-and-proof-is-empty.json","size1":1,"size2":2,"root1":"ZG9uJ3QgY2FyZSAx","root2":"ZG9uJ3QgY2FyZSAy","proof":[],"desc":"sizes do not watch and proof is empty","wantErr":true}
{"file":"testdata/consistency/additional/sizes-match-but-proof-is-not-empty-and-sizes-are-one.json","size1":1,"size2":1,"root1":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","root2":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","proof":["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="],"desc":"sizes match but proof is not empty and sizes are one","wantErr":true}
{"file":"testdata/consistency/additional/sizes-match-but-proof-is-not-empty-and-sizes-are-zero.json","size1":0,"size2":0,"root1":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","root2":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","proof":["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="],"desc":"sizes match but proof is not empty and sizes are zero","wantErr":true}
{"file":"testdata/inclusion/0/happy-path.json","leafIdx":0,"treeSize":1,"root":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":null,"desc":"happy path","wantErr":false}
{"file":"testdata/inclusion/1/empty-root.json","leafIdx":0,"treeSize":8,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"empty root","wantErr":true}
{"file":"testdata/inclusion/1/happy-path.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"happy path","wantErr":false}
{"file":"testdata/inclusion/1/inserted-component.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"inserted component","wantErr":true}
{"file":"testdata/inclusion/1/leafIdx-XOR-@2.json","leafIdx":2,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"leafIdx XOR @2","wantErr":true}
{"file":"testdata/inclusion/1/leafIdx-plus-@1.json","leafIdx":1,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"leafIdx plus @1","wantErr":true}
{"file":"testdata/inclusion/1/leafIdx-sub-@1.json","leafIdx":18446744073709551615,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"leafIdx sub @1","wantErr":true}
{"file":"testdata/inclusion/1/modified-proof[0]-bit-@3.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["nqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"modified proof[0] bit @3","wantErr":true}
{"file":"testdata/inclusion/1/modified-proof[1]-bit-@3.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Vwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"modified proof[1] bit @3","wantErr":true}
{"file":"testdata/inclusion/1/modified-proof[2]-bit-@3.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","Y0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"modified proof[2] bit @3","wantErr":true}
{"file":"testdata/inclusion/1/preceding-garbage.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["","lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"preceding garbage","wantErr":true}
{"file":"testdata/inclusion/1/preceding-root.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"preceding root","wantErr":true}
{"file":"testdata/inclusion/1/random-root.json","leafIdx":0,"treeSize":8,"root":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"random root","wantErr":true}
{"file":"testdata/inclusion/1/removed-component.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4="],"desc":"removed component","wantErr":true}
{"file":"testdata/inclusion/1/trailing-garbage.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ=",""],"desc":"trailing garbage","wantErr":true}
{"file":"testdata/inclusion/1/trailing-root.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ=","XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg="],"desc":"trailing root","wantErr":true}
{"file":"testdata/inclusion/1/treeSize-div-@2.json","leafIdx":0,"treeSize":4,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"treeSize div @2","wantErr":true}
{"file":"testdata/inclusion/1/treeSize-mul-@2.json","leafIdx":0,"treeSize":16,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"treeSize mul @2","wantErr":true}
{"file":"testdata/inclusion/1/wrong-leaf.json","leafIdx":0,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"V3JvbmdMZWFm","proof":["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],"desc":"wrong leaf","wantErr":true}
{"file":"testdata/inclusion/2/happy-path.json","leafIdx":5,"treeSize":8,"root":"XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=","leafHash":"QnGia+DYqE8L1UyMMC58s6O10fpngKQLzOKHNHfatlg=","proof":["vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms=","yoVOoSjtBQtBs1/8G4e46yveRh6eO1WW7Oa51ZdaCuA=","037kGJdt2VdTwcc4Yrk5j6Kiz5tP8P3+izDNlSCWFLc="],"desc":"happy path","wantErr":false}
{"file":"testdata/inclusion/3/happy-path.json","leafIdx":2,"treeSize":3,"root":"rra8/idLcKFPsGel5VeCZNsPqbUa9eC6FZFY8yngbnc=","leafHash":"ApjRIpBtz8EIkstTpzmS/FufST6kybrbJ7eRtBJ6f+c=","proof":["+sVCA+fMaWzw38tCySodnbr3CtnmIfS9jZhmLwDjwSU="],"desc":"happy path","wantErr":false}
{"file":"testdata/inclusion/4/happy-path.json","leafIdx":1,"treeSize":5,"root":"Tju7H3tHjc/nH7YxYxUZo7yhLJrvyhYSv85ME6hiZNQ=","leafHash":"lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=","proof":["bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=","Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=","vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms="],"desc":"happy path","wantErr":false}
{"file":"testdata/inclusion/additional/0/empty-root-and-random-leaf.json","leafIdx":0,"treeSize":0,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"empty root and random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/0/empty-root.json","leafIdx":0,"treeSize":0,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"","proof":[],"desc":"empty root","wantErr":true}
{"file":"testdata/inclusion/additional/0/random-leaf.json","leafIdx":0,"treeSize":0,"root":"","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/1/empty-root-and-random-leaf.json","leafIdx":0,"treeSize":1,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"empty root and random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/1/empty-root.json","leafIdx":0,"treeSize":1,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"","proof":[],"desc":"empty root","wantErr":true}
{"file":"testdata/inclusion/additional/1/random-leaf.json","leafIdx":0,"treeSize":1,"root":"","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/2/empty-root-and-random-leaf.json","leafIdx":1,"treeSize":0,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"empty root and random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/2/empty-root.json","leafIdx":1,"treeSize":0,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"","proof":[],"desc":"empty root","wantErr":true}
{"file":"testdata/inclusion/additional/2/random-leaf.json","leafIdx":1,"treeSize":0,"root":"","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/3/empty-root-and-random-leaf.json","leafIdx":2,"treeSize":1,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"empty root and random leaf","wantErr":true}
{"file":"testdata/inclusion/additional/3/empty-root.json","leafIdx":2,"treeSize":1,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","leafHash":"","proof":[],"desc":"empty root","wantErr":true}
{"file":"testdata/inclusion/additional/3/random-leaf.json","leafIdx":2,"treeSize":1,"root":"","leafHash":"q6yroAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAGHgASNFY=","proof":[],"desc":"random leaf","wantErr":true}
{"file":"testdata/inclusion/single-entry/empty-leaf.json","leafIdx":0,"treeSize":1,"root":"DTrtAjFI/9KiWfvQzcf7PPl1ZYdg03dbgq9vkKrMLfw=","leafHash":"","proof":[],"desc":"empty leaf","wantErr":true}
{"file":"testdata/inclusion/single-entry/empty-root-and-leaf.json","leafIdx":0,"treeSize":1,"root":"","leafHash":"","proof":[],"desc":"empty root and leaf","wantErr":true}
{"file":"testdata/inclusion/single-entry/empty-root.json","leafIdx":0,"treeSize":1,"root":"","leafHash":"DTrtAjFI/9KiWfvQzcf7PPl1ZYdg03dbgq9vkKrMLfw=","proof":[],"desc":"empty root","wantErr":true}
{"file":"testdata/inclusion/single-entry/matching-root-and-leaf.json","leafIdx":0,"treeSize":1,"root":"DTrtAjFI/9KiWfvQzcf7PPl1ZYdg03dbgq9vkKrMLfw=","leafHash":"DTrtAjFI/9KiWfvQzcf7PPl1ZYdg03dbgq9vkKrMLfw=","proof":[],"desc":"matching root and leaf","wantErr":false}
"""


def run_probe(p):
    """One transparency-dev/merkle probe; True if the outcome is as expected."""
    dec = lambda s: b64d(s or "")
    if "leafIdx" in p:
        ok = verify_inclusion(p["leafIdx"], p["treeSize"], dec(p["leafHash"]),
                              [dec(x) for x in p["proof"] or []], dec(p["root"]))
    else:
        ok = verify_consistency(p["size1"], p["size2"], dec(p["root1"]), dec(p["root2"]),
                                [dec(x) for x in p["proof"] or []])
    return ok != p["wantErr"]


def vector_checks():
    """Yields (name, passed)."""
    # -- signed-note.md "Verifier keys" / "Example"
    v = Verifier(SN_VKEY)
    yield "signed-note vkey parses, key ID = SHA-256(name||0x0A||0x01||key)[:4]", \
        v.id == 0x530d903a == key_id("example.com/foo", 1, v.pub)
    note = parse_note(SN_NOTE)
    yield "signed-note example: text split", note.text == "This is an example message.\n"
    yield "signed-note example: signature key ID 530d903a", note.sigs[0][1] == 0x530d903a
    yield "signed-note example: signature verifies", note_signature_status(note, v)[0] == "valid"
    bad_text = parse_note(SN_NOTE.replace(b"example message", b"example massage"))
    yield "signed-note example: modified text fails", note_signature_status(bad_text, v)[0] == "invalid"
    sig = note.sigs[0]
    bad_sig = Note(note.text, [(sig[0], sig[1], bytes([sig[2][0] ^ 1]) + sig[2][1:])])
    yield "signed-note example: modified signature fails", note_signature_status(bad_sig, v)[0] == "invalid"
    other = Note(note.text, [("example.com/bar", sig[1], sig[2]), (sig[0], sig[1] ^ 1, sig[2])])
    yield "signed-note example: other name or key ID is ignored", note_signature_status(other, v)[0] == "absent"
    # -- signed-note.md introduction: text may contain empty lines
    poem = parse_note(SN_POEM)
    yield "signed-note intro: split at last empty line", \
        poem.text.endswith("sole:\n\ned \u00e8 subito sera.\n") and len(poem.sigs) == 1
    yield "signed-note intro: key name and ID", poem.sigs[0][:2] == ("quasimodo.example/salvatore", 0x367ba04b)
    yield "signed-note intro: not signed by example.com/foo", note_signature_status(poem, v)[0] == "absent"
    for bad in (SN_NOTE[:-1], SN_NOTE.replace(b"\n\n", b"\n"), SN_NOTE.replace(b"message", b"mes\tsage"),
                SN_NOTE.replace(b"\xe2\x80\x94 example.com/foo", b"\xe2\x80\x94 example.com+foo")):
        try:
            parse_note(bad)
            yield "signed-note: malformed variant rejected", False
        except ValueError:
            yield "signed-note: malformed variant rejected", True
    # -- tlog-checkpoint.md / tlog-cosignature.md examples
    cpn = parse_note(CP_NOTE)
    cp = parse_checkpoint(cpn.text)
    yield "tlog-checkpoint example: origin/size/root", \
        (cp.origin, cp.size, b64e(cp.root), cp.extensions) == \
        ("example.com/behind-the-sofa", 20852163, "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", [])
    yield "tlog-checkpoint example: log signature is key ID 033de0ae + 64 bytes", \
        cpn.sigs[0][1] == 0x033de0ae and len(cpn.sigs[0][2]) == 64
    w = cpn.sigs[1]
    yield "tlog-cosignature example: key ID 8d66cf3f, 8+64 byte timestamped_signature", \
        w[:2] == ("witness.example.com/w1", 0x8d66cf3f) and len(w[2]) == 72
    ts = int.from_bytes(w[2][:8], "big")
    yield "tlog-cosignature example: timestamp 1679315147", ts == 1679315147
    yield "tlog-cosignature: signed message equals the spec's example", \
        cosignature_v1_message(ts, cpn.text) == COSIG_MESSAGE
    for size, valid in (("12345", True), ("0", True), ("012", False), ("-1", False), ("1e3", False)):
        try:
            parse_checkpoint("o\n%s\n%s\n" % (size, b64e(bytes(32))))
            yield "tlog-checkpoint: size line %r accepted=%s" % (size, valid), valid
        except ValueError:
            yield "tlog-checkpoint: size line %r accepted=%s" % (size, valid), not valid
    # -- tlog-tiles.md "Merkle Tree" and "Partial Tiles"
    yield "tlog-tiles: index 1234067 -> x001/x234/067", tile_index_path(1234067) == "x001/x234/067"
    yield "tlog-tiles: tile path", tile_path(0, 1234067) == "tile/0/x001/x234/067"
    yield "tlog-tiles: entries path", tile_path("entries", 1234067, 5) == "tile/entries/x001/x234/067.p/5"
    yield "tlog-tiles: size 70000 -> 273 full + .p/112, 1 full + .p/17, .p/1", \
        tile_layout(70000) == [(273, 112), (1, 17), (0, 1)]
    yield "tlog-tiles: size 70000 partial paths", \
        [tile_path(l, f, p) for l, (f, p) in enumerate(tile_layout(70000))] == \
        ["tile/0/273.p/112", "tile/1/001.p/17", "tile/2/000.p/1"]
    yield "tlog-tiles: size 256 -> 1 full level-0 tile + level-1 .p/1", tile_layout(256) == [(1, 0), (0, 1)]
    # -- transparency-dev/merkle reference tree
    leaves = [leaf_hash(bytes.fromhex(x)) for x in REF_LEAVES]
    for n in range(9):
        yield "RFC 6962 reference tree: MTH of first %d leaves" % n, \
            mth_of_hashes(leaves[:n]).hex() == REF_ROOTS[n]
    oracle = lambda a, b: mth_of_hashes(leaves[a:b])
    roots = [bytes.fromhex(r) for r in REF_ROOTS]
    for idx, size, proof in REF_INCLUSION:
        want = [bytes.fromhex(_N[x]) for x in proof]
        yield "reference PATH(%d, D[%d]) built" % (idx - 1, size), build_inclusion_path(idx - 1, size, oracle) == want
        yield "reference PATH(%d, D[%d]) verifies" % (idx - 1, size), \
            verify_inclusion(idx - 1, size, leaves[idx - 1], want, roots[size])
    for m, n, proof in REF_CONSISTENCY:
        want = [bytes.fromhex(_N[x]) for x in proof]
        yield "reference PROOF(%d, D[%d]) built" % (m, n), build_consistency_proof(m, n, oracle) == want
        yield "reference PROOF(%d, D[%d]) verifies" % (m, n), verify_consistency(m, n, roots[m], roots[n], want)
    for line in MERKLE_PROBES.strip().splitlines():
        p = json.loads(line)
        yield "transparency-dev/merkle %s" % p["file"], run_probe(p)


def cmd_vectors(args):
    results = list(vector_checks())
    if args.merkle_testdata:
        for kind in ("inclusion", "consistency"):
            top = os.path.join(args.merkle_testdata, kind)
            if not os.path.isdir(top):
                raise UsageError("--merkle-testdata: no %s directory" % top)
            for d, _, files in sorted(os.walk(top)):
                for f in sorted(files):
                    if f.endswith(".json"):
                        with open(os.path.join(d, f)) as fh:
                            p = json.load(fh)
                        results.append(("%s/%s" % (os.path.relpath(d, args.merkle_testdata), f), run_probe(p)))
    failed = [n for n, ok in results if not ok]
    for n in failed:
        print("FAIL " + n)
    print("vectors: %d of %d passed" % (len(results) - len(failed), len(results)))
    return 0 if not failed else 1


def main(argv):
    ap = argparse.ArgumentParser(prog="tlogcheck.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("vectors", help="run the embedded published test vectors")
    v.add_argument("--merkle-testdata", metavar="DIR",
                   help="also run every probe in a transparency-dev/merkle testdata directory")
    c = sub.add_parser("check", help="verify a tiled log")
    c.add_argument("--tiles", required=True, metavar="DIR_OR_URL")
    c.add_argument("--log-key", required=True, metavar="VKEY")
    c.add_argument("--witness-key", action="append", metavar="VKEY")
    c.add_argument("--quorum", type=int)
    c.add_argument("--old-checkpoint", action="append", metavar="FILE")
    c.add_argument("--prove-every", type=int, default=1, metavar="K")
    c.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        return cmd_vectors(args) if args.cmd == "vectors" else cmd_check(args)
    except UsageError as e:
        print("tlogcheck: usage: %s" % e, file=sys.stderr)
        return 2
    except CheckError as e:
        print("tlogcheck: FAIL: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
