#!/usr/bin/env python3
"""A hostile local user's program against touchgated, speaking its protocol (docs/PROTOCOL.md).

Used by the availability tests (Tests/TouchgateCLITests/DaemonAvailabilityTests.swift) and by
the benchmark (bench/run.sh, section 7). Prints one line per thing it did, then "ready", and
keeps its connections open until its standard input closes or it is killed.

    attack.py SOCKET idle N                 N connections that take their hello and sit
    attack.py SOCKET stall OP ARGS N        N connections that send one request and never read
    attack.py SOCKET held OP ARGS N         as stall, each next one connecting only once the
                                            answer to the one before has arrived (up to 5 s)
    attack.py SOCKET await OP ARGS          one request read to its end, answering nothing asked
    attack.py SOCKET loop OP ARGS N         N requests one after another, counted by answer code
    attack.py SOCKET repeat OP ARGS S N     N connections, each repeating the request for S seconds
                                            (a pause of 0.25 s after an answer that came at once),
                                            "waiting" each time the reader waits for its finger and
                                            "turn-ended" when that request is answered;
                                            then the answers by code, and each failure's words
"""
import json, socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
args = sys.argv[3:]

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s, s.makefile("rb")

def request(s, op, arguments, ident=1):
    line = {"version": 1, "kind": "request", "id": ident, "operation": op, "arguments": arguments}
    s.sendall((json.dumps(line) + "\n").encode())

def say(*words):
    print(*words, flush=True)

held = []
if mode == "idle":
    # N connections that only take their hello and sit.
    greeted = refused = 0
    for _ in range(int(args[0])):
        s, f = connect()
        first = f.readline().decode()
        if '"hello"' in first:
            greeted += 1
            held.append(s)
        else:
            refused += 1
            say("refusal", first.strip())
    say("idle", greeted, refused)
elif mode in ("stall", "held"):
    # N connections that each send one request and never read another byte. "held" waits
    # until the daemon has answered (the bytes are there, unread) before the next one
    # connects: the daemon has then read the request and counted the connection where
    # the request put it, whatever the machine's load.
    import select
    op, arguments, count = args[0], json.loads(args[1]), int(args[2])
    for _ in range(count):
        s, f = connect()
        f.readline()
        request(s, op, arguments)
        if mode == "held":
            select.select([s], [], [], 5)
        held.append(s)
    say("stalled", count)
elif mode == "await":
    # One request, read to its end; answers nothing it is asked.
    op, arguments = args[0], json.loads(args[1])
    s, f = connect()
    f.readline()
    started = time.monotonic()
    request(s, op, arguments)
    while True:
        line = f.readline().decode()
        if not line:
            say("closed", round(time.monotonic() - started, 2))
            break
        message = json.loads(line)
        if message["kind"] == "ask":
            say("asked", message["question"]["kind"])
        if message["kind"] in ("result", "failure"):
            code = message.get("error", {}).get("code", "ok")
            say("ended", code, round(time.monotonic() - started, 2), json.dumps(message.get("error", {}).get("message", "")))
            break
elif mode == "loop":
    # N requests one after the other on one connection, counting the answers by code.
    op, arguments, count = args[0], json.loads(args[1]), int(args[2])
    s, f = connect()
    f.readline()
    codes = {}
    for ident in range(1, count + 1):
        request(s, op, arguments, ident)
        message = json.loads(f.readline().decode())
        code = message.get("error", {}).get("code", "ok") if message["kind"] == "failure" else "ok"
        codes[code] = codes.get(code, 0) + 1
    say("codes", json.dumps(codes, sort_keys=True))
elif mode == "repeat":
    # N connections at once, each sending the request again as soon as it is answered, for S
    # seconds. An answer that came within a second (a refusal) is followed by a pause of a
    # quarter second: the daemon's rate admits about one a second anyway, and spinning faster
    # would only load the machine the test measures on.
    import threading
    op, arguments, seconds, count = args[0], json.loads(args[1]), float(args[2]), int(args[3])
    codes, hot, lock = {}, [], threading.Lock()
    until = time.monotonic() + seconds
    def repeat():
        try:
            s, f = connect()
            f.readline()
        except OSError as error:
            with lock:
                codes["connect-" + type(error).__name__] = codes.get("connect-" + type(error).__name__, 0) + 1
            return
        ident = 0
        while time.monotonic() < until:
            ident += 1
            asked = time.monotonic()
            request(s, op, arguments, ident)
            turn = False
            while True:
                line = f.readline().decode()
                if not line:
                    return
                message = json.loads(line)
                if message["kind"] in ("result", "failure") and message.get("id") == ident:
                    break
                if message["kind"] == "event" and (message.get("event") or {}).get("event") == "finger-needed":
                    # The reader waits for this request's finger: its turn has begun.
                    turn = True
                    with lock:
                        say("waiting")
            error = message.get("error", {}) if message["kind"] == "failure" else {}
            if turn:
                with lock:
                    say("turn-ended")
            with lock:
                code = error.get("code", "ok")
                codes[code] = codes.get(code, 0) + 1
                if code != "ok":
                    # Told apart by their words, not their figures ("try again in 12 s").
                    hot.append(code + ": " + "".join("#" if c.isdigit() else c for c in error.get("message", "")))
            if time.monotonic() - asked < 1:
                time.sleep(0.25)
        held.append(s)
    threads = [threading.Thread(target=repeat) for _ in range(count)]
    for thread in threads:
        thread.start()
    say("started", count)
    for thread in threads:
        thread.join()
    say("codes", json.dumps(codes, sort_keys=True))
    for message in sorted(set(hot)):
        say("answer", json.dumps(message))
say("ready")
sys.stdin.read()
