#!/usr/bin/env python3
"""A smoke test of /dev/uhid for a FIDO HID authenticator, with the standard library only.

Run it as root where /dev/uhid exists, e.g. in the test VM:

    scripts/vm.sh run --share scripts -- python3 "$PWD/scripts/vm-uhid-smoke.py"

It makes a virtual FIDO device through /dev/uhid, checks that a /dev/hidrawN appears for it,
that libfido2 (`fido2-token -L`) lists it, that `fido2-token -I` gets through CTAPHID INIT
and a CTAP2 GetInfo answered here, prints what the kernel hands over (the facts the Swift
authenticator must match), destroys the device and checks that its hidraw node goes away.
Exit status 0 when every check passed, 1 otherwise.

The kernel interface (include/uapi/linux/uhid.h, checked against this machine's
/usr/include/linux/uhid.h; every struct there is __attribute__((packed)), little-endian
on x86-64):

    struct uhid_event { u32 type; union { ... } u; }     4 + 4372 = 4376 bytes
        the union's largest member is uhid_create2_req (4372 bytes), so a read() of 4376
        bytes gets any event whole; the kernel copies min(count, 4376) bytes per read()
        and one event per read(). A write() shorter than 4376 is accepted and padded
        with zeros by the kernel; write() returns the count written.

    event types (enum uhid_event_type):
        UHID_DESTROY = 1   UHID_START = 2   UHID_STOP = 3   UHID_OPEN = 4
        UHID_CLOSE = 5     UHID_OUTPUT = 6  UHID_GET_REPORT = 9
        UHID_GET_REPORT_REPLY = 10          UHID_CREATE2 = 11
        UHID_INPUT2 = 12   UHID_SET_REPORT = 13   UHID_SET_REPORT_REPLY = 14
        (0, 7, 8 are the legacy CREATE, OUTPUT_EV and INPUT)

    struct uhid_create2_req {          offset
        u8  name[128];                 0
        u8  phys[64];                  128
        u8  uniq[64];                  192
        u16 rd_size;                   256
        u16 bus;                       258   BUS_USB = 0x03 (libfido2 1.12 lists only USB)
        u32 vendor;                    260
        u32 product;                   264
        u32 version;                   268
        u32 country;                   272
        u8  rd_data[4096];             276   HID_MAX_DESCRIPTOR_SIZE
    }                                  4372 bytes

    struct uhid_start_req  { u64 dev_flags; }   UHID_DEV_NUMBERED_{FEATURE,OUTPUT,INPUT}_REPORTS
                                                = bits 0, 1, 2 (0 here: no report IDs)
    struct uhid_input2_req { u16 size; u8 data[4096]; }                  (to the kernel)
    struct uhid_output_req { u8 data[4096]; u16 size; u8 rtype; }        (from the kernel)
        rtype: UHID_FEATURE_REPORT = 0, UHID_OUTPUT_REPORT = 1, UHID_INPUT_REPORT = 2
        so in the 4376-byte event: type at 0, data at 4, size at 4100, rtype at 4102.

The report descriptor is the FIDO one: usage page 0xF1D0, usage 0x01 (CTAPHID), one 64-byte
input report (usage 0x20) and one 64-byte output report (usage 0x21), no report IDs.
"""

import glob
import os
import select
import struct
import subprocess
import sys
import threading
import time

UHID_DESTROY, UHID_START, UHID_STOP, UHID_OPEN, UHID_CLOSE, UHID_OUTPUT = 1, 2, 3, 4, 5, 6
UHID_GET_REPORT, UHID_GET_REPORT_REPLY, UHID_CREATE2, UHID_INPUT2 = 9, 10, 11, 12
UHID_SET_REPORT, UHID_SET_REPORT_REPLY = 13, 14
EVENT_NAMES = {1: "DESTROY", 2: "START", 3: "STOP", 4: "OPEN", 5: "CLOSE", 6: "OUTPUT",
               9: "GET_REPORT", 11: "CREATE2", 12: "INPUT2", 13: "SET_REPORT"}
UHID_EVENT_SIZE = 4 + 4372
CREATE2_FORMAT = "<I128s64s64sHHIIII4096s"
assert struct.calcsize(CREATE2_FORMAT) == UHID_EVENT_SIZE
OUTPUT_DATA, OUTPUT_SIZE, OUTPUT_RTYPE = 4, 4100, 4102
BUS_USB = 0x03
VENDOR, PRODUCT = 0x1209, 0x7467  # pid.codes test vendor; any pair does
NAME = b"Touchgate uhid smoke test"
UNIQ = ("touchgate-smoke-%d" % os.getpid()).encode()
REPORT_SIZE = 64

REPORT_DESCRIPTOR = bytes([
    0x06, 0xD0, 0xF1,  # Usage Page (FIDO Alliance, 0xF1D0)
    0x09, 0x01,        # Usage (CTAPHID, 0x01)
    0xA1, 0x01,        # Collection (Application)
    0x09, 0x20,        #   Usage (Input Report Data)
    0x15, 0x00,        #   Logical Minimum (0)
    0x26, 0xFF, 0x00,  #   Logical Maximum (255)
    0x75, 0x08,        #   Report Size (8 bits)
    0x95, 0x40,        #   Report Count (64)
    0x81, 0x02,        #   Input (Data, Variable, Absolute)
    0x09, 0x21,        #   Usage (Output Report Data)
    0x15, 0x00,        #   Logical Minimum (0)
    0x26, 0xFF, 0x00,  #   Logical Maximum (255)
    0x75, 0x08,        #   Report Size (8 bits)
    0x95, 0x40,        #   Report Count (64)
    0x91, 0x02,        #   Output (Data, Variable, Absolute)
    0xC0,              # End Collection
])

# CTAPHID (CTAP 2.1, section 11.2).
CTAPHID_MSG, CTAPHID_CBOR, CTAPHID_INIT, CTAPHID_PING = 0x83, 0x90, 0x86, 0x81
CTAPHID_CANCEL, CTAPHID_ERROR, CTAPHID_WINK = 0x91, 0xBF, 0x88
CAPABILITY_WINK, CAPABILITY_CBOR, CAPABILITY_NMSG = 0x01, 0x04, 0x08
BROADCAST_CID = 0xFFFFFFFF
AAGUID = bytes(range(0x10, 0x20))

checked, failures = [], []


def check(condition, what):
    checked.append(what)
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)
    return condition


class Device:
    """The device's side: reads uhid events on a thread of its own and answers CTAPHID."""

    def __init__(self):
        self.fd = os.open("/dev/uhid", os.O_RDWR | os.O_CLOEXEC)
        self.events = []          # (type, read() size) in order
        self.outputs = []         # raw UHID_OUTPUT payloads as the kernel gave them
        self.output_facts = []    # (size field, rtype, read() size)
        self.started = threading.Event()
        self.lock = threading.Lock()
        self.next_cid = 0x01020304
        self.partial = None       # (cid, cmd, total, data) of a request in continuation packets
        self.stop = False
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def create(self):
        event = struct.pack(CREATE2_FORMAT, UHID_CREATE2, NAME, b"touchgate/smoke", UNIQ,
                            len(REPORT_DESCRIPTOR), BUS_USB, VENDOR, PRODUCT, 0x0100, 0,
                            REPORT_DESCRIPTOR)
        written = os.write(self.fd, event)
        check(written == UHID_EVENT_SIZE, "UHID_CREATE2 write() returned %d of %d" % (written, UHID_EVENT_SIZE))
        self.thread.start()

    def destroy(self):
        # A short write: the kernel pads it with zeros.
        written = os.write(self.fd, struct.pack("<I", UHID_DESTROY))
        check(written == 4, "UHID_DESTROY as a 4-byte write() returned %d" % written)
        self.stop = True
        self.thread.join(5)

    def loop(self):
        while not self.stop:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                event = os.read(self.fd, UHID_EVENT_SIZE)
            except OSError as error:
                print("uhid read: %s" % error, flush=True)
                return
            (kind,) = struct.unpack_from("<I", event)
            with self.lock:
                self.events.append((kind, len(event)))
            if kind == UHID_START:
                (flags,) = struct.unpack_from("<Q", event, 4)
                print("event START dev_flags=0x%x (read %d bytes)" % (flags, len(event)), flush=True)
                self.started.set()
            elif kind == UHID_OUTPUT:
                size, rtype = struct.unpack_from("<HB", event, OUTPUT_SIZE)
                data = event[OUTPUT_DATA:OUTPUT_DATA + size]
                with self.lock:
                    self.outputs.append(data)
                    self.output_facts.append((size, rtype, len(event)))
                self.handle_output(data)
            elif kind == UHID_GET_REPORT or kind == UHID_SET_REPORT:
                # Not used by CTAPHID; answered with an error so that no caller waits.
                (request,) = struct.unpack_from("<I", event, 4)
                reply = UHID_GET_REPORT_REPLY if kind == UHID_GET_REPORT else UHID_SET_REPORT_REPLY
                os.write(self.fd, struct.pack("<IIH", reply, request, 5))  # EIO
            else:
                print("event %s (read %d bytes)" % (EVENT_NAMES.get(kind, kind), len(event)), flush=True)

    def send_report(self, report):
        assert len(report) == REPORT_SIZE
        # A short UHID_INPUT2: type, size, then the 64 bytes; no report-ID byte (the
        # descriptor has no report IDs).
        event = struct.pack("<IH", UHID_INPUT2, REPORT_SIZE) + report
        written = os.write(self.fd, event)
        if written != len(event):
            print("UHID_INPUT2 write() returned %d of %d" % (written, len(event)), flush=True)

    def respond(self, cid, cmd, payload):
        # Initialization packet, then continuation packets with sequence numbers 0, 1, ...
        first = struct.pack(">IBH", cid, cmd, len(payload)) + payload[:REPORT_SIZE - 7]
        self.send_report(first.ljust(REPORT_SIZE, b"\0"))
        rest, sequence = payload[REPORT_SIZE - 7:], 0
        while rest:
            packet = struct.pack(">IB", cid, sequence) + rest[:REPORT_SIZE - 5]
            self.send_report(packet.ljust(REPORT_SIZE, b"\0"))
            rest, sequence = rest[REPORT_SIZE - 5:], sequence + 1

    def handle_output(self, data):
        # libfido2 writes 65 bytes to hidraw: a report-ID byte (0) and the 64-byte report;
        # uhid passes them on as they are.
        if len(data) == REPORT_SIZE + 1 and data[0] == 0:
            data = data[1:]
        if len(data) != REPORT_SIZE:
            print("output report of %d bytes ignored" % len(data), flush=True)
            return
        (cid,) = struct.unpack_from(">I", data)
        if data[4] & 0x80:
            cmd, total = data[4], struct.unpack_from(">H", data, 5)[0]
            self.partial = (cid, cmd, total, data[7:7 + total])
        elif self.partial and self.partial[0] == cid:
            pcid, cmd, total, sofar = self.partial
            self.partial = (pcid, cmd, total, sofar + data[5:5 + total - len(sofar)])
        else:
            return
        cid, cmd, total, payload = self.partial
        if len(payload) < total:
            return
        self.partial = None
        print("CTAPHID request cid=%08x cmd=0x%02x bcnt=%d" % (cid, cmd, total), flush=True)
        if cmd == CTAPHID_INIT and total == 8:
            new_cid, self.next_cid = self.next_cid, self.next_cid + 1
            # nonce, channel, protocol 2, device version 1.0.0, capabilities
            body = payload + struct.pack(">IBBBBB", new_cid, 2, 1, 0, 0,
                                         CAPABILITY_WINK | CAPABILITY_CBOR | CAPABILITY_NMSG)
            self.respond(cid, CTAPHID_INIT, body)
        elif cmd == CTAPHID_PING:
            self.respond(cid, CTAPHID_PING, payload)
        elif cmd == CTAPHID_WINK:
            self.respond(cid, CTAPHID_WINK, b"")
        elif cmd == CTAPHID_CBOR and payload[:1] == b"\x04":
            # authenticatorGetInfo: status 0, then {1: ["FIDO_2_0"], 3: aaguid} in CBOR
            info = b"\xa2" + b"\x01\x81\x68FIDO_2_0" + b"\x03\x50" + AAGUID
            self.respond(cid, CTAPHID_CBOR, b"\x00" + info)
        elif cmd == CTAPHID_CBOR:
            self.respond(cid, CTAPHID_CBOR, b"\x01")  # CTAP1_ERR_INVALID_COMMAND
        elif cmd == CTAPHID_CANCEL:
            pass
        else:
            self.respond(cid, CTAPHID_ERROR, b"\x01")  # ERR_INVALID_CMD


def hidraw_for(uniq):
    """/dev/hidrawN of the HID device whose HID_UNIQ is `uniq`, from sysfs."""
    for path in glob.glob("/sys/class/hidraw/hidraw*"):
        try:
            with open(os.path.join(path, "device", "uevent")) as uevent:
                if "HID_UNIQ=" + uniq.decode() in uevent.read().split("\n"):
                    return "/dev/" + os.path.basename(path), open(os.path.join(path, "device", "uevent")).read()
        except OSError:
            continue
    return None, None


def run(argv, timeout=60):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    text = result.stdout.decode(errors="replace")
    print("$ %s  (exit %d)\n%s" % (" ".join(argv), result.returncode, text.rstrip()), flush=True)
    return result.returncode, text


def main():
    if not check(os.path.exists("/dev/uhid"), "/dev/uhid exists"):
        return 1
    stat = os.stat("/dev/uhid")
    print("/dev/uhid: char %d:%d mode %o uid %d" % (os.major(stat.st_rdev), os.minor(stat.st_rdev),
                                                     stat.st_mode & 0o7777, stat.st_uid), flush=True)
    device = Device()
    device.create()
    check(device.started.wait(10), "UHID_START arrived after UHID_CREATE2")

    node = uevent = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        node, uevent = hidraw_for(UNIQ)
        if node and os.path.exists(node):
            break
        time.sleep(0.05)
    if not check(node is not None and os.path.exists(node), "a hidraw node appeared: %s" % node):
        return 1
    print("hid uevent:\n  " + uevent.strip().replace("\n", "\n  "), flush=True)
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    stat = os.stat(node)
    print("%s: char %d:%d mode %o uid %d gid %d" % (node, os.major(stat.st_rdev), os.minor(stat.st_rdev),
                                                    stat.st_mode & 0o7777, stat.st_uid, stat.st_gid), flush=True)

    # What udev made of it: the permissions come from its rules (60-fido-id.rules marks FIDO
    # devices ID_SECURITY_TOKEN=1; 70-uaccess.rules then gives the seat's user access
    # through logind, which the VM has not: root only there).
    run(["udevadm", "info", "--query=property", "--name=" + node])

    status, listing = run(["fido2-token", "-L"])
    check(status == 0 and node in listing and "vendor=0x%04x, product=0x%04x" % (VENDOR, PRODUCT) in listing,
          "fido2-token -L lists %s with vendor=0x%04x product=0x%04x" % (node, VENDOR, PRODUCT))

    status, info = run(["fido2-token", "-I", node])
    check(status == 0 and "proto: 0x02" in info, "fido2-token -I: CTAPHID INIT answered (proto: 0x02)")
    check("FIDO_2_0" in info and AAGUID.hex() in info, "fido2-token -I: GetInfo answered (FIDO_2_0, aaguid)")

    with device.lock:
        facts = list(device.output_facts)
        outputs = list(device.outputs)
        events = [EVENT_NAMES.get(kind, str(kind)) for kind, _ in device.events]
        sizes = sorted({size for _, size in device.events})
    print("events seen: %s" % " ".join(events), flush=True)
    print("read() sizes: %s" % sizes, flush=True)
    if check(bool(facts), "libfido2's writes arrived as UHID_OUTPUT events"):
        size, rtype, got = facts[0]
        print("first UHID_OUTPUT: size field %d, rtype %d (UHID_OUTPUT_REPORT=1), read() %d bytes, data[0:8] %s"
              % (size, rtype, got, outputs[0][:8].hex()), flush=True)
        check(all(f[0] == REPORT_SIZE + 1 and f[1] == 1 for f in facts) and all(o[0] == 0 for o in outputs),
              "every UHID_OUTPUT is 65 bytes, a 0 report-ID byte then the 64-byte report, rtype OUTPUT")

    device.destroy()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(node):
        time.sleep(0.05)
    check(not os.path.exists(node), "%s is gone after UHID_DESTROY" % node)
    os.close(device.fd)
    print("%d passed, %d failed" % (len(checked) - len(failures), len(failures)), flush=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
