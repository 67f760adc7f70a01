# Sourced by vm-passkey.sh and vm-passkey-chromium.sh (as root in scripts/vm.sh's guest, with
# bin, fixtures and rules set): `check`, the project's udev rule, a user of its own (tester,
# uid 4242) given /dev/uhid as the README says to (no acl tools in the guest), `as_tester`,
# `finger PRINT` (virtual-finger presenting it at each wait of the reader), and a vault with
# whorl enrolled as right-index (checks init and enroll).
failed=0
check() { local name=$1; shift; if "$@"; then echo "check $name ok"; else echo "check $name FAILED"; failed=1; fi; }

cp "$rules" /etc/udev/rules.d/69-touchgate-passkey.rules
udevadm control --reload-rules
useradd -u 4242 -m -s /bin/bash tester
chown tester /dev/uhid
work=/home/tester/work
runuser -u tester -- mkdir -p -m 0700 "$work" "$work/run"
as_tester() {
  runuser -u tester -- env HOME=/home/tester XDG_DATA_HOME="$work/data" XDG_RUNTIME_DIR="$work/run" TOUCHGATE_SOCKET= \
    FP_DRIVERS_WHITELIST=virtual_image FP_VIRTUAL_IMAGE="$work/vi.sock" TOUCHGATE_FIXTURES="$fixtures" "$@"
}
finger() {
  pkill -u tester -f virtual-finger 2>/dev/null; sleep 0.3
  rm -f "$work/finger.log"
  as_tester "$bin/virtual-finger" --watch --socket "$work/vi.sock" --print "$1" 2>"$work/finger.log" &
  for _ in $(seq 300); do grep -q presenting "$work/finger.log" 2>/dev/null && break; sleep 0.1; done
}

printf 'correct horse battery staple\n' >"$work/passphrase"
chown tester "$work/passphrase"
check init sh -c "runuser -u tester -- env HOME=/home/tester XDG_DATA_HOME='$work/data' XDG_RUNTIME_DIR='$work/run' TOUCHGATE_SOCKET= '$bin/touchgate-cli' init --kdf minimum --passphrase-fd 3 3<'$work/passphrase' >'$work/init.log' 2>&1 || { cat '$work/init.log'; false; }"
finger whorl
check enroll sh -c "runuser -u tester -- env HOME=/home/tester XDG_DATA_HOME='$work/data' XDG_RUNTIME_DIR='$work/run' TOUCHGATE_SOCKET= FP_DRIVERS_WHITELIST=virtual_image FP_VIRTUAL_IMAGE='$work/vi.sock' '$bin/touchgate-cli' enroll --finger right-index --yes --passphrase-fd 3 3<'$work/passphrase' >'$work/enroll.log' 2>&1 || { tail -3 '$work/enroll.log'; false; }"
