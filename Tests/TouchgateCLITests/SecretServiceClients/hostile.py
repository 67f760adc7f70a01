#!/usr/bin/python3
"""Hostile and malformed calls on the Secret Service, through jeepney (what
python3-secretstorage speaks with). Prints one JSON object: for each attempt, the D-Bus
error name the provider answered, or "ok". With the argument 'abandon', it asks to unlock
the item whose attributes follow (NAME=VALUE…), starts the prompt, and leaves the bus
before anyone touches the reader."""
import json
import sys

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

NAME = "org.freedesktop.secrets"
ROOT = "/org/freedesktop/secrets"
DH = "dh-ietf1024-sha256-aes128-cbc-pkcs7"


def address(path, interface):
    return DBusAddress(path, bus_name=NAME, interface=interface)


SERVICE = address(ROOT, "org.freedesktop.Secret.Service")
LOGIN = address(ROOT + "/collection/login", "org.freedesktop.Secret.Collection")


def call(connection, target, method, signature=None, *body):
    reply = connection.send_and_get_reply(new_method_call(target, method, signature, body), timeout=30)
    if reply.header.message_type == MessageType.error:
        return reply.header.fields[HeaderFields.error_name], None
    return "ok", reply.body


def plain_session(connection):
    _, body = call(connection, SERVICE, "OpenSession", "sv", "plain", ("s", ""))
    return body[1]


first = open_dbus_connection(bus="SESSION")

if len(sys.argv) > 1 and sys.argv[1] == "abandon":
    attributes = dict(argument.split("=", 1) for argument in sys.argv[2:])
    _, (unlocked, locked) = call(first, SERVICE, "SearchItems", "a{ss}", attributes)
    _, (done, prompt) = call(first, SERVICE, "Unlock", "ao", locked)
    # Start the prompt and leave at once: nobody waits for its Completed.
    first.send(new_method_call(address(prompt, "org.freedesktop.Secret.Prompt"), "Prompt", "s", ("",)))
    first.close()
    print(json.dumps({"prompt": prompt != "/"}))
    sys.exit(0)

second = open_dbus_connection(bus="SESSION")
results = {}
results["wrong-signature"] = call(first, SERVICE, "SearchItems", "s", "not a dictionary")[0]
results["unknown-method"] = call(first, SERVICE, "Frobnicate")[0]
results["unknown-algorithm"] = call(first, SERVICE, "OpenSession", "sv", "rot13", ("s", ""))[0]
results["dh-key-one"] = call(first, SERVICE, "OpenSession", "sv", DH, ("ay", b"\x01"))[0]
results["dh-key-too-long"] = call(first, SERVICE, "OpenSession", "sv", DH, ("ay", b"\xff" * 200))[0]
results["dh-key-wrong-type"] = call(first, SERVICE, "OpenSession", "sv", DH, ("s", "key"))[0]
session = plain_session(first)
results["no-such-item"] = call(first, address(ROOT + "/collection/login/i0000000000000000", "org.freedesktop.Secret.Item"),
                               "GetSecret", "o", session)[0]
results["no-such-object"] = call(first, address(ROOT + "/nowhere/at/all", "org.freedesktop.Secret.Item"),
                                 "GetSecret", "o", session)[0]
label = {"org.freedesktop.Secret.Item.Label": ("s", "hostile"),
         "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"hostile": "1"})}
# Another client's session cannot carry a secret in.
results["foreign-session"] = call(second, LOGIN, "CreateItem", "a{sv}(oayays)b", label,
                                  (session, b"", b"stolen", "text/plain"), True)[0]
results["closed-session"] = "?"
many = {"org.freedesktop.Secret.Item.Label": ("s", "hostile"),
        "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"a%d" % n: "v" for n in range(1000)})}
results["huge-attributes"] = call(first, LOGIN, "CreateItem", "a{sv}(oayays)b", many,
                                  (session, b"", b"x", "text/plain"), True)[0]
wide = {"org.freedesktop.Secret.Item.Label": ("s", "hostile"),
        "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"wide": "v" * 100000})}
results["huge-attribute-value"] = call(first, LOGIN, "CreateItem", "a{sv}(oayays)b", wide,
                                       (session, b"", b"x", "text/plain"), True)[0]
results["attributes-not-a-dict"] = call(first, LOGIN, "CreateItem", "a{sv}(oayays)b",
                                        {"org.freedesktop.Secret.Item.Attributes": ("s", "nope")},
                                        (session, b"", b"x", "text/plain"), True)[0]
results["secret-not-a-session"] = call(first, LOGIN, "CreateItem", "a{sv}(oayays)b", label,
                                       (ROOT, b"", b"x", "text/plain"), True)[0]
results["set-label"] = call(first, address(ROOT + "/collection/login", "org.freedesktop.DBus.Properties"), "Set", "ssv",
                            "org.freedesktop.Secret.Collection", "Label", ("s", "renamed"))[0]
results["foreign-prompt-dismiss"] = call(second, address(ROOT + "/prompt/p1", "org.freedesktop.Secret.Prompt"), "Dismiss")[0]
results["no-interface-search"] = call(first, DBusAddress(ROOT, bus_name=NAME), "SearchItems", "a{ss}", {"hostile": "1"})[0]
call(first, address(session, "org.freedesktop.Secret.Session"), "Close")
results["closed-session"] = call(first, LOGIN, "CreateItem", "a{sv}(oayays)b", label,
                                 (session, b"", b"x", "text/plain"), True)[0]
print(json.dumps(results, sort_keys=True))
