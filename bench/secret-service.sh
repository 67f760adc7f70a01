#!/usr/bin/env bash
# Secret Service benchmark (`BENCH_ONLY=secret-service make bench`, or bench/secret-service.sh
# BIN_DIR): `secret-tool lookup` of one item served by touchgate agent --secret-service beside
# the same lookup served by gnome-keyring-daemon, each on a private session bus of its own, in
# the same run. Touchgate's lookup is inside the reuse window and secret-tool already approved
# (one touch before the timed runs), so no touch is timed; gnome-keyring's login keyring is
# unlocked. libsecret opens a dh-ietf1024-sha256-aes128-cbc-pkcs7 session with both.
#
# Environment:
#   BENCH_PAIRS=100            turns (one lookup of each per turn)
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 10. Secret Service")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
pairs=${BENCH_PAIRS:-100}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
say() { printf 'bench secret service: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
for tool in secret-tool gnome-keyring-daemon dbus-daemon gdbus gcc python3; do
  command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install libsecret-tools gnome-keyring dbus-daemon libglib2.0-bin gcc"; exit 1; }
done
[ -x "$bin/touchgate" ] || { say "$bin/touchgate is missing: swift build -c release"; exit 1; }

work=$(mktemp -d /tmp/touchgate-secret-service-bench.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_RUNTIME_DIR=$work/run TMPDIR=$work/tmp
mkdir -p -m 0700 "$HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$TMPDIR"
unset FP_VIRTUAL_IMAGE FP_VIRTUAL_DEVICE GNOME_KEYRING_CONTROL DISPLAY WAYLAND_DISPLAY
gcc -O2 -Wall -Wextra -Werror -o "$work/feeder" "$root/bench/feeder.c"

# private_bus NAME: a session bus at $work/NAME.bus that starts nothing by activation.
private_bus() {
  cat >"$work/$1.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$work/$1.bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
CONF
  dbus-daemon --config-file="$work/$1.conf" --nofork >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -S "$work/$1.bus" ] && return; sleep 0.05; done
  say "the $1 bus did not start"; exit 1
}
private_bus keyring
private_bus touchgate
keyring_bus=unix:path=$work/keyring.bus
touchgate_bus=unix:path=$work/touchgate.bus

say "gnome-keyring-daemon, its login keyring unlocked"
mkdir -p -m 0700 "$work/keyring-home"
printf %s 'bench keyring password' | env HOME="$work/keyring-home" XDG_DATA_HOME="$work/keyring-home/data" \
  XDG_RUNTIME_DIR="$work/keyring-home" DBUS_SESSION_BUS_ADDRESS="$keyring_bus" \
  DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/no-system-bus" \
  gnome-keyring-daemon --unlock --components=secrets --foreground >/dev/null 2>&1 &
pids+=($!)
gdbus wait --address "$keyring_bus" -t 10 org.freedesktop.secrets
printf %s 'bench secret value' | DBUS_SESSION_BUS_ADDRESS=$keyring_bus secret-tool store --label=Bench service bench user me

say "touchgate agent --secret-service, a vault with whorl enrolled"
printf 'bench passphrase for secret service\n' | "$bin/touchgate" init --kdf minimum --passphrase-fd 0 >/dev/null 2>&1
printf 'bench passphrase for secret service\n' | "$work/feeder" device whorl,whorl,whorl,whorl,whorl -- \
  "$bin/touchgate" enroll --json --finger right-index --passphrase-fd 0 >/dev/null 2>&1
DBUS_SESSION_BUS_ADDRESS=$touchgate_bus "$work/feeder" device-on-prompt whorl -- "$bin/touchgate" agent --json \
  --secret-service >/dev/null 2>"$work/agent.log" &
pids+=($!)
gdbus wait --address "$touchgate_bus" -t 10 org.freedesktop.secrets
printf %s 'bench secret value' | DBUS_SESSION_BUS_ADDRESS=$touchgate_bus secret-tool store --label=Bench service bench user me
# One touch approves secret-tool and opens the reuse window.
[ "$(DBUS_SESSION_BUS_ADDRESS=$touchgate_bus secret-tool lookup service bench user me)" = "bench secret value" ] \
  || { say "the first lookup through touchgate failed:"; cat "$work/agent.log" >&2; exit 1; }
[ "$(DBUS_SESSION_BUS_ADDRESS=$keyring_bus secret-tool lookup service bench user me)" = "bench secret value" ] \
  || { say "the lookup through gnome-keyring failed"; exit 1; }

say "secret-tool lookup, $pairs turns"
read -r ours ours_low ours_high theirs theirs_low theirs_high < <(python3 "$root/bench/paired.py" "$pairs" \
  "DBUS_SESSION_BUS_ADDRESS=$touchgate_bus secret-tool lookup service bench user me" \
  "DBUS_SESSION_BUS_ADDRESS=$keyring_bus secret-tool lookup service bench user me") \
  || { say "a lookup failed"; cat "$work/agent.log" >&2; exit 1; }
say "call by call, on one connection"
read -r _ c_open c_getall c_search c_get < <(DBUS_SESSION_BUS_ADDRESS=$touchgate_bus /usr/bin/python3 "$root/bench/secret-service-calls.py" touchgate)
read -r _ k_open k_getall k_search k_get < <(DBUS_SESSION_BUS_ADDRESS=$keyring_bus /usr/bin/python3 "$root/bench/secret-service-calls.py" gnome-keyring)
ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f×", a / b }')

section=$work/section
{
  echo "## 10. Secret Service"
  echo
  echo "Measured with \`BENCH_ONLY=secret-service make bench\` on $(date -u '+%Y-%m-%d %H:%M') UTC, commit" \
    "\`$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\`, binaries from \`${bin#"$root"/}\`;" \
    "gnome-keyring $(dpkg-query -W -f='${Version}' gnome-keyring 2>/dev/null || echo '?'), libsecret" \
    "$(dpkg-query -W -f='${Version}' libsecret-1-0 2>/dev/null || echo '?'). Median (range) of whole" \
    "\`secret-tool lookup\` runs from the shell, each provider on a private session bus of its own, $pairs turns of" \
    "one run each. Touchgate's lookup is inside the reuse window, secret-tool already approved by a touch."
  echo
  echo "| measure | touchgate agent --secret-service | gnome-keyring-daemon | ratio | target |"
  echo "| --- | --- | --- | --- | --- |"
  echo "| \`secret-tool lookup\` | $ours ms ($ours_low–$ours_high) | $theirs ms ($theirs_low–$theirs_high) | $ratio | ≤ 1.0× |"
  echo
  echo "| one call, on one connection (median of 50, ms) | touchgate | gnome-keyring |"
  echo "| --- | --- | --- |"
  echo "| OpenSession (dh-ietf1024-sha256-aes128-cbc-pkcs7) | $c_open | $k_open |"
  echo "| GetAll of the service's properties | $c_getall | $k_getall |"
  echo "| SearchItems | $c_search | $k_search |"
  echo "| GetSecrets, inside the reuse window | $c_get | $k_get |"
  echo
  echo "A lookup is libsecret's GetAll, OpenSession, SearchItems and GetSecrets on a new connection. Where Touchgate's" \
    "time goes beyond gnome-keyring's: the program is identified from the bus and /proc on its first call, and the" \
    "release is a decision of the item's policy in the service, written to the audit trail and synced before the" \
    "value leaves (gnome-keyring keeps no trail). The listing a client's calls need is kept for a second, the" \
    "Diffie-Hellman exchange is GMP's with a 256-bit exponent (BigInt's pure Swift had made a lookup four times" \
    "gnome-keyring's). Since issue 45 a new connection's program is also checked to hold its connection alone" \
    "(the bus's names for its pid, the peers of its sockets, every process of the user for one sharing them), which" \
    "a process that connected, forked and exec'd an approved program fails: about 2 ms of each lookup, found out" \
    "beside the first calls, which is what puts the lookup over gnome-keyring's (0.98x before it)."
  echo
} >"$section"
replace_section 10 "$section" "$output"
cat "$section"
