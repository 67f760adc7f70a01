#!/usr/bin/env python3
"""Passkey ceremonies timed in one process (bench/passkeys.sh runs it): Touchgate's
authenticator over its socket through python-fido2 (the whole WebAuthn ceremony through
Fido2Client, and CTAP's parts: the user verification, which holds the touch, then the
ceremony with its token, which is the time beyond the touch), beside soft-webauthn's
software authenticator (SoftWebauthnDevice, a Python authenticator we did not write, with
no user verification) doing the same registration and sign-in. Prints one JSON object of
per-figure lists of milliseconds."""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "TouchgateCLITests", "PasskeyClients"))
from ctap_client import SeqpacketConnection, REPORT_SIZE  # noqa: E402
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction  # noqa: E402
from fido2.ctap2 import Ctap2  # noqa: E402
from fido2.ctap2.pin import ClientPin, PinProtocolV2  # noqa: E402
from fido2.hid import CtapHidDevice  # noqa: E402
from fido2.hid.base import HidDescriptor  # noqa: E402
from fido2.webauthn import (PublicKeyCredentialCreationOptions, PublicKeyCredentialRequestOptions,  # noqa: E402
                            PublicKeyCredentialRpEntity, PublicKeyCredentialUserEntity,
                            PublicKeyCredentialParameters, PublicKeyCredentialType, AuthenticatorSelectionCriteria,
                            ResidentKeyRequirement, UserVerificationRequirement)
import soft_webauthn  # noqa: E402


class Quiet(UserInteraction):
    def prompt_up(self):
        pass

    def request_pin(self, permissions, rp_id):
        return None

    def request_uv(self, permissions, rp_id):
        return True


def device(path):
    connection = SeqpacketConnection(path, 30, False)
    descriptor = HidDescriptor(path, 0, 0, REPORT_SIZE, REPORT_SIZE, "bench", None)
    return CtapHidDevice(descriptor, connection)


def ms(start):
    return (time.perf_counter() - start) * 1000


def creation(user):
    return PublicKeyCredentialCreationOptions(
        rp=PublicKeyCredentialRpEntity(id="example.org", name="Example"),
        user=PublicKeyCredentialUserEntity(id=user.encode(), name=user, display_name=user),
        challenge=os.urandom(32),
        pub_key_cred_params=[PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=-7)],
        authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED,
                                                               user_verification=UserVerificationRequirement.REQUIRED))


def request():
    return PublicKeyCredentialRequestOptions(challenge=os.urandom(32), rp_id="example.org",
                                             user_verification=UserVerificationRequirement.REQUIRED)


def main():
    path, runs = sys.argv[1], int(sys.argv[2])
    figures = {k: [] for k in ["touchgate-register", "touchgate-sign-in", "touchgate-uv-token",
                               "touchgate-make-beyond-touch", "touchgate-assert-beyond-touch",
                               "soft-register", "soft-sign-in"]}
    dev = device(path)
    client = Fido2Client(dev, DefaultClientDataCollector("https://example.org"), user_interaction=Quiet())
    for i in range(runs):
        start = time.perf_counter()
        client.make_credential(creation(f"user{i}"))
        figures["touchgate-register"].append(ms(start))
        start = time.perf_counter()
        client.get_assertion(request()).get_response(0)
        figures["touchgate-sign-in"].append(ms(start))
    ctap = Ctap2(dev)
    pin = ClientPin(ctap, PinProtocolV2())
    cdh = os.urandom(32)
    protocol = PinProtocolV2()
    for i in range(runs):
        start = time.perf_counter()
        token = pin.get_uv_token(ClientPin.PERMISSION.MAKE_CREDENTIAL, "example.org")
        figures["touchgate-uv-token"].append(ms(start))
        start = time.perf_counter()
        ctap.make_credential(cdh, {"id": "example.org"}, {"id": b"ctap%d" % i, "name": "ctap"},
                             [{"type": "public-key", "alg": -7}], options={"rk": True},
                             pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=2)
        figures["touchgate-make-beyond-touch"].append(ms(start))
        token = pin.get_uv_token(ClientPin.PERMISSION.GET_ASSERTION, "example.org")
        start = time.perf_counter()
        ctap.get_assertion("example.org", cdh, pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=2)
        figures["touchgate-assert-beyond-touch"].append(ms(start))
    soft = soft_webauthn.SoftWebauthnDevice()
    for i in range(runs):
        options = {"publicKey": {"rp": {"id": "example.org", "name": "Example"},
                                 "user": {"id": b"soft%d" % i, "name": "soft", "displayName": "soft"},
                                 "challenge": os.urandom(32),
                                 "pubKeyCredParams": [{"alg": -7, "type": "public-key"}]}}
        start = time.perf_counter()
        soft.create(options, "https://example.org")
        figures["soft-register"].append(ms(start))
        start = time.perf_counter()
        soft.get({"publicKey": {"challenge": os.urandom(32), "rpId": "example.org"}}, "https://example.org")
        figures["soft-sign-in"].append(ms(start))
    print(json.dumps({k: {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": len(v)}
                      for k, v in figures.items()}))


if __name__ == "__main__":
    main()
