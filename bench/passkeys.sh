#!/usr/bin/env bash
# Passkeys benchmark (`BENCH_ONLY=passkeys make bench`, or bench/passkeys.sh BIN_DIR): the
# passkey authenticator's registration and sign-in, whole (python-fido2's Fido2Client over
# `touchgate passkey serve --socket`, the touch played on the virtual_device reader by
# bench/feeder.c, which matches without image processing), and the ceremony beyond the touch
# (makeCredential and getAssertion with a token already made), beside soft-webauthn's software
# authenticator (no touch, no transport) doing the same in the same run. Personal mode.
#
# Environment:
#   BENCH_RUNS=20              ceremonies per figure
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 14. Passkeys")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
runs=${BENCH_RUNS:-20}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
say() { printf 'bench passkeys: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
for tool in gcc python3; do command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install gcc python3"; exit 1; }; done
[ -x "$bin/touchgate" ] || { say "$bin/touchgate is missing: swift build -c release"; exit 1; }

work=$(mktemp -d /tmp/touchgate-passkeys-bench.XXXXXX)
server=""
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  XDG_DATA_HOME=$work/data "$bin/touchgate" lock >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# Two virtual environments: python-fido2 2.x for the client of Touchgate's authenticator, and
# soft-webauthn, which pins python-fido2 below 1.0, in its own.
say "python-fido2 and soft-webauthn, each in a virtual environment of its own"
python3 -m venv "$work/fido2" && "$work/fido2/bin/pip" install -q 'fido2>=2,<3' >&2
python3 -m venv "$work/soft" && "$work/soft/bin/pip" install -q 'soft-webauthn==0.1.4' >&2
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/home/.config TMPDIR=$work/tmp TOUCHGATE_SOCKET=
unset DBUS_SESSION_BUS_ADDRESS FP_VIRTUAL_IMAGE FP_VIRTUAL_DEVICE XDG_RUNTIME_DIR
mkdir -p -m 0700 "$HOME" "$XDG_DATA_HOME" "$TMPDIR"
gcc -O2 -Wall -Wextra -Werror -o "$work/feeder" "$root/bench/feeder.c"
printf 'bench passphrase for passkeys\n' >"$work/passphrase"
say "a vault (minimum Argon2id cost), whorl enrolled"
"$bin/touchgate" init --kdf minimum --passphrase-fd 3 3<"$work/passphrase" >/dev/null
"$work/feeder" device whorl,whorl,whorl,whorl,whorl -- "$bin/touchgate" enroll --finger right-index --yes \
  --passphrase-fd 3 3<"$work/passphrase" >/dev/null 2>&1
socket=$work/passkey.sock
"$work/feeder" device-on-prompt whorl -- "$bin/touchgate" passkey serve --socket "$socket" 2>"$work/serve.log" &
server=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { say "the authenticator did not listen: $(cat "$work/serve.log")"; exit 1; }
say "$runs ceremonies of each kind through Touchgate's authenticator, then through soft-webauthn"
"$work/fido2/bin/python" "$root/bench/passkeys.py" touchgate "$socket" "$runs" >"$work/touchgate.json"
"$work/soft/bin/python" "$root/bench/passkeys.py" soft "$runs" >"$work/soft.json"

section=$work/section.md
python3 - "$work/touchgate.json" "$work/soft.json" "$runs" "$(nproc)" >"$section" <<'PY'
import json, sys, subprocess, datetime
ours, soft = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def cell(f): return f'{f["median"]:.1f} ms ({f["min"]:.1f}–{f["max"]:.1f})'
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print("## 14. Passkeys")
print()
print(f"Measured on its own (`BENCH_ONLY=passkeys make bench`) on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, commit {commit},")
print(f"{sys.argv[3]} ceremonies of each kind, median (min–max), {sys.argv[4]} CPUs, the personal mode (`touchgate passkey serve")
print("--socket` with the store in its own process) on the virtual_device reader, the touch played by bench/feeder.c. Touchgate's")
print("figures are python-fido2 2.x's own calls over the socket; soft-webauthn's SoftWebauthnDevice is a software")
print("authenticator in the client's process (no user verification, no transport, no audit), the floor of a ceremony's cost.")
print()
print("| ceremony | Touchgate (touch included) | Touchgate beyond the touch | soft-webauthn |")
print("| --- | --- | --- | --- |")
print(f"| registration (ES256, discoverable) | {cell(ours['register'])} | {cell(ours['make-beyond-touch'])} | {cell(soft['register'])} |")
print(f"| sign-in | {cell(ours['sign-in'])} | {cell(ours['assert-beyond-touch'])} | {cell(soft['sign-in'])} |")
print(f"| the user verification alone (key agreement, touch, token) | {cell(ours['uv-token'])} | | |")
print()
print("\"Beyond the touch\" is makeCredential or getAssertion sent with a pinUvAuthToken already made: the vault's write")
print("(sealed item and audit record in one transaction) or its read and signature, and the CTAP round trip. The")
print("whole ceremony adds Fido2Client's getInfo and key agreement, and the verification (the reader opened, the")
print("virtual finger matched, the attempt recorded). No TPM operation is made for either. A sign-in without an allow list")
print("signs every discoverable account of the site (up to 16), as CTAP asks: the n-th whole sign-in signs n, and each")
print("sign-in beyond the touch, made after every registration, signs 16, which is why it takes longer than most whole ones.")
PY
cat "$section"
replace_section 14 "$section" "$output"
say "wrote section 14 of $output"
