#!/usr/bin/python3
"""One Secret Service client scenario through python3-secretstorage, for the provider on
DBUS_SESSION_BUS_ADDRESS: store, search, read, replace, read, read the properties,
delete. Prints one JSON object of what a client observes (no paths, times or anything
a provider chooses), so that two providers can be compared. The session algorithm is the
first argument: 'plain' or 'dh' (dh-ietf1024-sha256-aes128-cbc-pkcs7)."""
import json
import sys
import time

import secretstorage
from secretstorage import util
from secretstorage.dhcrypto import Session

algorithm = sys.argv[1] if len(sys.argv) > 1 else "dh"


def open_plain_session(connection):
    """secretstorage offers dh first; this asks for plain, as a client without crypto does."""
    service = util.DBusAddressWrapper(util.SS_PATH, util.SERVICE_IFACE, connection)
    session = Session()
    output, path = service.call("OpenSession", "sv", util.ALGORITHM_PLAIN, ("s", ""))
    session.encrypted = False
    session.object_path = path
    return session


if algorithm == "plain":
    util.open_session = open_plain_session
    secretstorage.item.open_session = open_plain_session
    secretstorage.collection.open_session = open_plain_session
elif algorithm != "dh":
    sys.exit("usage: scenario.py plain|dh")

observed = {}
connection = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(connection)
if collection.is_locked():
    collection.unlock()
observed["collection-locked"] = collection.is_locked()
attributes = {"service": "scenario-" + algorithm, "user": "alice"}
before = time.time()
item = collection.create_item("Scenario " + algorithm, attributes, b"first value", replace=True)
found = list(collection.search_items(attributes))
observed["found-after-create"] = len(found)
item = found[0]
if item.is_locked():
    item.unlock()
observed["item-locked"] = item.is_locked()
observed["first"] = item.get_secret().decode()
collection.create_item("Scenario " + algorithm, attributes, b"second value", replace=True)
found = list(collection.search_items(attributes))
observed["found-after-replace"] = len(found)
item = found[0]
if item.is_locked():
    item.unlock()
observed["second"] = item.get_secret().decode()
observed["label"] = item.get_label()
observed["attributes"] = {k: v for k, v in item.get_attributes().items() if k != "xdg:schema"}
observed["content-type"] = item.get_secret_content_type()
observed["created-plausible"] = abs(item.get_created() - before) < 60
observed["modified-plausible"] = item.get_modified() >= item.get_created()
item.delete()
observed["found-after-delete"] = len(list(collection.search_items(attributes)))
print(json.dumps(observed, sort_keys=True))
