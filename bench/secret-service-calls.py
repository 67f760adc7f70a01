"""secret-service-calls.py NAME: the provider on DBUS_SESSION_BUS_ADDRESS, call by call, on one
connection (jeepney, as python3-secretstorage speaks): the median in ms of 50 OpenSession
(dh-ietf1024-sha256-aes128-cbc-pkcs7), GetAll of the service's properties, SearchItems and
GetSecrets of the item service=bench user=me. Prints NAME and the four figures."""
import statistics
import sys
import time

from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from secretstorage.dhcrypto import Session, int_to_bytes

connection = open_dbus_connection(bus="SESSION")
service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")
properties = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                         interface="org.freedesktop.DBus.Properties")


def call(address, method, signature=None, *body):
    return connection.send_and_get_reply(new_method_call(address, method, signature, body)).body


def median(function, runs=50):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


key = int_to_bytes(Session().my_public_key)
session = call(service, "OpenSession", "sv", "dh-ietf1024-sha256-aes128-cbc-pkcs7", ("ay", key))[1]
unlocked = call(service, "SearchItems", "a{ss}", {"service": "bench", "user": "me"})[0]
figures = [
    median(lambda: call(service, "OpenSession", "sv", "dh-ietf1024-sha256-aes128-cbc-pkcs7", ("ay", key))),
    median(lambda: call(properties, "GetAll", "s", "org.freedesktop.Secret.Service")),
    median(lambda: call(service, "SearchItems", "a{ss}", {"service": "bench", "user": "me"})),
    median(lambda: call(service, "GetSecrets", "aoo", unlocked, session)),
]
print(sys.argv[1], " ".join(f"{figure:.2f}" for figure in figures))
