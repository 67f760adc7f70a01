#!/usr/bin/env bash
# Touchgate quick start: sets up the machine, builds touchgate, then enrolls a finger,
# verifies it and unlocks a secret with it.
#
# With a real reader plugged in (and no FP_DRIVERS_WHITELIST set) you touch the reader
# yourself. Without one, libfprint's virtual_image reader is used and the NIST prints in
# ../shared/fixtures play the finger: whorl is enrolled, whorl matches, arch does not.
#
# The demo keeps its data in a temporary directory, so it never touches your own store.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

echo "== building (release)" >&2
swift build -c release --product touchgate >&2
swift build -c release --product virtual-finger >&2
bin=$(swift build -c release --show-bin-path)
touchgate="$bin/touchgate"

demo=$(mktemp -d -t touchgate-demo-XXXXXX)
trap 'rm -rf "$demo"' EXIT
export XDG_DATA_HOME="$demo/data"

real_reader=""
if [ -z "${FP_DRIVERS_WHITELIST:-}" ] && "$touchgate" devices --json 2>/dev/null | grep -q '"driver"'; then
  real_reader=yes
fi

step() { printf '\n== %s\n' "$*" >&2; }

if [ -n "$real_reader" ]; then
  step "reader found"; "$touchgate" devices
  step "enroll your right index finger"; "$touchgate" enroll --finger right-index
  step "verify: touch the reader with the same finger"; "$touchgate" verify
else
  echo "No fingerprint reader found: using libfprint's virtual reader with the NIST prints." >&2
  finger() { "$bin/virtual-finger" "$@"; }
  step "enroll: the virtual finger presents the whorl print five times"
  finger --print whorl -- "$touchgate" enroll --finger right-index
  step "verify with whorl (expect: match)"
  finger --print whorl -- "$touchgate" verify
  step "verify with arch (expect: no match, exit 1)"
  if finger --print arch -- "$touchgate" verify; then echo "unexpected match" >&2; exit 1; fi
fi
# SECRETS-DEMO
step "done"
