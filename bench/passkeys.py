#!/usr/bin/env python3
"""Passkey ceremonies timed in one process, for bench/passkeys.sh.

  passkeys.py touchgate SOCKET RUNS   Touchgate's authenticator over its socket, through
      python-fido2 2.x: the whole WebAuthn registration and sign-in (Fido2Client: getInfo,
      key agreement, the user verification that holds the touch, the ceremony), and the
      ceremony alone with a token already made (makeCredential, getAssertion): the time
      beyond the touch.
  passkeys.py soft RUNS               soft-webauthn's SoftWebauthnDevice (a software
      authenticator we did not write, in Python, no user verification, no transport): the
      same registration and sign-in, in its own virtual environment (it pins python-fido2 0.9).

Prints one JSON object: per figure, the median, min and max in milliseconds and the runs."""

import json
import os
import statistics
import sys
import time


def ms(start):
    return (time.perf_counter() - start) * 1000


def summary(figures):
    return {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": len(v)} for k, v in figures.items()}


def touchgate(path, runs):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "TouchgateCLITests",
                                    "PasskeyClients"))
    from ctap_client import SeqpacketConnection, REPORT_SIZE
    from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction
    from fido2.ctap2 import Ctap2
    from fido2.ctap2.pin import ClientPin, PinProtocolV2
    from fido2.hid import CtapHidDevice
    from fido2.hid.base import HidDescriptor
    from fido2.webauthn import (AuthenticatorSelectionCriteria, PublicKeyCredentialCreationOptions,
                                PublicKeyCredentialParameters, PublicKeyCredentialRequestOptions,
                                PublicKeyCredentialRpEntity, PublicKeyCredentialType, PublicKeyCredentialUserEntity,
                                ResidentKeyRequirement, UserVerificationRequirement)

    class Quiet(UserInteraction):
        def prompt_up(self):
            pass

        def request_pin(self, permissions, rp_id):
            return None

        def request_uv(self, permissions, rp_id):
            return True

    device = CtapHidDevice(HidDescriptor(path, 0, 0, REPORT_SIZE, REPORT_SIZE, "bench", None),
                           SeqpacketConnection(path, 60, False))
    client = Fido2Client(device, DefaultClientDataCollector("https://example.org"), user_interaction=Quiet())
    figures = {k: [] for k in ["register", "sign-in", "uv-token", "make-beyond-touch", "assert-beyond-touch"]}
    for i in range(runs):
        options = PublicKeyCredentialCreationOptions(
            rp=PublicKeyCredentialRpEntity(id="example.org", name="Example"),
            user=PublicKeyCredentialUserEntity(id=b"user%d" % i, name="user%d" % i, display_name="User"),
            challenge=os.urandom(32),
            pub_key_cred_params=[PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=-7)],
            authenticator_selection=AuthenticatorSelectionCriteria(resident_key=ResidentKeyRequirement.REQUIRED,
                                                                   user_verification=UserVerificationRequirement.REQUIRED))
        start = time.perf_counter()
        client.make_credential(options)
        figures["register"].append(ms(start))
        start = time.perf_counter()
        client.get_assertion(PublicKeyCredentialRequestOptions(
            challenge=os.urandom(32), rp_id="example.org",
            user_verification=UserVerificationRequirement.REQUIRED)).get_response(0)
        figures["sign-in"].append(ms(start))
    ctap = Ctap2(device)
    pin, protocol = ClientPin(ctap, PinProtocolV2()), PinProtocolV2()
    for i in range(runs):
        cdh = os.urandom(32)
        start = time.perf_counter()
        token = pin.get_uv_token(ClientPin.PERMISSION.MAKE_CREDENTIAL, "example.org")
        figures["uv-token"].append(ms(start))
        start = time.perf_counter()
        ctap.make_credential(cdh, {"id": "example.org"}, {"id": b"ctap%d" % i, "name": "ctap"},
                             [{"type": "public-key", "alg": -7}], options={"rk": True},
                             pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=2)
        figures["make-beyond-touch"].append(ms(start))
        token = pin.get_uv_token(ClientPin.PERMISSION.GET_ASSERTION, "example.org")
        start = time.perf_counter()
        ctap.get_assertion("example.org", cdh, pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=2)
        figures["assert-beyond-touch"].append(ms(start))
    return summary(figures)


def soft(runs):
    import soft_webauthn
    device = soft_webauthn.SoftWebauthnDevice()
    figures = {"register": [], "sign-in": []}
    for i in range(runs):
        options = {"publicKey": {"rp": {"id": "example.org", "name": "Example"},
                                 "user": {"id": b"soft%d" % i, "name": "soft", "displayName": "Soft"},
                                 "challenge": os.urandom(32), "pubKeyCredParams": [{"alg": -7, "type": "public-key"}]}}
        start = time.perf_counter()
        device.create(options, "https://example.org")
        figures["register"].append(ms(start))
        start = time.perf_counter()
        device.get({"publicKey": {"challenge": os.urandom(32), "rpId": "example.org"}}, "https://example.org")
        figures["sign-in"].append(ms(start))
    return summary(figures)


if __name__ == "__main__":
    if sys.argv[1] == "touchgate":
        print(json.dumps(touchgate(sys.argv[2], int(sys.argv[3]))))
    else:
        print(json.dumps(soft(int(sys.argv[2]))))
