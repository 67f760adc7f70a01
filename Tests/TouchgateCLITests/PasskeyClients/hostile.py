#!/usr/bin/env python3
"""A hostile client of the passkey authenticator's socket (one 64-byte CTAPHID report per
SOCK_SEQPACKET message): malformed packets, channel exhaustion, CBOR bombs and a
makeCredential flood. Each attack prints one JSON line saying what the authenticator
answered; the last line says whether a new connection was still served (INIT and getInfo).
Standard library only. Exit 0 when every answer was the refusal CTAP 2.1 names."""

import json
import os
import socket
import struct
import sys
import time

BROADCAST = 0xFFFFFFFF
INIT, PING, CBOR, CANCEL, ERROR, KEEPALIVE = 0x86, 0x81, 0x90, 0x91, 0xBF, 0xBB


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    return s


def packet(cid, cmd, bcnt, data):
    body = struct.pack(">IBH", cid, cmd, bcnt) + data
    return (body + bytes(64))[:64]


def cont(cid, seq, data):
    return (struct.pack(">IB", cid, seq) + data + bytes(64))[:64]


def read(s, skip_keepalive=True, timeout=5.0):
    """The next non-keepalive report, or None after `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        s.settimeout(max(0.05, end - time.monotonic()))
        try:
            r = s.recv(64)
        except socket.timeout:
            return None
        if not r:
            return None
        if skip_keepalive and r[4] == KEEPALIVE:
            continue
        return r
    return None


def send(s, cid, cmd, payload):
    """Sends a whole message: its initialisation packet and continuations."""
    s.send(packet(cid, cmd, len(payload), payload[:57]))
    rest, seq = payload[57:], 0
    while rest:
        s.send(cont(cid, seq, rest[:59]))
        rest, seq = rest[59:], seq + 1


def message(s, cid, cmd, payload):
    """Sends a whole message and reads the whole answer: (command, payload)."""
    send(s, cid, cmd, payload)
    r = read(s, timeout=10)
    if r is None:
        return None, b""
    cmd, n = r[4], struct.unpack(">H", r[5:7])[0]
    data = r[7:7 + n]
    while len(data) < n:
        c = read(s)
        if c is None:
            break
        data += c[5:5 + n - len(data)]
    return cmd, data


def allocate(s):
    nonce = os.urandom(8)
    cmd, data = message(s, BROADCAST, INIT, nonce)
    assert cmd == INIT and data[:8] == nonce, (cmd, data)
    return struct.unpack(">I", data[8:12])[0]


def main():
    path = sys.argv[1]
    results, ok = [], True

    def report(name, got, expected):
        nonlocal ok
        good = got == expected
        ok &= good
        results.append({"attack": name, "answer": got, "expected": expected, "ok": good})

    s = connect(path)
    cid = allocate(s)
    # Framing: a CBOR message on a channel never allocated; channel 0; a declared length past
    # the largest message; a continuation out of order.
    message_cmd, data = message(s, 0x01020304, CBOR, b"\x04")
    report("unallocated channel", (message_cmd, data[:1].hex()), (ERROR, "0b"))
    s.send(packet(0, CBOR, 1, b"\x04"))
    r = read(s)
    report("channel 0", (r[4], r[7]) if r else None, (ERROR, 0x0B))
    s.send(packet(cid, CBOR, 0xFFFF, b"\x01"))
    r = read(s)
    report("length past the largest message", (r[4], r[7]) if r else None, (ERROR, 0x03))
    s.send(packet(cid, CBOR, 100, b"\x01" + bytes(56)))
    s.send(cont(cid, 5, bytes(59)))
    r = read(s)
    report("continuation out of order", (r[4], r[7]) if r else None, (ERROR, 0x04))
    s.send(packet(cid, 0x80 | 0x55, 0, b""))
    r = read(s)
    report("unknown command", (r[4], r[7]) if r else None, (ERROR, 0x01))
    # Short and stray reports are ignored, and the channel still answers.
    s.send(b"\x01\x02")
    s.send(cont(cid, 0, bytes(59)))
    cmd, data = message(s, cid, PING, b"still here")
    report("ping after stray reports", (cmd, data), (PING, b"still here"))

    # A message stalled after its first packet, past the 3 s between packets: the stalled
    # channel is told MSG_TIMEOUT, and the report that found it (another client's INIT on
    # the broadcast channel) is answered, not swallowed.
    staller = allocate(s)
    s.send(packet(staller, CBOR, 100, b"\x04" + bytes(56)))
    # 3 s counted from when the authenticator read the packet, which may be late on a loaded machine.
    time.sleep(4.5)
    nonce = os.urandom(8)
    s.send(packet(BROADCAST, INIT, 8, nonce))
    first, second = read(s), read(s)
    got = [(struct.unpack(">I", r[0:4])[0] == staller, r[4], r[7] if r[4] == ERROR else r[7:15] == nonce)
           if r else None for r in (first, second)]
    report("a stalled message times out; the next INIT is answered", got, [(True, ERROR, 0x05), (False, INIT, True)])

    # CBOR bombs: arrays nested 2,000 deep; a byte string claiming 2^64 bytes; a map of
    # 3,000 entries; not CBOR at all.
    deep = b"\x01" + b"\x81" * 2000 + b"\x00"
    cmd, data = message(s, cid, CBOR, deep[:7609])
    report("nested 2,000 deep", (cmd, data[:1].hex()), (CBOR, "15"))
    cmd, data = message(s, cid, CBOR, b"\x01\xa1\x01\x5b\xff\xff\xff\xff\xff\xff\xff\xff")
    report("a length of 2^64", (cmd, data[:1].hex()), (CBOR, "12"))
    wide = b"\x01\xb9\x0b\xb8" + b"".join(b"\x19" + struct.pack(">H", i) + b"\x00" for i in range(3000))
    cmd, data = message(s, cid, CBOR, wide[:7609])
    report("a map of 3,000 entries", (cmd, data[:1].hex() in ("15", "12")), (CBOR, True))
    cmd, data = message(s, cid, CBOR, b"\x01\xff\xff\xff")
    report("not CBOR", (cmd, data[:1].hex()), (CBOR, "12"))
    cmd, data = message(s, cid, CBOR, b"\x01\xa0")
    report("makeCredential without parameters", (cmd, data[:1].hex()), (CBOR, "14"))

    # Channel exhaustion: 500 INITs; the newest channels still work.
    last = [allocate(s) for _ in range(500)][-1]
    cmd, data = message(s, last, PING, b"x")
    report("500 channels allocated, the newest answers", (cmd, data), (PING, b"x"))

    # A makeCredential flood: one waits for a finger, every other is CHANNEL_BUSY at once.
    mc = bytes.fromhex(
        "01a4" + "015820" + "00" * 32
        + "02a1626964" + "6b6578616d706c652e6f7267"
        + "03a262696441016" + "46e616d656161"
        + "0481a263616c67266474797065" + "6a7075626c69632d6b6579")
    send(s, last, CBOR, mc)
    busy = 0
    other = allocate(s)
    for _ in range(50):
        send(s, other, CBOR, mc)
        r = read(s, timeout=2)
        if r is not None and r[4] == ERROR and r[7] == 0x06:
            busy += 1
    report("a flood of 50 while one waits: channel busy", busy, 50)
    s.send(packet(last, CANCEL, 0, b""))
    r = read(s, timeout=10)
    report("the waiting one cancelled", (r[4], r[7]) if r else None, (CBOR, 0x2D))
    s.close()

    # A new connection is served.
    t = connect(path)
    fresh = allocate(t)
    cmd, data = message(t, fresh, CBOR, b"\x04")
    report("a new connection gets getInfo", (cmd, data[:1].hex()), (CBOR, "00"))
    t.close()
    for r in results:
        print(json.dumps(r, default=lambda v: v.hex() if isinstance(v, bytes) else str(v)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
