#!/bin/bash
# Runs as root inside scripts/vm.sh's guest (an image with chromium, chromium-driver and
# python3-selenium): Debian's Chromium registers and signs in on a local page with the
# passkey device `touchgate passkey serve --uhid` makes, as a user of its own (uid 4242)
# with the project's udev rule, the finger played on the virtual reader.
#   vm-passkey-chromium.sh BIN_DIR FIXTURES RULES_FILE
# Prints "check NAME ok|FAILED ..." lines and exits 1 if any failed.
set -uo pipefail
bin=$1 fixtures=$2 rules=$3
clients=$(cd "$(dirname "$0")" && pwd)
source "$clients/vm-tester.sh"
runuser -u tester -- mkdir -p -m 0700 "$work/page"
as_tester "$bin/touchgate-cli" passkey serve --uhid >"$work/serve.log" 2>&1 &
for _ in $(seq 300); do ls /dev/hidraw* >/dev/null 2>&1 && break; sleep 0.1; done
udevadm settle
check device sh -c "ls /dev/hidraw* >/dev/null 2>&1"

cp "$clients/webauthn.html" "$work/page/index.html"
chown tester "$work/page/index.html"
as_tester python3 -m http.server 8000 --bind 127.0.0.1 --directory "$work/page" >"$work/http.log" 2>&1 &
for _ in $(seq 100); do python3 -c 'import urllib.request; urllib.request.urlopen("http://localhost:8000/")' 2>/dev/null && break; sleep 0.2; done

started=$SECONDS
output=$(as_tester python3 "$clients/chromium_webauthn.py" http://localhost:8000/ 2>"$work/chromium.log")
echo "chromium ($((SECONDS - started)) s):"; echo "$output"
registered=$(echo "$output" | grep '"ceremony": "register"')
signed=$(echo "$output" | grep '"ceremony": "sign-in"')
# Flags: UP (1) and UV (4); a registration also carries AT (0x40).
check chromium-registered sh -c "echo '$registered' | python3 -c 'import json,sys; d=json.load(sys.stdin)[\"ok\"]; sys.exit(0 if d[\"type\"]==\"webauthn.create\" and d[\"flags\"]&0x45==0x45 else 1)'"
check chromium-signed-in sh -c "echo '$signed' | python3 -c 'import json,sys; d=json.load(sys.stdin)[\"ok\"]; sys.exit(0 if d[\"type\"]==\"webauthn.get\" and d[\"flags\"]&5==5 and d[\"verified\"] is True else 1)'"
trail=$(as_tester "$bin/touchgate-cli" audit show 2>&1)
check trail-made sh -c "echo \"\$0\" | grep -q 'passkey made for localhost as alice'" "$trail"
check trail-sign-in sh -c "echo \"\$0\" | grep -q 'passkey sign-in at localhost as alice (user verified)'" "$trail"
[ "$failed" = 0 ] || { echo "--- serve.log"; tail -20 "$work/serve.log"; echo "--- finger.log"; tail -5 "$work/finger.log"
  echo "--- chromium.log (fido)"; tail -40 "$work/chromium.log"; echo "--- trail"; echo "$trail" | tail -6; }
exit "$failed"
