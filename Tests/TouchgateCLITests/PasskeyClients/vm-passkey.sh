#!/bin/bash
# Runs as root inside scripts/vm.sh's guest (Debian's kernel, with /dev/uhid): the passkey
# authenticator as a real USB FIDO device, driven by libfido2's own tools.
#   vm-passkey.sh BIN_DIR FIXTURES RULES_FILE
# As a user of its own (uid 4242), with the project's udev rule installed: a vault with the
# whorl print enrolled on libfprint's virtual reader, `touchgate passkey serve --uhid`, then
# fido2-token -L and -I, fido2-cred -M (resident, user verification), fido2-assert -G -t
# uv=true with the finger played by virtual-finger, then a sign-in again through the device
# `touchgate agent --passkeys` makes (a stranger's finger is refused in
# PasskeyTests, through libfido2 and python-fido2 on the socket). Prints
# "check NAME ok|FAILED ..." lines and exits 1 if any failed.
set -uo pipefail
bin=$1 fixtures=$2 rules=$3
source "$(dirname "$0")/vm-tester.sh"
# The authenticator, started anew for each finger: libfprint's virtual_image reader keeps an
# image that arrives after its wait for the next one, which would be the next step's finger.
serve() {
  pkill -u tester -f "passkey serve" 2>/dev/null
  for _ in $(seq 100); do ls /dev/hidraw* >/dev/null 2>&1 || break; sleep 0.1; done
  as_tester "$bin/touchgate" passkey serve --uhid >>"$work/serve.log" 2>&1 &
  for _ in $(seq 300); do ls /dev/hidraw* >/dev/null 2>&1 && break; sleep 0.1; done
  udevadm settle
  node=$(ls /dev/hidraw* 2>/dev/null | head -1)
}
serve
check device test -n "$node"
echo "node $node: $(stat -c '%U %a' "$node" 2>&1)"
check owner-only test "$(stat -c '%U %a' "$node")" = "tester 600"
check no-seat-mark sh -c "! udevadm info '$node' | grep -q 'ID_SECURITY_TOKEN=1'"

listed=$(as_tester fido2-token -L 2>&1); echo "fido2-token -L: $listed"
check token-listed sh -c "echo '$listed' | grep -q 'vendor=0x1209, product=0x7467'"
info=$(as_tester fido2-token -I "$node" 2>&1); echo "$info" | sed 's/^/fido2-token -I: /'
check token-info sh -c "echo \"\$0\" | grep -q FIDO_2_1 && echo \"\$0\" | grep -q 'uv' && echo \"\$0\" | grep -q 'es256'" "$info"

head -c 32 /dev/urandom | base64 >"$work/cred.in"
{ echo example.org; echo alice; head -c 16 /dev/urandom | base64; } >>"$work/cred.in"
chown tester "$work/cred.in"
finger whorl
check cred-made as_tester fido2-cred -M -r -v -i "$work/cred.in" -o "$work/cred.out" "$node" es256
sed 's/^/fido2-cred: /' "$work/cred.out" 2>/dev/null | head -5
credential=$(sed -n 5p "$work/cred.out")
{ head -c 32 /dev/urandom | base64; echo example.org; echo "$credential"; } >"$work/assert.in"
chown tester "$work/assert.in"
finger whorl
check assert-uv as_tester fido2-assert -G -t uv=true -i "$work/assert.in" -o "$work/assert.out" "$node"
# The authenticator data as fido2-assert prints it: CBOR-wrapped (0x58 0x25), so the flags are at 34.
flags=$(sed -n 3p "$work/assert.out" 2>/dev/null | base64 -d 2>/dev/null | od -An -tu1 -j34 -N1 | tr -d ' ')
echo "assertion flags: ${flags:-none}"
check assert-flags-up-uv test "$(( ${flags:-0} & 5 ))" = 5
trail=$(as_tester "$bin/touchgate" audit show 2>&1)
check trail-sign-in sh -c "echo \"\$0\" | grep -q 'passkey sign-in at example.org as alice (user verified)'" "$trail"
pkill -u tester -f "passkey serve" 2>/dev/null
# SIGTERM ends the authenticator, and its device with it, within seconds.
stopped() { ! pgrep -u tester -f "passkey serve" >/dev/null && ! ls /dev/hidraw* >/dev/null 2>&1; }
for _ in $(seq 100); do stopped && break; sleep 0.1; done
check serve-stops stopped

# touchgate agent --passkeys: the agent that hosts the personal store makes the device itself.
as_tester "$bin/touchgate-cli" agent --passkeys --socket "$work/run/agent.ssh" >"$work/agent.log" 2>&1 &
for _ in $(seq 300); do ls /dev/hidraw* >/dev/null 2>&1 && break; sleep 0.1; done
udevadm settle
node=$(ls /dev/hidraw* 2>/dev/null | head -1)
check agent-device test -n "$node"
{ head -c 32 /dev/urandom | base64; echo example.org; echo "$credential"; } >"$work/assert2.in"
chown tester "$work/assert2.in"
finger whorl
check agent-assert-uv as_tester fido2-assert -G -t uv=true -i "$work/assert2.in" -o "$work/assert2.out" "$node"
trail=$(as_tester "$bin/touchgate" audit show 2>&1)
check agent-trail-sign-in test "$(echo "$trail" | grep -c 'passkey sign-in at example.org as alice (user verified)')" = 2
pkill -u tester -f "agent --passkeys" 2>/dev/null
[ "$failed" = 0 ] || { echo "--- serve.log"; tail -20 "$work/serve.log"; echo "--- agent.log"; tail -10 "$work/agent.log" 2>/dev/null; echo "--- finger.log"; tail -5 "$work/finger.log"
  echo "--- trail"; echo "$trail" | tail -8; }
exit "$failed"
