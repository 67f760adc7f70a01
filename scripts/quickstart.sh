#!/usr/bin/env bash
# Touchgate quick start: sets up the machine, builds touchgate, then enrolls a finger,
# verifies it, creates a vault and releases a secret with the finger.
#
# With a real reader plugged in (and no FP_DRIVERS_WHITELIST set) you touch the reader
# yourself. Without one, libfprint's virtual_image reader is used and the NIST prints in
# ../shared/fixtures play the finger: whorl is enrolled, whorl matches, arch does not.
#
# The demo keeps its data in a temporary directory, so it never touches your own store.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

echo "== building (debug: about half the time of a release build; \`make\` builds the one you install)" >&2
# touchgate is a small front that runs touchgate-cli (or, through touchgated,
# touchgate-client), built beside it, for most commands. A demo waits on the finger, not
# on the code: a debug build from nothing takes 165 CPU seconds here, a release one 395.
swift build --product touchgate-cli >&2
swift build --product touchgate-client >&2
swift build --product touchgate >&2
swift build --product virtual-finger >&2
bin=$(swift build --show-bin-path)
touchgate="$bin/touchgate"

demo=$(mktemp -d -t touchgate-demo-XXXXXX)
# Leave nothing behind: the vault locked, the agent stopped, the data gone from the disk.
trap '"$touchgate" lock >/dev/null 2>&1 || true; [ -z "${TOUCHGATE_AGENT_PID:-}" ] || kill "$TOUCHGATE_AGENT_PID" 2>/dev/null; rm -rf "$demo"' EXIT
export XDG_DATA_HOME="$demo/data"
# The demo's own session directory, where its agent listens (never your own agent's).
export XDG_RUNTIME_DIR="$demo/run"
mkdir -m 0700 "$XDG_RUNTIME_DIR"

real_reader=""
if [ -z "${FP_DRIVERS_WHITELIST:-}" ] && "$touchgate" devices --json 2>/dev/null | grep -q '"driver"'; then
  real_reader=yes
fi

step() { printf '\n== %s\n' "$*" >&2; }

if [ -z "$real_reader" ]; then
  # libfprint's virtual reader, in the agent: it listens on this socket for the finger's prints.
  export FP_DRIVERS_WHITELIST=virtual_image FP_VIRTUAL_IMAGE="$demo/virtual-image.socket"
fi
# As the packages set up personal mode: touchgate agent keeps the store open and the unlocked
# key in its own memory, and every command below goes to it (`touchgate status` says so).
step "start touchgate agent (what your session's systemd, or your first command, starts)"
eval "$("$touchgate" agent --launch)"

if [ -n "$real_reader" ]; then
  step "reader found"; "$touchgate" devices
  step "enroll your right index finger"; "$touchgate" enroll --finger right-index
  step "verify: touch the reader with the same finger"; "$touchgate" verify
else
  echo "No fingerprint reader found: using libfprint's virtual reader with the NIST prints." >&2
  # finger PRINT COMMAND...: the virtual finger presents PRINT each time the agent's reader
  # waits while COMMAND runs.
  finger() {
    local print=$1 status=0 watcher
    shift
    rm -f "$demo/finger.log"
    "$bin/virtual-finger" --watch --socket "$FP_VIRTUAL_IMAGE" --print "$print" 2>"$demo/finger.log" &
    watcher=$!
    # It answers only waits announced after it started: wait for its first line (at most 10 s).
    for _ in $(seq 100); do grep -q presenting "$demo/finger.log" 2>/dev/null && break; sleep 0.1; done
    "$@" || status=$?
    kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null || true
    return "$status"
  }
  step "enroll: the virtual finger presents the whorl print five times"
  finger whorl "$touchgate" enroll --finger right-index
  step "verify with whorl (expect: match)"
  finger whorl "$touchgate" verify
  step "verify with arch (expect: no match, exit 1)"
  if finger arch "$touchgate" verify; then echo "unexpected match" >&2; exit 1; fi
fi

# The secrets workflow: a vault, a secret guarded by the enrolled finger set, released by a touch.
if [ -n "$real_reader" ]; then
  step "create the vault: choose a passphrase (asked twice); it is left unlocked"; "$touchgate" init
  step "store a demo secret that only your enrolled fingers can release"
  printf 'demo-token-%s\n' "$RANDOM" | "$touchgate" secret add demo-token --policy biometry-current-set
  step "release it: touch the reader"; "$touchgate" secret get demo-token
else
  # A fixed demo passphrase, passed on a pipe (never argv); a real setup types it at the prompt.
  passphrase() { printf '%s\n' "correct horse battery staple"; }
  step "create the vault (Argon2id, MODERATE limits: about a second); it is left unlocked"
  "$touchgate" init --passphrase-fd 3 3< <(passphrase)
  step "store a secret that only the enrolled finger set can release, with a touch every time"
  printf 'ghp_demo_%s\n' "$RANDOM$RANDOM" | "$touchgate" secret add demo-token --policy biometry-current-set --fresh
  step "release it with the whorl finger: the value alone goes to standard output"
  value=$(finger whorl "$touchgate" secret get demo-token)
  echo "secret get printed: $value" >&2
  step "the arch finger is refused (exit 1)"
  if finger arch "$touchgate" secret get demo-token; then
    echo "unexpected release" >&2; exit 1
  fi
  step "status and the audit trail"
  "$touchgate" status
  "$touchgate" audit verify
fi
step "done"
