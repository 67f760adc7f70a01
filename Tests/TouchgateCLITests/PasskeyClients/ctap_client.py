#!/usr/bin/env python3
"""A FIDO2 client for the Touchgate passkey tests, built on python-fido2 2.x.

The authenticator under test speaks CTAPHID over a Unix socket of type
SOCK_SEQPACKET instead of /dev/uhid: every message in either direction is one
64-byte CTAPHID report without a report-id byte, and one connection is one
opened device.  This program puts python-fido2's own HID device code
(CtapHidDevice), its WebAuthn client (Fido2Client with
DefaultClientDataCollector, so the RP-ID checks a browser runs are run) and its
relying-party code (Fido2Server, the attestation verifiers, CoseKey) on top of
that socket, so the tests drive the authenticator with a client we did not
write.

Usage:
  ctap_client.py --socket PATH [--origin https://example.org] COMMAND ...

Commands (see --help of each):
  info                 getInfo through Fido2Client, as JSON
  make                 registration through Fido2Client.make_credential,
                       verified with Fido2Server.register_complete and the
                       attestation verifier of its fmt
  assert               authentication through Fido2Client.get_assertion,
                       optionally verified with Fido2Server.authenticate_complete
  cancel               a discoverable get_assertion cancelled (CTAPHID_CANCEL)
                       at the first UP-needed keepalive
  raw-ctap2            one CTAPHID_CBOR request given as hex
  ctap2-info           authenticatorGetInfo through Ctap2, raw map
  ctap2-get-assertion  authenticatorGetAssertion through Ctap2 (no client)
  ctap2-uv-token       ClientPin(PinProtocolV2).get_uv_token
  ctap2-uv-retries     ClientPin.get_uv_retries
  credman              CredentialManagement with a UV token (permission cm):
                       metadata, every site and its credentials; optionally
                       an interrupted listing, renamings, and a deletion after
                       a wait

Output: one JSON document on stdout.
Exit status:
  0  success
  1  `cancel` only: the operation was not cancelled (it succeeded)
  2  any other failure (usage, socket, transport, malformed or non-canonical
     CBOR, client fell back to CTAP1/U2F); message on stderr
  3  the authenticator answered with a CTAP error; stdout holds one JSON line
     {"error": NAME, "code": N} (CtapError.ERR names), and when it came
     through Fido2Client also "client-error": ClientError.ERR name (and
     "cause" when the client error has no CTAP cause)
  4  the authenticator answered but its answer failed verification
     (make: Fido2Server.register_complete or the attestation statement);
     stdout holds {"error": "VERIFICATION_FAILED", "detail": ...}
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import socket
import sys
import threading
import time
from typing import Any, Mapping

from fido2 import cbor
from fido2.attestation import Attestation
from fido2.attestation.base import InvalidAttestation
from fido2.client import (
    ClientError,
    DefaultClientDataCollector,
    Fido2Client,
    PinRequiredError,
    UserInteraction,
)
from fido2.cose import CoseKey
from fido2.ctap import STATUS, CtapError
from fido2.ctap2 import AssertionResponse, Ctap2, Info
from fido2.ctap2.credman import CredentialManagement
from fido2.ctap2.pin import ClientPin, PinProtocolV2
from fido2.hid import CTAPHID, CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor
from fido2.server import Fido2Server
from fido2.webauthn import (
    Aaguid,
    AttestationConveyancePreference,
    AttestedCredentialData,
    AuthenticatorData,
    PublicKeyCredentialDescriptor,
    PublicKeyCredentialParameters,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialType,
    PublicKeyCredentialUserEntity,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

PROG = "ctap_client"
REPORT_SIZE = 64

EXIT_OK = 0
EXIT_NOT_CANCELLED = 1
EXIT_FAILURE = 2
EXIT_CTAP_ERROR = 3
EXIT_VERIFICATION_FAILED = 4

ALGORITHMS = {
    "es256": -7,
    "eddsa": -8,
    "es384": -35,
    "es512": -36,
    "rs256": -257,
    "ps256": -37,
}

CBOR_COMMAND_NAMES = {int(c): c.name for c in Ctap2.CMD}


def say(message: str) -> None:
    """A progress line on stderr."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    """A failure that is neither a CTAP error nor a client error (exit 2)."""


class VerificationFailed(Exception):
    """The authenticator's answer did not verify (exit 4)."""


# --------------------------------------------------------------------------
# Transport: CTAPHID reports over a SOCK_SEQPACKET Unix socket


class SeqpacketConnection(CtapHidConnection):
    """One connection to the authenticator = one opened HID device.

    Each write_packet/read_packet is exactly one 64-byte report; python-fido2
    hands over and expects reports without a report-id byte.
    """

    def __init__(self, path: str, read_timeout: float | None, trace: bool):
        self.path = path
        self.trace = trace
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.connect(path)
        except OSError as e:
            self.sock.close()
            raise Failure(f"cannot connect to {path}: {e}") from e
        self.sock.settimeout(read_timeout)
        self.read_timeout = read_timeout
        # Bookkeeping the tests can report on.
        self.last_cbor_command: int | None = None
        self.cancels_sent = 0
        self.keepalives_received = 0

    def write_packet(self, data: bytes) -> None:
        if len(data) != REPORT_SIZE:
            raise Failure(f"refusing to send a {len(data)}-byte report")
        if self.trace:
            say(f"> {data.hex()}")
        cmd = data[4]
        if cmd == 0x80 | CTAPHID.CBOR:
            self.last_cbor_command = data[7]
        elif cmd == 0x80 | CTAPHID.CANCEL:
            self.cancels_sent += 1
        sent = self.sock.send(data)
        if sent != len(data):
            raise OSError(f"short send: {sent} of {len(data)} bytes")

    def read_packet(self) -> bytes:
        try:
            data = self.sock.recv(REPORT_SIZE * 2)
        except socket.timeout:
            raise Failure(
                f"no report from the authenticator within {self.read_timeout} s"
            ) from None
        if not data:
            raise Failure("the authenticator closed the connection")
        if len(data) != REPORT_SIZE:
            raise Failure(
                f"the authenticator sent a {len(data)}-byte message, "
                f"not a {REPORT_SIZE}-byte report: {data.hex()}"
            )
        if self.trace:
            say(f"< {data.hex()}")
        if data[4] == 0x80 | CTAPHID.KEEPALIVE:
            self.keepalives_received += 1
        return data

    def close(self) -> None:
        self.sock.close()


def open_device(args) -> tuple[CtapHidDevice, SeqpacketConnection]:
    connection = SeqpacketConnection(args.socket, args.read_timeout, args.trace)
    descriptor = HidDescriptor(
        path=args.socket,
        vid=0,
        pid=0,
        report_size_in=REPORT_SIZE,
        report_size_out=REPORT_SIZE,
        product_name="Touchgate passkey socket",
        serial_number=None,
    )
    device = CtapHidDevice(descriptor, connection)
    return device, connection


# --------------------------------------------------------------------------
# User interaction


class CliInteraction(UserInteraction):
    """Says what the client waits for on stderr; never provides a PIN."""

    def __init__(self, on_up=None):
        self.on_up = on_up
        self.up_prompts = 0
        self.uv_requests = 0

    def prompt_up(self) -> None:
        self.up_prompts += 1
        say("authenticator waits for the user (keepalive: UP needed)")
        if self.on_up is not None:
            self.on_up()

    def request_pin(self, permissions, rp_id):
        say(
            f"PIN requested (permissions {int(permissions):#04x}, rp {rp_id}); "
            "this client never provides one"
        )
        return None

    def request_uv(self, permissions, rp_id) -> bool:
        self.uv_requests += 1
        say(
            f"user verification requested (permissions {int(permissions):#04x}, "
            f"rp {rp_id})"
        )
        return True


def keepalive_printer(status) -> None:
    try:
        name = STATUS(status).name
    except ValueError:
        name = str(status)
    say(f"keepalive: {name}")


def make_client(args, device, interaction) -> Fido2Client:
    client = Fido2Client(
        device, DefaultClientDataCollector(args.origin), interaction
    )
    if "FIDO_2_0" not in client.info.versions and "FIDO_2_1" not in client.info.versions:
        # Fido2Client falls back to CTAP1/U2F when getInfo fails or its CBOR is
        # not canonical (it catches ValueError and CtapError).  That is a bug
        # in the authenticator under test, not something to test through.
        raise Failure(
            "Fido2Client fell back to CTAP1/U2F (authenticatorGetInfo failed "
            f"or was rejected); versions seen: {client.info.versions}"
        )
    return client


# --------------------------------------------------------------------------
# JSON helpers


def jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


def emit(document: Any) -> None:
    print(json.dumps(document, sort_keys=False), flush=True)


def flags_json(flags: int) -> dict:
    F = AuthenticatorData.FLAG
    return {
        "value": int(flags),
        "up": bool(flags & F.UP),
        "uv": bool(flags & F.UV),
        "be": bool(flags & F.BE),
        "bs": bool(flags & F.BS),
        "at": bool(flags & F.AT),
        "ed": bool(flags & F.ED),
    }


def info_json(info, raw: Mapping[int, Any] | None = None) -> dict:
    doc = {
        "versions": list(info.versions),
        "extensions": list(info.extensions),
        "aaguid": bytes(info.aaguid).hex(),
        "options": dict(info.options),
        "max_msg_size": info.max_msg_size,
        "pin_uv_protocols": list(info.pin_uv_protocols),
        "max_creds_in_list": info.max_creds_in_list,
        "max_cred_id_length": info.max_cred_id_length,
        "transports": list(info.transports),
        "algorithms": jsonable(info.algorithms),
        "max_large_blob": info.max_large_blob,
        "force_pin_change": info.force_pin_change,
        "min_pin_length": info.min_pin_length,
        "firmware_version": info.firmware_version,
        "max_cred_blob_length": info.max_cred_blob_length,
        "preferred_platform_uv_attempts": info.preferred_platform_uv_attempts,
        "uv_modality": info.uv_modality,
        "remaining_disc_creds": info.remaining_disc_creds,
        "attestation_formats": list(info.attestation_formats),
    }
    if raw is not None:
        # Info fills defaults for absent members; say which the device sent.
        doc["present_keys"] = sorted(int(k) for k in raw.keys())
    return doc


# --------------------------------------------------------------------------
# Errors


def ctap_error_json(error: CtapError) -> dict:
    code = error.code
    return {"error": getattr(code, "name", "UNKNOWN_ERR"), "code": int(code)}


def error_json(exc: BaseException) -> dict | None:
    """JSON for a CTAP or client error, None for anything else."""
    if isinstance(exc, CtapError):
        return ctap_error_json(exc)
    if isinstance(exc, ClientError):
        cause = exc.cause
        if isinstance(cause, CtapError):
            doc = ctap_error_json(cause)
            doc["client-error"] = exc.code.name
            return doc
        name = "PIN_REQUIRED" if isinstance(exc, PinRequiredError) else exc.code.name
        return {
            "error": name,
            "client-error": exc.code.name,
            "code": None,
            "cause": None if cause is None else str(cause),
        }
    return None


def uv_retries(device) -> dict:
    """UV retries through a fresh Ctap2 on the same (still open) device."""
    try:
        ctap2 = Ctap2(device)
        if "uv" not in ctap2.info.options and "bioEnroll" not in ctap2.info.options:
            return {"uv_retries": None, "uv_retries_error": "device has no built-in UV"}
        return {"uv_retries": ClientPin(ctap2, PinProtocolV2()).get_uv_retries()}
    except CtapError as e:
        return {"uv_retries": None, "uv_retries_error": ctap_error_json(e)["error"]}
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return {"uv_retries": None, "uv_retries_error": f"{type(e).__name__}: {e}"}


# --------------------------------------------------------------------------
# Commands through Fido2Client


def cmd_info(args, device, connection) -> int:
    client = make_client(args, device, CliInteraction())
    info = client.info
    doc = {
        "ctaphid": {
            "version": device.version,
            "device_version": list(device.device_version),
            "capabilities": device.capabilities,
        },
        "backend": "ctap2",
    }
    doc.update(info_json(info))
    emit(doc)
    return EXIT_OK


def parse_uv(value: str | None) -> UserVerificationRequirement | None:
    return None if value is None else UserVerificationRequirement(value)


def parse_alg(value: str) -> int:
    value = value.lower()
    if value in ALGORITHMS:
        return ALGORITHMS[value]
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"unknown algorithm {value}") from None


def descriptor(cred_hex: str) -> PublicKeyCredentialDescriptor:
    return PublicKeyCredentialDescriptor(
        type=PublicKeyCredentialType.PUBLIC_KEY, id=bytes.fromhex(cred_hex)
    )


def raw_credential_public_key(auth_data: bytes) -> bytes:
    """The COSE key exactly as the authenticator encoded it in authData."""
    rest = auth_data[37:]
    id_len = int.from_bytes(rest[16:18], "big")
    key_and_more = rest[18 + id_len :]
    _, after = cbor.decode_from(key_and_more)
    return key_and_more[: len(key_and_more) - len(after)]


def cmd_make(args, device, connection) -> int:
    interaction = CliInteraction()
    client = make_client(args, device, interaction)

    rp = PublicKeyCredentialRpEntity(name=args.rp_name or args.rp, id=args.rp)
    server = Fido2Server(
        rp,
        attestation=AttestationConveyancePreference(args.attestation),
        verify_origin=None,
    )
    user_id = (
        bytes.fromhex(args.user_id)
        if args.user_id is not None
        else hashlib.sha256(args.user.encode()).digest()[:16]
    )
    user = PublicKeyCredentialUserEntity(
        id=user_id, name=args.user, display_name=args.display_name or args.user
    )
    uv = parse_uv(args.uv)
    options, state = server.register_begin(
        user,
        credentials=[descriptor(c) for c in args.exclude] or None,
        resident_key_requirement=(
            ResidentKeyRequirement.REQUIRED
            if args.resident
            else ResidentKeyRequirement.DISCOURAGED
        ),
        user_verification=uv,
    )
    algs = args.alg or [ALGORITHMS["es256"]]
    public_key_options = dataclasses.replace(
        options.public_key,
        pub_key_cred_params=[
            PublicKeyCredentialParameters(
                type=PublicKeyCredentialType.PUBLIC_KEY, alg=alg
            )
            for alg in algs
        ],
    )
    say(
        f"make_credential rp={args.rp} user={args.user} uv={args.uv} "
        f"resident={args.resident} algs={algs} exclude={len(args.exclude)}"
    )
    started = time.monotonic()
    result = client.make_credential(public_key_options)
    elapsed = time.monotonic() - started

    attestation_object = result.response.attestation_object
    client_data = result.response.client_data
    try:
        auth_data = server.register_complete(state, result)
    except ValueError as e:
        raise VerificationFailed(f"register_complete: {e}") from e

    fmt = attestation_object.fmt
    try:
        verifier = Attestation.for_type(fmt)()
        attestation_result = verifier.verify(
            attestation_object.att_stmt, auth_data, client_data.hash
        )
    except InvalidAttestation as e:
        raise VerificationFailed(f"{fmt} attestation statement: {e!r}") from e

    credential = auth_data.credential_data
    assert credential is not None  # register_complete checked AT
    raw_key = raw_credential_public_key(bytes(auth_data))
    decoded_key = cbor.decode(raw_key)
    emit(
        {
            "credential_id": credential.credential_id.hex(),
            "public_key": raw_key.hex(),
            "public_key_canonical": cbor.encode(decoded_key) == raw_key,
            "alg": decoded_key.get(3),
            "flags": flags_json(auth_data.flags),
            "sign_count": auth_data.counter,
            "fmt": fmt,
            "attestation_type": attestation_result.attestation_type.name,
            "attestation_trust_path_length": len(attestation_result.trust_path),
            "aaguid": bytes(credential.aaguid).hex(),
            "rp_id_hash_ok": auth_data.rp_id_hash == hashlib.sha256(args.rp.encode()).digest(),
            "user_id": user_id.hex(),
            "extensions": jsonable(auth_data.extensions),
            "client_extension_results": jsonable(dict(result.client_extension_results)),
            "uv_requests": interaction.uv_requests,
            "seconds": round(elapsed, 3),
        }
    )
    return EXIT_OK


def parse_public_keys(values: list[str]) -> list[tuple[bytes | None, CoseKey, str]]:
    keys = []
    for value in values:
        cred_id = None
        if ":" in value:
            cred_hex, value = value.split(":", 1)
            cred_id = bytes.fromhex(cred_hex)
        key = CoseKey.parse(cbor.decode(bytes.fromhex(value)))
        keys.append((cred_id, key, value))
    return keys


def assertion_json(assertion: AssertionResponse) -> dict:
    user = assertion.user
    auth_data = assertion.auth_data
    return {
        "credential_id": bytes(assertion.credential["id"]).hex(),
        "user": None
        if user is None
        else {
            "id": bytes(user["id"]).hex() if "id" in user else None,
            "name": user.get("name"),
            "display_name": user.get("displayName"),
        },
        "flags": flags_json(auth_data.flags),
        "sign_count": auth_data.counter,
        "number_of_credentials": assertion.number_of_credentials,
        "user_selected": assertion.user_selected,
        "extensions": jsonable(auth_data.extensions),
    }


def cmd_assert(args, device, connection) -> int:
    interaction = CliInteraction()
    client = make_client(args, device, interaction)
    keys = parse_public_keys(args.public_key)

    rp = PublicKeyCredentialRpEntity(name=args.rp, id=args.rp)
    server = Fido2Server(rp)
    uv = parse_uv(args.uv)
    options, state = server.authenticate_begin(
        credentials=[descriptor(c) for c in args.cred] or None,
        user_verification=uv,
    )
    say(
        f"get_assertion rp={args.rp} uv={args.uv} allow={len(args.cred)} "
        f"keys={len(keys)}"
    )
    started = time.monotonic()
    selection = client.get_assertion(options.public_key)
    elapsed = time.monotonic() - started

    assertions = selection.get_assertions()
    indices = range(len(assertions)) if args.all else range(min(1, len(assertions)))
    out = []
    for i in indices:
        doc = assertion_json(assertions[i])
        response = selection.get_response(i)
        doc["rp_id_hash_ok"] = (
            assertions[i].auth_data.rp_id_hash
            == hashlib.sha256(args.rp.encode()).digest()
        )
        if keys:
            doc["verified"] = False
            errors = []
            for cred_id, key, _ in keys:
                if cred_id is not None and cred_id != response.raw_id:
                    continue
                credential = AttestedCredentialData.create(
                    Aaguid.NONE, response.raw_id, key
                )
                try:
                    server.authenticate_complete(state, [credential], response)
                except ValueError as e:
                    errors.append(str(e))
                    continue
                doc["verified"] = True
                break
            if not doc["verified"]:
                doc["verify_errors"] = errors or ["no key given for this credential"]
        else:
            doc["verified"] = None
        out.append(doc)
    say(f"{len(assertions)} assertion(s) in {elapsed:.3f} s")
    emit(out)
    return EXIT_OK


def cmd_cancel(args, device, connection) -> int:
    event = threading.Event()
    interaction = CliInteraction(on_up=event.set)
    client = make_client(args, device, interaction)
    rp = PublicKeyCredentialRpEntity(name=args.rp, id=args.rp)
    server = Fido2Server(rp)
    options, _ = server.authenticate_begin(user_verification=parse_uv(args.uv))
    say(f"discoverable get_assertion rp={args.rp} uv={args.uv}, cancelled at the first UP keepalive")
    started = time.monotonic()
    try:
        client.get_assertion(options.public_key, event=event)
    except (ClientError, CtapError) as e:
        doc = error_json(e) or {}
        doc.update(
            {
                "cancelled": event.is_set(),
                "cancelled_command": CBOR_COMMAND_NAMES.get(
                    connection.last_cbor_command, connection.last_cbor_command
                ),
                "cancels_sent": connection.cancels_sent,
                "keepalives": connection.keepalives_received,
                "seconds": round(time.monotonic() - started, 3),
            }
        )
        if args.retries:
            doc.update(uv_retries(device))
        emit(doc)
        return EXIT_OK if doc.get("error") == "KEEPALIVE_CANCEL" else EXIT_CTAP_ERROR
    emit(
        {
            "cancelled": event.is_set(),
            "error": None,
            "code": None,
            "cancels_sent": connection.cancels_sent,
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    return EXIT_NOT_CANCELLED


# --------------------------------------------------------------------------
# Commands through Ctap2 directly (no client logic)


def cmd_raw_ctap2(args, device, connection) -> int:
    request = bytes.fromhex(args.hex)
    response = device.call(CTAPHID.CBOR, request, on_keepalive=keepalive_printer)
    if not response:
        raise Failure("empty CTAPHID_CBOR response")
    status = response[0]
    if status != 0:
        raise CtapError(status)
    body = response[1:]
    doc: dict[str, Any] = {"status": 0, "response_hex": body.hex()}
    if body:
        try:
            decoded = cbor.decode(body)
        except Exception as e:  # noqa: BLE001
            raise Failure(f"response is not CBOR python-fido2 can read: {e}") from e
        doc["response"] = jsonable(decoded)
        doc["canonical"] = cbor.encode(decoded) == body
    else:
        doc["response"] = None
        doc["canonical"] = True
    emit(doc)
    return EXIT_OK


def cmd_ctap2_info(args, device, connection) -> int:
    ctap2 = Ctap2(device)  # strict_cbor: non-canonical CBOR is an error
    raw = ctap2.send_cbor(Ctap2.CMD.GET_INFO)
    doc = info_json(Info.from_dict(raw), raw)
    doc["raw"] = jsonable(raw)
    emit(doc)
    return EXIT_OK


def parse_bool(value: str) -> bool:
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {value}")


def cmd_ctap2_get_assertion(args, device, connection) -> int:
    ctap2 = Ctap2(device)
    options = {}
    if args.up is not None:
        options["up"] = args.up
    if args.uv_option is not None:
        options["uv"] = args.uv_option
    allow = [
        {"type": "public-key", "id": bytes.fromhex(c)} for c in args.allow
    ] or None
    assertions = ctap2.get_assertions(
        args.rp,
        bytes.fromhex(args.cdh),
        allow,
        None,
        options or None,
        on_keepalive=keepalive_printer,
    )
    emit([assertion_json(a) for a in assertions])
    return EXIT_OK


PERMISSIONS = {
    "mc": ClientPin.PERMISSION.MAKE_CREDENTIAL,
    "ga": ClientPin.PERMISSION.GET_ASSERTION,
    "cm": ClientPin.PERMISSION.CREDENTIAL_MGMT,
    "be": ClientPin.PERMISSION.BIO_ENROLL,
    "lbw": ClientPin.PERMISSION.LARGE_BLOB_WRITE,
    "acfg": ClientPin.PERMISSION.AUTHENTICATOR_CFG,
}


def parse_permissions(value: str) -> ClientPin.PERMISSION:
    permissions = ClientPin.PERMISSION(0)
    for part in value.split(","):
        if part not in PERMISSIONS:
            raise argparse.ArgumentTypeError(f"unknown permission {part}")
        permissions |= PERMISSIONS[part]
    return permissions


def cmd_ctap2_uv_token(args, device, connection) -> int:
    ctap2 = Ctap2(device)
    client_pin = ClientPin(ctap2, PinProtocolV2())
    started = time.monotonic()
    token = client_pin.get_uv_token(
        args.permissions, args.rp, on_keepalive=keepalive_printer
    )
    emit(
        {
            "token": True,
            "token_length": len(token),
            "permissions": int(args.permissions),
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    return EXIT_OK


def cmd_ctap2_uv_retries(args, device, connection) -> int:
    ctap2 = Ctap2(device)
    emit({"uv_retries": ClientPin(ctap2, PinProtocolV2()).get_uv_retries()})
    return EXIT_OK


def cmd_credman(args, device, connection) -> int:
    """Credential management as a platform's settings page does it: one token (one touch),
    then metadata, every site and its credentials; --interrupt checks that another command
    drops what is left of a listing; --rename renames accounts; --delete removes one, after
    --wait seconds."""
    ctap2 = Ctap2(device)
    protocol = PinProtocolV2()
    token = ClientPin(ctap2, protocol).get_uv_token(
        ClientPin.PERMISSION.CREDENTIAL_MGMT, on_keepalive=keepalive_printer
    )
    credman = CredentialManagement(ctap2, protocol, token)
    R = CredentialManagement.RESULT
    metadata = credman.get_metadata()
    document: dict[str, Any] = {
        "existing": metadata.get(R.EXISTING_CRED_COUNT),
        "remaining": metadata.get(R.MAX_REMAINING_COUNT),
        "sites": [],
    }
    for rp in credman.enumerate_rps() if metadata.get(R.EXISTING_CRED_COUNT) else []:
        credentials = credman.enumerate_creds(rp[R.RP_ID_HASH])
        document["sites"].append(
            {
                "id": rp[R.RP]["id"],
                "credentials": [
                    {
                        "credential_id": bytes(c[R.CREDENTIAL_ID]["id"]).hex(),
                        "user_id": bytes(c[R.USER]["id"]).hex(),
                        "name": c[R.USER].get("name"),
                        "display_name": c[R.USER].get("displayName"),
                        "cred_protect": c.get(R.CRED_PROTECT),
                    }
                    for c in credentials
                ],
            }
        )
    if args.interrupt:
        first = credman.enumerate_rps_begin()
        document["interrupted_total"] = first.get(R.TOTAL_RPS)
        ctap2.get_info()
        try:
            credman.enumerate_rps_next()
            document["next_after_another_command"] = "answered"
        except CtapError as e:
            document["next_after_another_command"] = ctap_error_json(e)["error"]
    document["renames"] = []
    for rename in args.rename:
        credential, user_id, name = rename.split(":", 2)
        try:
            credman.update_user_info(
                {"type": "public-key", "id": bytes.fromhex(credential)},
                {"id": bytes.fromhex(user_id), "name": name, "displayName": name.title()},
            )
            document["renames"].append("ok")
        except CtapError as e:
            document["renames"].append(ctap_error_json(e)["error"])
    if args.delete:
        time.sleep(args.wait)
        credman.delete_cred({"type": "public-key", "id": bytes.fromhex(args.delete)})
        document["deleted"] = args.delete
    emit(document)
    return EXIT_OK


# --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctap_client.py",
        description="python-fido2 client for the Touchgate CTAPHID socket",
    )
    parser.add_argument("--socket", required=True, help="SOCK_SEQPACKET socket path")
    parser.add_argument("--origin", default="https://example.org")
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for any one report (keepalives count); default 60",
    )
    parser.add_argument(
        "--retries",
        action="store_true",
        help="after a CTAP/client error add uv_retries (ClientPin.get_uv_retries)",
    )
    parser.add_argument("--trace", action="store_true", help="hex of every report on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("info", help="getInfo through Fido2Client")

    p = sub.add_parser("make", help="register through Fido2Client.make_credential")
    p.add_argument("--rp", required=True)
    p.add_argument("--rp-name")
    p.add_argument("--user", required=True, help="user name")
    p.add_argument("--user-id", help="hex; default: first 16 bytes of SHA-256(name)")
    p.add_argument("--display-name")
    p.add_argument("--resident", action="store_true", help="residentKey required")
    p.add_argument("--uv", choices=["required", "preferred", "discouraged"], default="preferred")
    p.add_argument(
        "--alg",
        type=parse_alg,
        action="append",
        help="es256|eddsa|es384|rs256|N, repeatable, in order; default es256",
    )
    p.add_argument("--exclude", action="append", default=[], metavar="CREDID_HEX")
    p.add_argument(
        "--attestation",
        choices=["none", "indirect", "direct", "enterprise"],
        default="none",
        help="attestation conveyance preference; the statement is verified whatever it is",
    )

    p = sub.add_parser("assert", help="authenticate through Fido2Client.get_assertion")
    p.add_argument("--rp", required=True)
    p.add_argument("--cred", action="append", default=[], metavar="CREDID_HEX")
    p.add_argument("--uv", choices=["required", "preferred", "discouraged"], default="preferred")
    p.add_argument(
        "--public-key",
        action="append",
        default=[],
        metavar="[CREDID_HEX:]COSEHEX",
        help="verify assertions with it (Fido2Server.authenticate_complete); repeatable",
    )
    p.add_argument("--all", action="store_true", help="print every assertion (getNextAssertion)")

    p = sub.add_parser("cancel", help="cancel a discoverable get_assertion at the first UP keepalive")
    p.add_argument("--rp", default="example.org")
    p.add_argument("--uv", choices=["required", "preferred", "discouraged"], default="preferred")

    p = sub.add_parser("raw-ctap2", help="one CTAPHID_CBOR request (command byte + CBOR) as hex")
    p.add_argument("--hex", required=True)

    sub.add_parser("ctap2-info", help="authenticatorGetInfo through Ctap2, with the raw map")

    p = sub.add_parser("ctap2-get-assertion", help="authenticatorGetAssertion through Ctap2")
    p.add_argument("--rp", required=True)
    p.add_argument("--cdh", default="00" * 32, help="clientDataHash hex; default 32 zero bytes")
    p.add_argument("--allow", action="append", default=[], metavar="CREDID_HEX")
    p.add_argument("--up", type=parse_bool, help="options.up (omitted if not given)")
    p.add_argument("--uv-option", type=parse_bool, help="options.uv (omitted if not given)")

    p = sub.add_parser("ctap2-uv-token", help="getPinUvAuthTokenUsingUvWithPermissions (protocol 2)")
    p.add_argument("--rp", help="permissions RP ID")
    p.add_argument("--permissions", type=parse_permissions, required=True, help="mc|ga|mc,ga|...")

    sub.add_parser("ctap2-uv-retries", help="ClientPin getUVRetries")
    p = sub.add_parser("credman", help="credential management with a UV token")
    p.add_argument("--interrupt", action="store_true", help="begin a site listing, send getInfo, ask the next site")
    p.add_argument("--rename", action="append", default=[], metavar="CREDID_HEX:USERID_HEX:NAME",
                   help="updateUserInformation (displayName: NAME titled); each result in renames")
    p.add_argument("--delete", metavar="CREDID_HEX", help="remove this credential at the end")
    p.add_argument("--wait", type=float, default=0.0, help="seconds to wait before --delete")
    return parser


COMMANDS = {
    "info": cmd_info,
    "make": cmd_make,
    "assert": cmd_assert,
    "cancel": cmd_cancel,
    "raw-ctap2": cmd_raw_ctap2,
    "ctap2-info": cmd_ctap2_info,
    "ctap2-get-assertion": cmd_ctap2_get_assertion,
    "ctap2-uv-token": cmd_ctap2_uv_token,
    "ctap2-uv-retries": cmd_ctap2_uv_retries,
    "credman": cmd_credman,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    device = None
    try:
        device, connection = open_device(args)
        try:
            return COMMANDS[args.command](args, device, connection)
        except (CtapError, ClientError) as e:
            doc = error_json(e)
            assert doc is not None
            say(f"{type(e).__name__}: {e!r}")
            if args.retries:
                doc.update(uv_retries(device))
            emit(doc)
            return EXIT_CTAP_ERROR
        except VerificationFailed as e:
            emit({"error": "VERIFICATION_FAILED", "detail": str(e)})
            say(f"verification failed: {e}")
            return EXIT_VERIFICATION_FAILED
    except Failure as e:
        say(str(e))
        return EXIT_FAILURE
    except Exception as e:  # noqa: BLE001 - anything else is a failure, exit 2
        say(f"{type(e).__name__}: {e}")
        return EXIT_FAILURE
    finally:
        if device is not None:
            device.close()


if __name__ == "__main__":
    sys.exit(main())
