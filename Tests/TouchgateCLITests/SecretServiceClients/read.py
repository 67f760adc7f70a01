#!/usr/bin/python3
"""Reads the secret of the item whose attributes are the arguments (NAME=VALUE…) through
python3-secretstorage, unlocking it first as a client does (Unlock, then the Prompt).
Prints the secret; exits 1 when the item stays locked (the prompt was dismissed), 2 when
there is no such item."""
import sys

import secretstorage

attributes = dict(argument.split("=", 1) for argument in sys.argv[1:])
connection = secretstorage.dbus_init()
items = list(secretstorage.search_items(connection, attributes))
if not items:
    sys.exit(2)
item = items[0]
if item.is_locked():
    item.unlock()
if item.is_locked():
    print("still locked", file=sys.stderr)
    sys.exit(1)
sys.stdout.write(item.get_secret().decode())
