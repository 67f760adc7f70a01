#!/usr/bin/env bash
# Touchgate's benchmark suite (`make bench`): what Touchgate adds on top of libfprint, how
# identify grows with the number of enrolled prints, the vault and audit costs, start-up
# and memory, and the system daemon (touchgated). Prints a Markdown report and writes it to BENCHMARKS.md.
#
# Runs on Debian 12 after scripts/setup.sh; installs what else it needs (gcc, GNU time,
# gnupg and pass for the comparison) with apt-get, through sudo when not root. Everything
# it creates lives in a private temporary HOME / XDG_DATA_HOME / GNUPGHOME, removed at the
# end; the vault keys it puts in the kernel keyring are removed with `touchgate lock`.
# Section 7 runs as root: it starts touchgated, runs synthetic uids with setpriv, and makes two
# users (useradd; removed at the end) for the victim and the attacker of its attack figures.
#
# Environment (for development; the published figures use the defaults):
#   BENCH_RUNS=5                   timed runs per figure (at least 5)
#   BENCH_GALLERIES="1 10 100 1000" gallery sizes for identify
#   BENCH_GALLERY_PRINTS="loop-right tented_arch arch"  prints whose templates fill the galleries
#   BENCH_PROBE=whorl              the print presented to identify (must match none of them)
#   BENCH_AUDIT_RECORDS=100000     records in the log that `audit verify` checks
#   BENCH_OUTPUT=BENCHMARKS.md     where the report goes
#   BENCH_ONLY=daemon              only section 7 (touchgated), replacing that section of BENCH_OUTPUT
#   BENCH_STATIC_STDLIB=--static-swift-stdlib  how the binaries are linked (empty: dynamically, as `make` does)
#   BENCH_ONLY=fleet               only section 8 (fleet collection on PostgreSQL, bench/fleet.sh), likewise
#   BENCH_ONLY=ssh                 only section 9 (touchgate agent beside OpenSSH's ssh-agent, bench/ssh.sh), likewise
#   BENCH_ONLY=secret-service      only section 10 (the Secret Service beside gnome-keyring, bench/secret-service.sh), likewise
#   BENCH_ONLY=tpm                 only section 11 (unlock of a TPM-bound vault beside an unbound one, bench/tpm.sh), likewise
#   BENCH_ONLY=agent               only section 12 (touchgate run beside secret exec and the command alone, bench/agent.sh), likewise
#   BENCH_ONLY=passkeys            only section 14 (passkey ceremonies beside soft-webauthn, bench/passkeys.sh), likewise
#   BENCH_ONLY=install             only section 13 (each package's installed size beside fprintd's and gnome-keyring's, bench/install.sh)
#   TOUCHGATE_FIXTURES             the NIST prints (default ../shared/fixtures)
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${BENCH_RUNS:-5}
galleries=${BENCH_GALLERIES:-"1 10 100 1000"}
gallery_prints=${BENCH_GALLERY_PRINTS:-"loop-right tented_arch arch"}
probe=${BENCH_PROBE:-whorl}
audit_records=${BENCH_AUDIT_RECORDS:-100000}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
fixtures=${TOUCHGATE_FIXTURES:-$root/../shared/fixtures}
prints=$fixtures/prints

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

((runs >= 5)) || die "BENCH_RUNS must be at least 5 (each figure is a median of at least 5 runs)"
[ -f "$prints/whorl.pgm" ] || die "NIST prints not found in $prints: check out shared/ beside the project or set TOUCHGATE_FIXTURES"

# --- tools ---------------------------------------------------------------------------

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
apt_install() {
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

needed=()
for package in gcc libc6-dev pkg-config libfprint-2-dev time hyperfine strace python3; do
  installed "$package" || needed+=("$package")
done
optional=()
for package in gnupg pass; do
  installed "$package" || optional+=("$package")
done
if ((${#needed[@]} + ${#optional[@]})); then
  say "installing ${needed[*]} ${optional[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || true
  ((${#needed[@]} == 0)) || apt_install "${needed[@]}" || die "cannot install ${needed[*]}"
  ((${#optional[@]} == 0)) || apt_install "${optional[@]}" || say "cannot install ${optional[*]}: the pass comparison is skipped"
fi
pass_missing=""
for tool in gpg gpg-agent gpgconf pass; do
  command -v "$tool" >/dev/null || pass_missing+="${pass_missing:+, }$tool"
done
preset=/usr/lib/gnupg/gpg-preset-passphrase
[ -x "$preset" ] || pass_missing+="${pass_missing:+, }gpg-preset-passphrase"

if ! command -v swift >/dev/null 2>&1; then
  for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    [ -x "$candidate/swift" ] && export PATH="$candidate:$PATH" && break
  done
fi
command -v swift >/dev/null 2>&1 || die "no Swift toolchain on PATH: run scripts/setup.sh first"

# --- build ---------------------------------------------------------------------------

# The installed size needs the packages, not this build: `make deb` makes its own.
if [ "${BENCH_ONLY:-}" = install ]; then exec "$root/bench/install.sh"; fi
say "building (release)"
# Statically by default: what a statically linked release would give (`make` still links dynamically).
static_stdlib=${BENCH_STATIC_STDLIB---static-swift-stdlib}
# shellcheck disable=SC2086  # empty or one word
(cd "$root" && swift build -c release $static_stdlib >&2)
bin=$(cd "$root" && swift build -c release --show-bin-path)
touchgate=$bin/touchgate
helper=$bin/touchgate-bench
if [ "${BENCH_ONLY:-}" = fleet ]; then exec "$root/bench/fleet.sh" "$bin"; fi
if [ "${BENCH_ONLY:-}" = ssh ]; then exec "$root/bench/ssh.sh" "$bin"; fi
if [ "${BENCH_ONLY:-}" = secret-service ]; then exec "$root/bench/secret-service.sh" "$bin"; fi
if [ "${BENCH_ONLY:-}" = tpm ]; then exec "$root/bench/tpm.sh" "$bin"; fi
if [ "${BENCH_ONLY:-}" = agent ]; then exec "$root/bench/agent.sh" "$bin"; fi
if [ "${BENCH_ONLY:-}" = passkeys ]; then exec "$root/bench/passkeys.sh" "$bin"; fi
virtual_finger=$bin/virtual-finger
export TOUCHGATE_FIXTURES=$fixtures

work=$(mktemp -d /tmp/touchgate-bench.XXXXXX)
# The programs laid out as the packages install them (make install's layout): the front in bin,
# touchgate-cli in libexec/touchgate with touchgate-client a name of it, touchgated a name of it
# in libexec. Every figure is of these, what people run, not of the build's separate targets.
installed=$work/installed
mkdir -p "$installed/bin" "$installed/libexec/touchgate"
cp "$bin/touchgate" "$installed/bin/touchgate"
cp "$bin/touchgate-cli" "$installed/libexec/touchgate/touchgate-cli"
ln -s touchgate-cli "$installed/libexec/touchgate/touchgate-client"
ln -s touchgate/touchgate-cli "$installed/libexec/touchgated"
touchgate=$installed/bin/touchgate
cli=$installed/libexec/touchgate/touchgate-cli
client=$installed/libexec/touchgate/touchgate-client
vaults=()
attackers=()    # the attacker programs of section 7, each the leader of its process group
seat_pids=()    # section 7's private bus and logind stand-in
bench_users=()  # the users section 7 makes
cleanup() {
  local status=$? pid user
  [ -z "${daemon_pid:-}" ] || { kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; } || true
  [ -z "${agent_pid:-}" ] || { kill "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null; } || true
  for pid in "${attackers[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  for pid in "${seat_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for user in "${bench_users[@]}"; do userdel "$user" >/dev/null 2>&1 || true; done
  [ -z "${public:-}" ] || rm -rf "$public"
  for data in "${vaults[@]}"; do
    XDG_DATA_HOME=$data "$touchgate" lock >/dev/null 2>&1 || true
  done
  if [ -n "${GNUPGHOME:-}" ] && command -v gpgconf >/dev/null; then gpgconf --kill all 2>/dev/null || true; fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cflags=(-O2 -Wall -Wextra -Werror)
gcc "${cflags[@]}" -o "$work/feeder" "$root/bench/feeder.c"
# shellcheck disable=SC2046  # pkg-config prints several words on purpose
gcc "${cflags[@]}" -o "$work/reference" "$root/bench/reference.c" $(pkg-config --cflags --libs libfprint-2)
feeder=$work/feeder
reference=$work/reference

# A private world: nothing below reads or writes the user's own data.
export HOME=$work/home XDG_CONFIG_HOME=$work/home/.config XDG_CACHE_HOME=$work/home/.cache
export XDG_DATA_HOME=$work/unused TMPDIR=$work/tmp
export GNUPGHOME=$work/gnupg PASSWORD_STORE_DIR=$work/password-store
unset FP_VIRTUAL_IMAGE FP_VIRTUAL_DEVICE FP_VIRTUAL_DEVICE_STORAGE FP_DEVICE_EMULATION
mkdir -p -m 0700 "$HOME" "$TMPDIR" "$GNUPGHOME"
log=$work/log
samples=$work/samples
mkdir -p "$samples"

# --- measuring -----------------------------------------------------------------------

# The script's variables and functions, for the shells hyperfine starts: each sources this
# file first (BASH_ENV), and so does the empty command hyperfine times to subtract the
# shell's own start. Read-only and bash's own variables are left out.
snapshot_shell() {
  {
    declare -p | grep -Ev '^declare -[a-zA-Z]*r' |
      grep -Ev '^declare -[-a-zA-Z]* (BASH[A-Z_]*|EUID|PPID|UID|SHELLOPTS|FUNCNAME|GROUPS|DIRSTACK|PIPESTATUS|_|COLUMNS|LINES|HISTCMD|RANDOM|SRANDOM|SECONDS|LINENO|EPOCHREALTIME|EPOCHSECONDS|OPTIND|OPTERR)='
    declare -f
  } >"$work/shell-state"
}

# direct FUNCTION [NAME=VALUE...] -- PROGRAM [ARGUMENT...]: defines FUNCTION to run PROGRAM
# with those variables in its environment, and has `measure` time it by hyperfine exec'ing
# PROGRAM itself (--shell=none): no bash between, so nothing of bash's fork and exec is left
# in a figure where a few tenths of a millisecond matter (start-up). Words must not need
# quoting beyond what hyperfine's shell-words splitting undoes (paths here have no spaces).
declare -A direct_environment=() direct_command=()
direct() {
  local function=$1 environment=() word command=""
  shift
  while [ "$1" != -- ]; do environment+=("$1"); shift; done
  shift
  for word in "$@"; do command+="${command:+ }$(printf %q "$word")"; done
  direct_environment[$function]=""
  for word in "${environment[@]}"; do direct_environment[$function]+="$word"$'\n'; done
  direct_command[$function]=$command
  for word in "${environment[@]}"; do command="$(printf %q "$word") $command"; done
  eval "$function() { env $command </dev/null; }"
}

# measure WARMUP NAME:STATUS:FUNCTION[:PREPARE]...
# Times each FUNCTION (a shell function running one command) with hyperfine: WARMUP runs
# untimed, then `runs` timed, each from the shell's fork to its exit, less hyperfine's
# measure of the shell's own start. The commands take turns, two runs at a time (A A B B
# A A B B …), so that a change in machine load hits every command alike. A run ending with
# another status than STATUS marks NAME failed: it gets no figure. The samples
# (microseconds, one per run) go where `stats` reads them. A spec with a PREPARE (run
# untimed before each run) is timed by this shell instead (`measure_here`): what PREPARE
# starts (an attacker) must outlive it and be known here.
measure() {
  local warmup=$1 spec name expected function prepare arguments done=0 turn specs=() environment failed
  shift
  command -v hyperfine >/dev/null || die "hyperfine is needed for the timings: apt-get install hyperfine"
  snapshot_shell
  for spec in "$@"; do
    IFS=: read -r name expected function prepare <<<"$spec"
    if [ -n "$prepare" ]; then measure_here "$warmup" "$spec"; else specs+=("$spec"); fi
  done
  while ((done < runs)); do
    turn=$((runs - done < 2 ? runs - done : 2))
    for spec in "${specs[@]}"; do
      IFS=: read -r name expected function prepare <<<"$spec"
      [ -e "$samples/$name.failed" ] && continue
      arguments=(--style=none --runs "$turn" --warmup "$((done == 0 ? warmup : 0))" --ignore-failure
        --export-json "$work/hyperfine.json")
      failed=0
      if [ -n "${direct_command[$function]:-}" ]; then
        mapfile -t environment < <(printf %s "${direct_environment[$function]}")
        env "${environment[@]}" hyperfine --shell=none "${arguments[@]}" "${direct_command[$function]}" \
          >>"$log" 2>&1 || failed=1
      else
        BASH_ENV=$work/shell-state hyperfine --shell=bash "${arguments[@]}" "$function >/dev/null 2>>$log" \
          >>"$log" 2>&1 || failed=1
      fi
      if [ "$failed" = 1 ]; then
        echo "hyperfine failed: $(tail -1 "$log")" >"$samples/$name.failed"
        say "$name: hyperfine failed; see below"
        tail -5 "$log" >&2
        continue
      fi
      python3 - "$work/hyperfine.json" "$expected" "$samples/$name" <<'PY' || {
import json, sys
result = json.load(open(sys.argv[1]))["results"][0]
wrong = [code for code in result["exit_codes"] if code != int(sys.argv[2])]
if wrong:
    open(sys.argv[3] + ".failed", "w").write(f"exit status {wrong[0]}, expected {sys.argv[2]}\n")
    sys.exit(1)
with open(sys.argv[3], "a") as out:
    for seconds in result["times"]:
        out.write(f"{round(seconds * 1e6)}\n")
PY
        say "$name: $function exited with another status than $expected; see below"
        # hyperfine dropped a direct command's error output: run it once more for the log.
        [ -z "${direct_command[$function]:-}" ] || "$function" >/dev/null 2>>"$log" || true
        tail -5 "$log" >&2
      }
    done
    done=$((done + turn))
  done
}

# measure_here WARMUP NAME:STATUS:FUNCTION[:PREPARE]...: as measure, timed by this shell
# from before the fork to after the exit ($EPOCHREALTIME), the specs' runs alternating
# (A B A B …), PREPARE run here untimed before each run.
measure_here() {
  local warmup=$1 i spec name expected function prepare status start end
  shift
  for ((i = -warmup; i < runs; i++)); do
    for spec in "$@"; do
      IFS=: read -r name expected function prepare <<<"$spec"
      [ -e "$samples/$name.failed" ] && continue
      [ -z "$prepare" ] || "$prepare" >/dev/null 2>>"$log"
      start=$EPOCHREALTIME
      "$function" >/dev/null 2>>"$log" && status=0 || status=$?
      end=$EPOCHREALTIME
      if [ "$status" != "$expected" ]; then
        echo "exit status $status, expected $expected" >"$samples/$name.failed"
        say "$name: $function exited with $status (expected $expected); see below"
        tail -5 "$log" >&2
        continue
      fi
      ((i < 0)) || echo $((${end/./} - ${start/./})) >>"$samples/$name"
    done
  done
}

# record NAME VALUE...: samples measured some other way (already in their unit).
record() {
  local name=$1
  shift
  printf '%s\n' "$@" >>"$samples/$name"
}

# record_ms NAME: milliseconds, one a line on standard input, as microsecond samples.
record_ms() { awk '{ printf "%.0f\n", $1 * 1000 }' >>"$samples/$1"; }

# stats NAME: "median min max" of its samples, or nothing when it failed or has none.
stats() {
  [ -s "$samples/$1" ] && [ ! -e "$samples/$1.failed" ] || return 0
  sort -g "$samples/$1" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    print m, v[1], v[NR] }'
}
median() { local s; s=$(stats "$1"); echo "${s%% *}"; }

# ms MICROSECONDS: a readable number of milliseconds.
ms() {
  awk -v u="$1" 'BEGIN { x = u / 1000
    if (x >= 100) printf "%.0f ms", x; else if (x >= 10) printf "%.1f ms", x; else printf "%.2f ms", x }'
}

# cell NAME [UNIT]: "median (min–max)" for a table; UNIT us (default) or a suffix for raw numbers.
cell() {
  local s unit=${2:-us}
  s=$(stats "$1")
  if [ -z "$s" ]; then
    if [ -e "$samples/$1.failed" ]; then echo "failed: $(cat "$samples/$1.failed")"; else echo "not measured"; fi
    return
  fi
  read -r m lo hi <<<"$s"
  if [ "$unit" = us ]; then
    echo "$(ms "$m") ($(ms "$lo") – $(ms "$hi"))"
  else
    awk -v m="$m" -v lo="$lo" -v hi="$hi" -v u="$unit" 'BEGIN {
      f = (m >= 100) ? "%.0f" : "%.1f"
      printf f u " (" f " – " f ")\n", m, lo, hi }'
  fi
}

# ratio A B: median(A) / median(B), or an em dash.
ratio() {
  local a b
  a=$(median "$1")
  b=$(median "$2")
  [ -n "$a" ] && [ -n "$b" ] || { echo "—"; return; }
  awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f×", a / b }'
}

# share A B: the part of median(A) that median(B) does not explain, in percent.
share() {
  local a b
  a=$(median "$1")
  b=$(median "$2")
  [ -n "$a" ] && [ -n "$b" ] || { echo ""; return; }
  awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", (a - b) * 100 / a }'
}

# peak RSS NAME COMMAND...: GNU time's %M (KiB) of the command, `runs` times.
peak() {
  local name=$1 i
  shift
  for ((i = 0; i < runs; i++)); do
    "$@" </dev/null >/dev/null 2>>"$log" || true
    [ ! -s "$work/rss" ] || record "$name" "$(tail -1 "$work/rss")"
    rm -f "$work/rss"
  done
}
gnutime=(/usr/bin/time -f %M -o "$work/rss")

report=$work/report.md
out() { printf '%s\n' "$@" >>"$report"; }

# A touchgate data directory (an XDG_DATA_HOME) of its own for each setup.
data_dir() { mkdir -p -m 0700 "$work/data/$1"; echo "$work/data/$1"; }

# Runs a setup command, stopping the suite when it fails: figures rest on it.
setup() {
  "$@" >>"$log" 2>&1 || { tail -20 "$log" >&2; die "setup failed: $*"; }
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# BENCH_ONLY=daemon: section 7 alone, put into the existing BENCHMARKS.md.
only=${BENCH_ONLY:-}
if [ "$only" != daemon ]; then

# --- 1. verify -----------------------------------------------------------------------

say "1/6 verify: touchgate vs the C reference"
image_data=$(data_dir verify-image)
device_data=$(data_dir verify-device)
XDG_DATA_HOME=$image_data setup "$virtual_finger" --print whorl -- "$touchgate" enroll --finger right-index --user bench
XDG_DATA_HOME=$device_data setup "$feeder" device whorl,whorl,whorl,whorl,whorl -- "$touchgate" enroll --finger right-index --user bench
setup "$helper" export --from "$image_data" --out "$work/verify-image.gallery"
setup "$helper" export --from "$device_data" --out "$work/verify-device.gallery"

tg_image_match() { XDG_DATA_HOME=$image_data "$feeder" image "$prints/whorl.pgm" -- "$touchgate" verify --user bench; }
c_image_match() { "$feeder" image "$prints/whorl.pgm" -- "$reference" verify "$work/verify-image.gallery"; }
tg_image_miss() { XDG_DATA_HOME=$image_data "$feeder" image "$prints/arch.pgm" -- "$touchgate" verify --user bench; }
c_image_miss() { "$feeder" image "$prints/arch.pgm" -- "$reference" verify "$work/verify-image.gallery"; }
tg_device_match() { XDG_DATA_HOME=$device_data "$feeder" device whorl -- "$touchgate" verify --user bench; }
c_device_match() { "$feeder" device whorl -- "$reference" verify "$work/verify-device.gallery"; }
tg_device_miss() { XDG_DATA_HOME=$device_data "$feeder" device arch -- "$touchgate" verify --user bench; }
c_device_miss() { "$feeder" device arch -- "$reference" verify "$work/verify-device.gallery"; }
# A match on virtual_image varies more from run to run than touchgate's overhead: twice the runs.
runs=$((runs * 2)) measure 1 verify-image-match:0:tg_image_match verify-image-match-c:0:c_image_match
# A no-match counts toward the lockout: each timed miss starts with the counters cleared.
clear_image() { "$helper" clear-failures --data "$image_data"; }
clear_device() { "$helper" clear-failures --data "$device_data"; }
runs=$((runs * 2)) measure 1 verify-image-miss:1:tg_image_miss:clear_image verify-image-miss-c:1:c_image_miss
tg_version() { "$touchgate" --version; }
# `--version` alongside, so that start-up can be compared with these runs (figure 6).
measure 1 verify-device-match:0:tg_device_match verify-device-match-c:0:c_device_match version-verify:0:tg_version
measure 1 verify-device-miss:1:tg_device_miss:clear_device verify-device-miss-c:1:c_device_miss
# Where the difference lies: the time inside libfprint, from its debug log (millisecond stamps),
# from creating the context to the reader's close completing.
inside() {  # inside NAME FUNCTION: `runs` runs with G_MESSAGES_DEBUG=all
  local i
  for ((i = 0; i < runs; i++)); do
    G_MESSAGES_DEBUG=all "$2" >"$work/debug" 2>&1 || true  # GLib writes debug lines to stdout
    awk '{ split($3, t, ":"); at = ((t[1] * 60 + t[2]) * 60 + t[3]) * 1e6 }
      /Initializing FpContext/ && !start { start = at } /reported close completion/ { end = at }
      END { if (start && end) printf "%.0f\n", end - start }' "$work/debug" >>"$samples/$1"
  done
}
inside inside-device-match tg_device_match
inside inside-device-match-c c_device_match
inside inside-image-miss tg_image_miss
inside inside-image-miss-c c_image_miss

# --- 2. identify ---------------------------------------------------------------------

say "2/6 identify: galleries of $galleries prints (the large ones take minutes)"
seed=$(data_dir identify-seed)
seed_fingers=(right-index right-little right-middle right-ring right-thumb)  # in the store's order
index=0
for print in $gallery_prints; do
  XDG_DATA_HOME=$seed setup "$virtual_finger" --print "$print" -- "$touchgate" enroll --finger "${seed_fingers[index++]}" --user seed
done
identify_data=$(data_dir identify)
tg_identify() { XDG_DATA_HOME=$identify_data "$feeder" image "$prints/$probe.pgm" -- "$touchgate" identify; }
c_identify() { "$feeder" image "$prints/$probe.pgm" -- "$reference" identify "$work/identify.gallery"; }
clear_identify() { "$helper" clear-failures --data "$identify_data"; }
for size in $galleries; do
  say "   $size"
  setup "$helper" replicate --from "$seed" --to "$identify_data" --count "$size"
  setup "$helper" export --from "$identify_data" --out "$work/identify.gallery"
  warmup=1
  ((size < 100)) || warmup=0
  measure "$warmup" "identify-$size:1:tg_identify:clear_identify" "identify-$size-c:1:c_identify"
done

# --- 3. secret release, 4. unlock ----------------------------------------------------

say "3/6 secret release: touchgate secret get vs pass show"
vault=$(data_dir vault)
vaults+=("$vault")
passphrase_file=$work/passphrase
printf 'correct horse battery staple\n' >"$passphrase_file"
XDG_DATA_HOME=$vault setup "$touchgate" init --passphrase-fd 3 3<"$passphrase_file"
XDG_DATA_HOME=$vault setup "$touchgate" unlock --passphrase-fd 3 3<"$passphrase_file"
XDG_DATA_HOME=$vault setup "$feeder" image "$prints/whorl.pgm" -- "$touchgate" enroll --finger right-index --passphrase-fd 3 3<"$passphrase_file"
XDG_DATA_HOME=$vault setup "$feeder" device whorl,whorl,whorl,whorl,whorl -- "$touchgate" enroll --finger left-index --passphrase-fd 3 3<"$passphrase_file"
# Verify once a vault exists: the template is sealed under the vault key (figure 1, last row).
tg_vault_device_match() { XDG_DATA_HOME=$vault "$feeder" device whorl -- "$touchgate" verify; }
measure 1 verify-vault-device-match:0:tg_vault_device_match verify-vault-device-match-c:0:c_device_match
printf 'bench-token-0123456789\n' >"$work/secret"
XDG_DATA_HOME=$vault setup "$touchgate" secret add api-token --policy biometry-any <"$work/secret"
# One touch opens the reuse window (5 minutes, 2 idle); every timed `secret get` falls in it.
XDG_DATA_HOME=$vault setup "$virtual_finger" --print whorl -- "$touchgate" secret get api-token
[ "$(XDG_DATA_HOME=$vault timeout 60 "$touchgate" secret get api-token </dev/null 2>>"$log")" = bench-token-0123456789 ] ||
  die "secret get inside the reuse window did not return the value without a touch"
tg_secret_get() { XDG_DATA_HOME=$vault "$touchgate" secret get api-token </dev/null; }

pass_show() { pass show api-token </dev/null; }
if [ -z "$pass_missing" ]; then
  printf 'allow-preset-passphrase\ndefault-cache-ttl 3600\nmax-cache-ttl 3600\n' >"$GNUPGHOME/gpg-agent.conf"
  setup gpg --batch --pinentry-mode loopback --passphrase 'bench passphrase' \
    --quick-gen-key 'Touchgate Bench <bench@touchgate.invalid>' future-default default never
  fingerprint=$(gpg --batch --with-colons --list-keys | awk -F: '/^fpr/ { print $10; exit }')
  # Cache the passphrase in the agent, as after a first `pass show` at the pinentry.
  for grip in $(gpg --batch --with-colons --with-keygrip --list-secret-keys | awk -F: '/^grp/ { print $10 }'); do
    setup "$preset" --preset -P 'bench passphrase' "$grip"
  done
  setup pass init "$fingerprint"
  setup pass insert -m api-token <"$work/secret"
  [ "$(pass show api-token 2>>"$log")" = bench-token-0123456789 ] || die "pass show did not return the value"
  measure 1 secret-get:0:tg_secret_get pass-show:0:pass_show version-secret:0:tg_version
else
  measure 1 secret-get:0:tg_secret_get version-secret:0:tg_version
fi
XDG_DATA_HOME=$vault peak rss-secret-get "${gnutime[@]}" "$touchgate" secret get api-token
[ -n "$pass_missing" ] || peak rss-pass-show "${gnutime[@]}" pass show api-token

say "4/6 unlock (Argon2id, default limits)"
tg_unlock() { XDG_DATA_HOME=$vault "$touchgate" unlock --passphrase-fd 3 3<"$passphrase_file"; }
tg_status() { XDG_DATA_HOME=$vault "$touchgate" status; }
derive() { "$helper" argon2id --runs 1; }
measure 1 unlock:0:tg_unlock argon2id:0:derive status:0:tg_status

# --- 5. audit ------------------------------------------------------------------------

say "5/6 audit: durable appends, verify of $audit_records records"
# As the store opens it, and with the writer set the other way: synchronous = FULL (each commit
# waits for its fsync) against NORMAL (the transaction and MAC alone).
shipped_data=$(data_dir audit-append)
other_data=$(data_dir audit-append-other)
synchronous=$("$helper" synchronous --data "$shipped_data")
other=FULL
[ "$synchronous" != FULL ] || other=NORMAL
mapfile -t rates < <("$helper" audit-append --data "$shipped_data" --count 1000 --runs $((runs + 1)))
record audit-append "${rates[@]:1}"
mapfile -t rates < <("$helper" audit-append --data "$other_data" --count 1000 --runs $((runs + 1)) --synchronous "$other")
record audit-append-other "${rates[@]:1}"
if [ "$synchronous" = FULL ]; then durable=audit-append bare=audit-append-other; else durable=audit-append-other bare=audit-append; fi
mapfile -t syncs < <("$helper" fsync --dir "$work" --count 1000 --runs "$runs")
record fsync "${syncs[@]}"
audit_data=$(data_dir audit-verify)
vaults+=("$audit_data")
XDG_DATA_HOME=$audit_data setup "$touchgate" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
setup "$helper" audit-fill --data "$audit_data" --total "$audit_records"
audit_count=$(XDG_DATA_HOME=$audit_data "$touchgate" audit verify 2>&1 | grep -o '[0-9]* records' || true)
tg_audit_verify() { XDG_DATA_HOME=$audit_data "$touchgate" audit verify; }
library_verify() { "$helper" audit-verify --data "$audit_data" --runs 1; }
measure 1 audit-verify:0:tg_audit_verify audit-verify-library:0:library_verify

# --- 6. start-up and memory ----------------------------------------------------------

say "6/6 start-up and peak memory"
# How much of start-up is dynamic loading: the same tiny Foundation program linked both ways.
printf 'import Foundation\nprint(ProcessInfo.processInfo.arguments.count)\n' >"$work/startup.swift"
setup swiftc -O "$work/startup.swift" -o "$work/startup-dynamic"
setup swiftc -O -static-stdlib "$work/startup.swift" -o "$work/startup-static"
c_true() { /bin/true; }
swift_dynamic() { "$work/startup-dynamic"; }
swift_static() { "$work/startup-static"; }
# Every client program as installed: touchgate-client and touchgated are names of
# touchgate-cli (it runs as the name it was started by), so they are started through links.
direct start_front TOUCHGATE_SOCKET=/nonexistent -- "$touchgate" --version
direct start_client TOUCHGATE_SOCKET=/nonexistent -- "$client" --version
direct start_cli -- "$cli" --version
direct start_daemon -- "$installed/libexec/touchgated" --version
direct start_collector -- "$bin/touchgate-collector" --version
measure 3 version:0:tg_version true:0:c_true startup-dynamic:0:swift_dynamic startup-static:0:swift_static \
  start-front:0:start_front start-client:0:start_client start-cli:0:start_cli start-daemon:0:start_daemon \
  start-collector:0:start_collector
XDG_DATA_HOME=$image_data peak rss-verify "$feeder" image "$prints/whorl.pgm" -- "${gnutime[@]}" "$touchgate" verify --user bench
peak rss-verify-c "$feeder" image "$prints/whorl.pgm" -- "${gnutime[@]}" "$reference" verify "$work/verify-image.gallery"

fi  # the in-process sections

# --- 7. the system daemon ------------------------------------------------------------

say "daemon: touchgated holding the reader open, against the reference and the in-process CLI"
daemon_bin=$installed/libexec/touchgated
# touchgated refuses to run as root unless told to: the section measures it as root (its
# synthetic users need setpriv), as its text says; the packaged daemon runs as its own user.
daemon_root=--allow-root
gcc "${cflags[@]}" -o "$work/client" "$root/bench/client.c"
c_client=$work/client
# Reachable by the synthetic users of the memory figure (setpriv): the socket's directory and
# a copy of the CLI (the build directory may sit where only its owner can go).
public=$(mktemp -d /tmp/touchgate-bench-daemon.XXXXXX)
chmod 0755 "$public"
cp -a "$installed/bin" "$installed/libexec" "$public/"
chmod -R go+rX "$public"
daemon_socket=$public/socket
daemon_reader=$work/daemon-reader.socket
daemon_state=$work/daemon-state
mkdir -p -m 0700 "$daemon_state"
# The reader reached directly (no fprintd), and no system bus: sleep is not watched.
env FP_VIRTUAL_DEVICE="$daemon_reader" FP_DRIVERS_WHITELIST=virtual_device TOUCHGATE_READER_BACKEND=libfprint \
  DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/touchgate-bench "$daemon_bin" --socket "$daemon_socket" \
  --state-dir "$daemon_state" $daemon_root >>"$work/touchgated.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$daemon_socket" ] && break; sleep 0.05; done
[ -S "$daemon_socket" ] || die "touchgated did not start: $(cat "$work/touchgated.log")"
through() { TOUCHGATE_SOCKET=$daemon_socket "$@"; }
played() { FEEDER_SOCKET=$daemon_reader "$feeder" "$@"; }  # the finger of the daemon's reader

passphrase_file=$work/passphrase
printf 'correct horse battery staple\n' >"$passphrase_file"
printf 'bench-token-0123456789\n' >"$work/secret"
# In-process beside it: a store enrolled the same way, its template exported for the reference.
inproc=$(data_dir daemon-inprocess)
vaults+=("$inproc")
XDG_DATA_HOME=$inproc setup "$feeder" device whorl,whorl,whorl,whorl,whorl -- "$touchgate" enroll --finger right-index
setup "$helper" export --from "$inproc" --out "$work/daemon-device.gallery"
XDG_DATA_HOME=$inproc setup "$touchgate" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
XDG_DATA_HOME=$inproc setup "$touchgate" secret add api-token --policy biometry-any <"$work/secret"
XDG_DATA_HOME=$inproc setup "$feeder" device whorl -- "$touchgate" secret get api-token
# The same through the daemon, for this user (the first request opens the reader, which stays open).
setup through played device whorl,whorl,whorl,whorl,whorl -- "$touchgate" enroll --finger right-index
setup through "$touchgate" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
setup through "$touchgate" secret add api-token --policy biometry-any <"$work/secret"
setup through played device whorl -- "$touchgate" secret get api-token
[ "$(through timeout 60 "$touchgate" secret get api-token </dev/null 2>>"$log")" = bench-token-0123456789 ] ||
  die "secret get through the daemon inside the reuse window did not return the value without a touch"
[ "$(timeout 60 "$c_client" "$daemon_socket" secret api-token 2>>"$log")" = bench-token-0123456789 ] ||
  die "the C client did not get the value from the daemon"

# The personal mode as the packages set it up: touchgate agent (started here as systemd would
# start it at the first connection) hosting the store, with a virtual_device reader of its own;
# the commands find it at $XDG_RUNTIME_DIR/touchgate/socket, nothing set but the user's own
# directories. Enrolled, initialised and unlocked the same way, through it.
agent_run=$work/agent-run
agent_data=$(data_dir agent-personal)
vaults+=("$agent_data")
agent_reader=$work/agent-reader.socket
mkdir -p -m 0700 "$agent_run"
personal() { XDG_RUNTIME_DIR=$agent_run XDG_DATA_HOME=$agent_data "$@"; }
personal env FP_VIRTUAL_DEVICE="$agent_reader" FP_DRIVERS_WHITELIST=virtual_device TOUCHGATE_READER_BACKEND=libfprint \
  DBUS_SESSION_BUS_ADDRESS= "$touchgate" agent >>"$work/agent.log" 2>&1 &
agent_pid=$!
for _ in $(seq 100); do [ -S "$agent_run/touchgate/socket" ] && break; sleep 0.05; done
[ -S "$agent_run/touchgate/socket" ] || die "touchgate agent did not start: $(cat "$work/agent.log")"
at_agent() { FEEDER_SOCKET=$agent_reader "$feeder" "$@"; }  # the finger of the agent's reader
setup personal at_agent device whorl,whorl,whorl,whorl,whorl -- "$touchgate" enroll --finger right-index
setup personal "$touchgate" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
setup personal "$touchgate" secret add api-token --policy biometry-any <"$work/secret"
setup personal at_agent device whorl -- "$touchgate" secret get api-token
personal "$touchgate" status --json 2>>"$log" | grep -q '"trust-boundary":"touchgate agent' ||
  die "the personal mode's commands did not reach touchgate agent: $(personal "$touchgate" status 2>&1)"
[ "$(personal timeout 60 "$touchgate" secret get api-token </dev/null 2>>"$log")" = bench-token-0123456789 ] ||
  die "secret get through touchgate agent inside the reuse window did not return the value without a touch"

daemon_verify() { through played device whorl -- "$touchgate" verify; }
agent_verify() { personal at_agent device whorl -- "$touchgate" verify; }
c_daemon_reference() { "$feeder" device whorl -- "$reference" verify "$work/daemon-device.gallery"; }
c_daemon_verify() { played device whorl -- "$c_client" "$daemon_socket" verify; }
runs=$((runs * 2)) measure 1 daemon-verify:0:daemon_verify daemon-verify-c:0:c_daemon_reference \
  daemon-verify-client:0:c_daemon_verify agent-verify:0:agent_verify
# `--version` is the front's own answer. Every other command through the daemon: the front
# execs touchgate-client (no service under it), whose own start is `touchgate-client
# --version`; in the personal mode it execs touchgate-cli.
# These are start-up figures (target 4 ms), so hyperfine execs each program itself.
direct daemon_secret TOUCHGATE_SOCKET="$daemon_socket" -- "$touchgate" secret get api-token
direct inproc_secret XDG_DATA_HOME="$inproc" -- "$touchgate" secret get api-token
direct c_secret -- "$c_client" "$daemon_socket" secret api-token
direct tg_version_front TOUCHGATE_SOCKET="$daemon_socket" -- "$touchgate" --version
direct tg_version TOUCHGATE_SOCKET="$daemon_socket" -- "$client" --version
direct tg_version_personal TOUCHGATE_SOCKET= -- "$cli" --version
direct tg_status TOUCHGATE_SOCKET="$daemon_socket" -- "$touchgate" status
direct tg_list TOUCHGATE_SOCKET="$daemon_socket" -- "$touchgate" secret list
direct agent_secret XDG_RUNTIME_DIR="$agent_run" XDG_DATA_HOME="$agent_data" -- "$touchgate" secret get api-token
direct agent_status XDG_RUNTIME_DIR="$agent_run" XDG_DATA_HOME="$agent_data" -- "$touchgate" status
runs=$((runs * 2)) measure 1 daemon-secret:0:daemon_secret inprocess-secret:0:inproc_secret \
  daemon-secret-c:0:c_secret version-front:0:tg_version_front version-daemon:0:tg_version \
  version-personal:0:tg_version_personal status-daemon:0:tg_status list-daemon:0:tg_list \
  agent-secret:0:agent_secret agent-status:0:agent_status

# What start-up loads (counts, not times): the front is one static executable (ldd says so); for
# touchgate-cli, which every other command runs, the shared libraries, those that are libfprint
# and what it loads, and relocations.
front_linking=$({ ldd "$touchgate" 2>&1 || true; } | head -1 | sed "s/^[[:space:]]*//")
so_names() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $1 }' | sort -u; }
client_libs=$(so_names "$cli" | wc -l)
fprint_so=$(ldd "$cli" | awk '$1 ~ /^libfprint-2/ { print $3 }')
client_fprint_libs=?
[ -n "$fprint_so" ] && client_fprint_libs=$({ basename "$fprint_so"; so_names "$fprint_so"; } | sort -u |
  comm -12 - <(so_names "$cli") | wc -l)
loader_stats=$(LD_DEBUG=statistics "$cli" --version 2>&1 >/dev/null)
client_relative=$(awk '/number of relative relocations/ { print $NF; exit }' <<<"$loader_stats")
client_symbolic=$(awk '/final number of relocations:/ { print $NF; exit }' <<<"$loader_stats")
# touchgate-client, what every other command through the daemon is: the same counts.
thin_client=$client
thin_libs=$(so_names "$thin_client" | wc -l)
thin_service_libs=$(so_names "$thin_client" | grep -cE '^lib(fprint-2|glib-2|gio-2|gobject-2|sqlite3|sodium|pwquality)' || true)

# What static linking would save a Swift client: the tiny Foundation program of figure 6, both ways.
printf 'import Foundation\nprint(ProcessInfo.processInfo.arguments.count)\n' >"$work/startup.swift"
setup swiftc -O "$work/startup.swift" -o "$work/startup-dynamic"
setup swiftc -O -static-stdlib "$work/startup.swift" -o "$work/startup-static"
tiny_dynamic() { "$work/startup-dynamic"; }
tiny_static() { "$work/startup-static"; }
measure 3 daemon-tiny-dynamic:0:tiny_dynamic daemon-tiny-static:0:tiny_static

# Requests per second for `status`, 10 clients at once: C clients (200 requests each on one
# connection: the daemon's rate) and touchgate processes (10 each: what a user sees).
rate() {  # rate NAME CLIENTS REQUESTS FUNCTION: runs of CLIENTS concurrent FUNCTIONs
  local name=$1 clients=$2 requests=$3 function=$4 i j start end failed pids pid
  for ((i = 0; i < runs; i++)); do
    start=$EPOCHREALTIME
    failed=0
    pids=()
    for ((j = 0; j < clients; j++)); do
      "$function" >/dev/null 2>>"$log" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=$?; done
    end=$EPOCHREALTIME
    ((failed == 0)) || { echo "a client exited with $failed: $(tail -1 "$log")" >"$samples/$name.failed"; return; }
    record "$name" "$(awk -v n=$((clients * requests)) -v t=$((${end/./} - ${start/./})) 'BEGIN { printf "%.0f", n * 1e6 / t }')"
  done
}
c_status() { "$c_client" "$daemon_socket" status 200; }
tg_status_loop() { local k; for ((k = 0; k < 10; k++)); do through "$touchgate" status || return 1; done; }
c_status >/dev/null 2>>"$log" || die "status through the C client failed"
rate status-rate-c 10 200 c_status
# A read makes no durable write: fdatasync and fsync of the daemon counted by strace over
# one more round of the same load.
command -v strace >/dev/null || apt_install strace || die "strace is needed to count the daemon's syncs: apt-get install strace"
strace -f -c -e trace=fdatasync,fsync,sync_file_range -o "$work/status.strace" -p "$daemon_pid" 2>>"$log" &
strace_pid=$!
sleep 1  # attached to every thread before the load starts
status_pids=()
for ((j = 0; j < 10; j++)); do c_status >/dev/null 2>>"$log" & status_pids+=($!); done
for pid in "${status_pids[@]}"; do wait "$pid" || die "a status client failed under strace: $(tail -1 "$log")"; done
kill -INT "$strace_pid" 2>/dev/null || true
wait "$strace_pid" 2>/dev/null || true
status_syncs=$(awk '$NF ~ /^(fdatasync|fsync|sync_file_range)$/ { n += $4 } END { print n + 0 }' "$work/status.strace")
rate status-rate-cli 10 10 tg_status_loop

# Memory: the daemon's resident set with this user's vault open, then with 100 users' (99
# synthetic uids, each its own vault made and unlocked through the socket).
rss_now() { awk '/^VmRSS/ { print $2 }' "/proc/$daemon_pid/status"; }
through "$touchgate" status >/dev/null 2>>"$log"
daemon_rss_1=$(rss_now)
command -v setpriv >/dev/null || die "setpriv (util-linux) is needed for the 100-user figure"
for ((uid = 61000; uid < 61099; uid++)); do
  HOME=/nonexistent TOUCHGATE_SOCKET=$daemon_socket setup setpriv --reuid=$uid --regid=$uid --clear-groups -- \
    "$public/bin/touchgate" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
done
through "$touchgate" status >/dev/null 2>>"$log"
daemon_rss_100=$(rss_now)
daemon_unlocked=$(HOME=/nonexistent TOUCHGATE_SOCKET=$daemon_socket setpriv --reuid=61098 --regid=61098 --clear-groups -- \
  "$public/bin/touchgate" status --json 2>>"$log" | grep -o '"locked" *: *[a-z]*' | head -1 || true)
daemon_opened=$(grep -c "stays open for the next requests" "$work/touchgated.log" || true)
kill "$daemon_pid" 2>/dev/null || true
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=

# The victim under attack: one user's requests (status, a passphrase release, a fresh-touch
# finger release) while another user attacks the daemon, as in the availability tests
# (Tests/TouchgateCLITests/DaemonAvailabilityTests.swift), with their attacker's program.
say "daemon: a victim's requests while another user attacks touchgated"
command -v useradd >/dev/null && [ -x /usr/bin/python3 ] ||
  die "the attack figures need useradd (passwd) and /usr/bin/python3"
# Two ordinary users of their own, removed on exit: the attacker and the victim.
make_user() {
  local tries
  for ((tries = 0; tries < 20; tries++)); do  # another program may hold /etc/passwd's lock
    useradd --no-create-home --shell /usr/sbin/nologin --user-group "$1" >>"$log" 2>&1 && { bench_users+=("$1"); return; }
    sleep 0.2
  done
  die "useradd $1 failed: $(tail -1 "$log")"
}
make_user "tgbench-a$$"
make_user "tgbench-v$$"
attacker_uid=$(id -u "tgbench-a$$") attacker_gid=$(id -g "tgbench-a$$")
victim_uid=$(id -u "tgbench-v$$") victim_gid=$(id -g "tgbench-v$$")
attack_socket=$public/attack-socket
attack_state=$work/attack-state
mkdir -p -m 0700 "$attack_state"
attack_daemon() {  # attack_daemon TAG OPTION...: touchgated on the attack state, a reader of its own
  local tag=$1
  shift
  attack_reader=$work/attack-reader-$tag.socket
  rm -f "$attack_socket"
  env FP_VIRTUAL_DEVICE="$attack_reader" FP_DRIVERS_WHITELIST=virtual_device TOUCHGATE_READER_BACKEND=libfprint \
    DBUS_SYSTEM_BUS_ADDRESS="${attack_bus:-unix:path=/nonexistent/touchgate-bench}" "$daemon_bin" --socket "$attack_socket" \
    --state-dir "$attack_state" $daemon_root "$@" >>"$work/attack-daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do [ -S "$attack_socket" ] && break; sleep 0.05; done
  [ -S "$attack_socket" ] || die "touchgated did not start: $(tail -5 "$work/attack-daemon.log")"
}
attack_daemon_stop() {
  kill "$daemon_pid" 2>/dev/null || true
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
}
as_victim=(env HOME=/nonexistent TOUCHGATE_SOCKET="$attack_socket"
  setpriv --reuid="$victim_uid" --regid="$victim_gid" --clear-groups -- "$public/bin/touchgate")
as_attacker=(env HOME=/nonexistent TOUCHGATE_SOCKET="$attack_socket"
  setpriv --reuid="$attacker_uid" --regid="$attacker_gid" --clear-groups -- "$public/bin/touchgate")
on_reader() { FEEDER_SOCKET=$attack_reader "$feeder" "$@"; }
# The finger sent when the client prompts, not ahead: a SCAN queued ahead would go to whichever
# request waits at the reader first, the attacker's included.
on_prompt() { FEEDER_SOCKET=$attack_reader "$feeder" device-on-prompt "$@"; }
victim_status() { "${as_victim[@]}" status; }
victim_passphrase() { "${as_victim[@]}" secret get by-passphrase --passphrase-fd 0 <"$passphrase_file"; }
victim_finger() { on_prompt whorl -- "${as_victim[@]}" secret get by-finger </dev/null; }
victims_releases_work() {  # both releases give their values, once each
  local by_passphrase by_finger
  by_passphrase=$(victim_passphrase 2>>"$log") || true
  by_finger=$(victim_finger 2>>"$log") || true
  [ "$by_passphrase" = value-of-by-passphrase ] && [ "$by_finger" = value-of-by-finger ] ||
    die "the victim's releases gave \"$by_passphrase\" and \"$by_finger\" $1"
}

# The attacker's program (passed with -c: the attacker cannot read the checkout), each run in
# a session of its own so that it goes with everything it started; it holds its connections
# while its standard input (a FIFO nobody writes to) stays open.
attack_script=$(cat "$root/Tests/AttackPrograms/attack.py")
attack_hold=$work/attack-hold
mkfifo "$attack_hold"
exec {attack_hold_fd}<>"$attack_hold"
attack() {  # attack OUT user|sudo MODE ARGS...: the attacker's program in the background
  local out=$1 who=$2 identity
  shift 2
  if [ "$who" = sudo ]; then  # as sudo runs while it authenticates: real uid the attacker's, effective uid 0
    identity=(--ruid="$attacker_uid" --euid=0 --rgid="$attacker_gid" --egid=0 --keep-groups)
  else
    identity=(--reuid="$attacker_uid" --regid="$attacker_gid" --clear-groups)
  fi
  setsid setpriv "${identity[@]}" -- /usr/bin/python3 -c "$attack_script" "$attack_socket" "$@" \
    <"$attack_hold" >"$out" 2>&1 &
  attackers+=($!)
}
attack_wait() {  # attack_wait OUT PREFIX [SECONDS]: until the attacker prints a line starting with PREFIX
  local deadline=$((SECONDS + ${3:-30}))
  while ((SECONDS < deadline)); do
    grep -q "^$2" "$1" 2>/dev/null && return 0
    sleep 0.02
  done
  die "the attacker did not print \"$2\" within ${3:-30} s: $(cat "$1")"
}
attack_stop() {  # ends every attacker program and what it started (their connections close)
  local pid
  for pid in "${attackers[@]}"; do
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  attackers=()
}
# Each attack is made afresh before every timed request (a PREPARE of measure), so that every
# request meets it whole: stalled peers are cut off after 10 s, unanswered waits end at their deadline.
no_attack() { attack_stop; }
under_exports() {
  attack_stop
  attack "$work/attack.out" user stall audit.export '{}' 4
  attack_wait "$work/attack.out" ready
  sleep 1  # as the test: the daemon's sends to them have filled the sockets
}
under_questions() {
  attack_stop
  attack "$work/attack.out" user await secret.add '{"item":"x","policy":"biometry-any"}'
  attack_wait "$work/attack.out" "asked secret-value"
  attack "$work/attack-touch.out" user await verify '{}'
  sleep 0.5  # the untouched verify holds the reader
}
under_queue() {
  attack_stop
  attack "$work/attack.out" user stall verify '{}' 6
  attack_wait "$work/attack.out" ready
  sleep 0.5
}
# measure_attack NAME PREPARE: the victim's three requests, interleaved, each after PREPARE.
measure_attack() {
  measure_here 1 "attack-$1-status:0:victim_status:$2" "attack-$1-passphrase:0:victim_passphrase:$2" \
    "attack-$1-finger:0:victim_finger:$2"
  attack_stop
}

# As shipped (default limits and deadlines): the baseline, then the request loop.
attack_daemon shipped
setup on_reader device whorl,whorl,whorl,whorl,whorl -- "${as_victim[@]}" enroll --finger right-index
setup "${as_victim[@]}" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
setup "${as_victim[@]}" secret add by-passphrase --policy passphrase --fresh <<<value-of-by-passphrase
setup "${as_victim[@]}" secret add by-finger --policy biometry-any --fresh <<<value-of-by-finger
setup on_reader device whorl,whorl,whorl,whorl,whorl -- "${as_attacker[@]}" enroll --finger right-index
setup "${as_attacker[@]}" init --kdf minimum --passphrase-fd 3 3<"$passphrase_file"
victims_releases_work ""
measure_attack none no_attack
lock_out_attacker() {  # three touches of another finger: locked out, each further touch refused without the reader
  local i status
  for ((i = 0; i < 3; i++)); do on_reader device arch -- "${as_attacker[@]}" verify </dev/null >>"$log" 2>&1 || true; done
  # No finger played: a refused touch does not use the reader, and a SCAN queued would stay for the next one.
  timeout 20 "${as_attacker[@]}" verify </dev/null >>"$log" 2>&1 && status=0 || status=$?
  [ "$status" = 7 ] || die "the attacker is not locked out (verify exited with $status, not 7)"
}
lock_out_attacker
# `loop verify {} 400` over and over (a new connection each time) while the victim is measured.
setsid bash -c 'while :; do "$@" </dev/null; done' loop setpriv --reuid="$attacker_uid" --regid="$attacker_gid" \
  --clear-groups -- /usr/bin/python3 -c "$attack_script" "$attack_socket" loop verify '{}' 400 >"$work/attack-loop.out" 2>&1 &
attackers+=($!)
attack_wait "$work/attack-loop.out" ready
measure_attack loop ""
loop_counts=$(grep -o '"[a-z-]*": [0-9]*' "$work/attack-loop.out" | tr -d '":' |
  awk '{ n[$1] += $2 } END { for (c in n) { printf "%s%d %s", sep, n[c], c; sep = ", " } }')
loop_rounds=$(grep -c '^codes' "$work/attack-loop.out" || true)
attack_daemon_stop

# The seat's user while another user asks for touches nobody makes (issue 46): logind's
# stand-in (python3-dbusmock's template, as the tests' LogindRig) on a private bus says the
# victim is at seat0 and the attacker logged in over ssh. The attacker's program repeats an
# untouched `verify` on 16 connections (its whole share) for as long as the victim is measured.
[ -x /usr/bin/dbus-daemon ] && /usr/bin/python3 -c 'import dbusmock' 2>/dev/null ||
  die "the seat figures need a logind stand-in: apt-get install python3-dbusmock dbus-daemon"
seat_bus=$work/seat-bus.socket
cat >"$work/seat-bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$seat_bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/>
    <allow send_type="method_call"/><allow send_type="signal"/><allow send_type="method_return"/><allow send_type="error"/>
    <allow receive_type="method_call"/><allow receive_type="signal"/><allow receive_type="method_return"/><allow receive_type="error"/>
  </policy>
</busconfig>
EOF
/usr/bin/dbus-daemon --config-file="$work/seat-bus.conf" --nofork >>"$work/seat-bus.log" 2>&1 &
seat_pids+=($!)
for _ in $(seq 100); do [ -S "$seat_bus" ] && break; sleep 0.05; done
DBUS_SYSTEM_BUS_ADDRESS=unix:path=$seat_bus /usr/bin/python3 -m dbusmock --system --template logind >>"$work/seat-bus.log" 2>&1 &
seat_pids+=($!)
seat_sessions="
import dbus, sys, time
for _ in range(100):
    try:
        manager = dbus.SystemBus().get_object('org.freedesktop.login1', '/org/freedesktop/login1')
        manager.ListSessions(dbus_interface='org.freedesktop.login1.Manager')
        break
    except dbus.exceptions.DBusException:
        time.sleep(0.1)
mock = 'org.freedesktop.DBus.Mock'
ssh = manager.AddSession('ssh1', 'seat0', dbus.UInt32(int(sys.argv[1])), sys.argv[2], True, dbus_interface=mock)
dbus.SystemBus().get_object('org.freedesktop.login1', ssh).UpdateProperties('org.freedesktop.login1.Session',
    {'Remote': True, 'RemoteHost': 'far.example.org'}, dbus_interface=mock)
manager.AddSession('seat1', 'seat0', dbus.UInt32(int(sys.argv[3])), sys.argv[4], True, dbus_interface=mock)
"
DBUS_SYSTEM_BUS_ADDRESS=unix:path=$seat_bus /usr/bin/python3 -c "$seat_sessions" "$attacker_uid" "tgbench-a$$" \
  "$victim_uid" "tgbench-v$$" >>"$work/seat-bus.log" 2>&1 || die "logind's stand-in did not take the sessions: $(tail -5 "$work/seat-bus.log")"
attack_bus=unix:path=$seat_bus attack_daemon seat
setup "${as_victim[@]}" unlock --passphrase-fd 3 3<"$passphrase_file"
setup "${as_attacker[@]}" unlock --passphrase-fd 3 3<"$passphrase_file"
victims_releases_work "at the seat"
measure_here 1 "seat-none-finger:0:victim_finger:"
attack "$work/attack-seat.out" user repeat verify '{}' 100000 16
attack_wait "$work/attack-seat.out" started
sleep 5  # the attacker's untouched verifies hold the reader by turns
measure_here 1 "seat-loop-finger:0:victim_finger:"
attack_stop
attack_daemon_stop
for pid in "${seat_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
seat_pids=()

# Short deadlines, and room for the attacker to restart its attacks before every request and
# write its long trail: the same state, so both users unlock again (unlocking lifts the lockout).
attack_options="--finger-timeout 3 --answer-timeout 3 --request-burst 100000 --requests-per-minute 600000"
# shellcheck disable=SC2086  # options, one word each
attack_daemon short $attack_options
setup "${as_victim[@]}" unlock --passphrase-fd 3 3<"$passphrase_file"
setup "${as_attacker[@]}" unlock --passphrase-fd 3 3<"$passphrase_file"
victims_releases_work "after the restart"
# Not locked out any more: its touches hold the reader again.
setup on_reader device whorl -- "${as_attacker[@]}" verify
measure_attack questions under_questions
measure_attack queue under_queue
attack "$work/attack-idle.out" sudo idle 20
attack_wait "$work/attack-idle.out" ready
idle_counts=$(awk '/^idle/ { print $2 " held, " $3 " refused" }' "$work/attack-idle.out")
measure_attack idle ""
# A trail of 2,500 more records: locked-out touches, each refused and recorded without the reader.
lock_out_attacker
attack "$work/attack-fill.out" user loop verify '{}' 2500
attack_wait "$work/attack-fill.out" ready 300
attack_stop
grep -q '"locked-out": 2500' "$work/attack-fill.out" || die "the attacker's trail was not written: $(cat "$work/attack-fill.out")"
# What one export of it is: its records (the last line is the seal) and bytes.
read -r trail_lines trail_bytes < <("${as_attacker[@]}" audit export 2>>"$log" </dev/null | wc -lc)
measure_attack exports under_exports
attack_daemon_stop
exec {attack_hold_fd}>&-
rm -rf "$public"

# --- report --------------------------------------------------------------------------

kib() { cell "$1" " KiB"; }
size_mib() { stat -c %s "$1" | awk '{ printf "%.1f MiB", $1 / 1048576 }'; }
per_print() {  # per_print SIZE [-c]: (median at SIZE − median at 1) / (SIZE − 1)
  local a b
  a=$(median "identify-$1${2:-}")
  b=$(median "identify-1${2:-}")
  [ -n "$a" ] && [ -n "$b" ] && (($1 > 1)) || { echo "—"; return; }
  ms "$(awk -v a="$a" -v b="$b" -v n="$1" 'BEGIN { printf "%.0f", (a - b) / (n - 1) }')"
}
per_print_ratio() {
  local a b c d
  a=$(median "identify-$1")
  b=$(median "identify-1")
  c=$(median "identify-$1-c")
  d=$(median "identify-1-c")
  [ -n "$a" ] && [ -n "$b" ] && [ -n "$c" ] && [ -n "$d" ] && (($1 > 1)) || { echo "—"; return; }
  awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN { printf "%.2f×", (a - b) / (c - d) }'
}
overhead() {  # overhead A B: "+X ms (Y %)" of A over B
  local a b
  a=$(median "$1")
  b=$(median "$2")
  [ -n "$a" ] && [ -n "$b" ] || { echo "—"; return; }
  awk -v a="$a" -v b="$b" 'BEGIN { d = (a - b) / 1000
    printf "%+.1f ms (%.0f %% of touchgate)", d, (a - b) * 100 / a }'
}
pct() {  # pct A B: median(A) as a percentage of median(B)
  local a b
  a=$(median "$1")
  b=$(median "$2")
  [ -n "$a" ] && [ -n "$b" ] || { echo "?"; return; }
  awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", a * 100 / b }'
}
load_now() { cut -d' ' -f1-3 /proc/loadavg; }

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain -- Sources Package.swift bench 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)
swift_version=$(swift --version 2>/dev/null | grep -o 'Swift version [0-9.]*' | head -1)
libfprint_version=$(pkg-config --modversion libfprint-2)

if [ "$only" != daemon ]; then
out "# Benchmarks" ""
out "Produced by \`make bench\` (\`bench/run.sh\`) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit \`$commit\`$dirty," \
  "release build. Machine: $cpu, $(nproc) CPUs, $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r);" \
  "$swift_version, libfprint $libfprint_version. Load average (1, 5, 15 min): $load_start at the start," \
  "$(load_now) at the end (the machine was shared)." ""
out "Every figure is the **median of $runs runs** (of $((runs * 2)) for verify on virtual_image, whose match time" \
  "varies more than the difference sought), **with the minimum and maximum in brackets**, all taken in this" \
  "one run of the suite. Times are wall-clock times of whole processes, from fork to exit, taken by" \
  "[hyperfine](https://github.com/sharkdp/hyperfine) ($(hyperfine --version | cut -d' ' -f2)): each command is a shell" \
  "function run by bash, and hyperfine subtracts its measure of that shell's own start; the start-up figures" \
  "of section 7 (\`--version\`, \`status\`, \`secret list\`, the reuse-window \`secret get\`s there) are" \
  "programs hyperfine execs itself (\`--shell=none\`), since bash's own fork and exec (about 0.7 ms) would" \
  "be a fifth of the 4 ms they are held to. After one untimed" \
  "warm-up each (more where the table says), compared commands take turns, two runs at a time (A A B B …)," \
  "so that a change in machine load hits them alike. The rate" \
  "figures, the galleries of 100 prints and more, and the requests timed under an attack (each after the" \
  "attack is set up afresh, by this script) are timed by the script itself, from fork to exit, the" \
  "compared commands' runs alternating. Nothing here is asserted by the test suite." ""
out "**How the finger is played.** libfprint's virtual readers stand in for a USB reader. \`bench/feeder.c\`" \
  "runs the command under test with the reader's socket in a private directory. On **virtual_image** it" \
  "watches the command's standard error, and each time a prompt line appears (touchgate prints one when" \
  "the reader starts waiting for a finger, \"Swipe your … finger\"), it sends a NIST image; an image sent" \
  "earlier would trip libfprint. The C reference (\`bench/reference.c\`) listens to the device's" \
  "\`finger-status\` property and prints the same kind of line at the same moment, so both programs are" \
  "answered by the same code after the same event. On **virtual_device** the feeder sends \`SCAN <id>\`" \
  "as soon as the driver listens, ahead of the operation (the driver queues commands). The feeder is a" \
  "few hundred microseconds of C and is inside both timings; \`Tools/virtual-finger\` does the same job for" \
  "the setup enrollments, but as a Swift process its own start-up would sit inside every timing, and it" \
  "does not drive virtual_device." ""
out "**The reference** makes the calls \`touchgate verify\` needs and nothing else: \`fp_context_new\`, first" \
  "device, \`fp_device_open_sync\`, \`fp_print_deserialize\` of the stored template(s), \`fp_device_verify_sync\`" \
  "(or \`_identify_sync\`), \`fp_device_close_sync\`. It reads the templates from a flat file that" \
  "\`touchgate-bench export\` writes from the same store touchgate reads." ""

out "## 1. Verify overhead" ""
out "Enrolled: *whorl* (5 scans of the NIST image). Match: *whorl* presented; no match: *arch* presented." \
  "Templates in the clear (no vault yet), so the first four rows are the reader path alone; the last row" \
  "is the same verify once a vault exists and is unlocked: the key is read from the kernel keyring and" \
  "the template unsealed (measured later in the run, beside its own reference runs)." ""
out "| reader, case | \`touchgate verify\` | C reference | ratio | touchgate's overhead |"
out "| --- | --- | --- | --- | --- |"
for row in "virtual_image, match:verify-image-match" "virtual_image, no match:verify-image-miss" \
  "virtual_device, match:verify-device-match" "virtual_device, no match:verify-device-miss"; do
  label=${row%%:*} name=${row#*:}
  out "| $label | $(cell "$name") | $(cell "$name-c") | $(ratio "$name" "$name-c") | $(overhead "$name" "$name-c") |"
done
name=verify-vault-device-match
out "| virtual_device, match, vault unlocked (template sealed) | $(cell "$name") | $(cell "$name-c") | $(ratio "$name" "$name-c") | $(overhead "$name" "$name-c") |"
out ""
out "Inside libfprint (from its debug log: context created → reader closed; separate runs with" \
  "\`G_MESSAGES_DEBUG=all\`):" ""
out "| case | touchgate | C reference |"
out "| --- | --- | --- |"
out "| virtual_device, match | $(cell inside-device-match) | $(cell inside-device-match-c) |"
out "| virtual_image, no match | $(cell inside-image-miss) | $(cell inside-image-miss-c) |"
out ""
out "**Bound:** on virtual_image, libfprint's own work (NBIS minutiae detection on the scan, then bozorth3" \
  "matching) and the driver's timing; on virtual_device nothing is matched, so what is left is process" \
  "start-up and setup."
device_share=$(share verify-device-match verify-device-match-c)
image_share=$(share verify-image-miss verify-image-miss-c)
match_share=$(share verify-image-match verify-image-match-c)
if [ "${device_share:-0}" -gt 10 ] || [ "${image_share:-0}" -gt 10 ] || [ "${match_share:-0}" -gt 10 ]; then
  out "**Our overhead is over 10 %** of the total where libfprint has little to do: $device_share % on virtual_device;" \
    "on virtual_image $image_share % of a no-match and $match_share % of a match. Most of it is spent outside" \
    "libfprint (compare the table just above with the first)." \
    "What is left is start-up of a Swift process with Foundation and its ICU data (\`--version\`, figure 6)," \
    "opening the SQLite store (connection pool, WAL, migration check) before the reader is opened, and exit." \
    "A resident agent keeping the process, the database and the reader open (the daemon the design names as" \
    "the stronger boundary) would remove nearly all of it; short of that, a statically linked binary" \
    "without Foundation's ICU, and opening the database while libfprint opens the reader, would shrink it."
fi
out ""

out "## 2. Identify against galleries" ""
# shellcheck disable=SC2086  # one word per print
gallery_names=$(printf '*%s*, ' $gallery_prints)
out "Gallery: ${gallery_names%, } enrolled once each on virtual_image (5 scans of the NIST image), their" \
  "templates replicated under distinct user/finger keys (\`touchgate-bench replicate\`, through \`PrintStore\`)" \
  "up to the size shown, in turn; probe *$probe*, which matches none of them, so every print is compared." \
  "Per print: (median at N − median at 1) / (N − 1). With a single print touchgate verifies instead of" \
  "identifying (both compare one template); the reference always calls identify." ""
if [ "$probe" = whorl ] && [ "$gallery_prints" = "loop-right tented_arch arch" ]; then
  out "Why *whorl* probes and *arch* is in the gallery: bozorth3's cost depends on the pair of prints, and" \
    "when this suite was written a comparison involving *arch* cost 2 to 8 times one between the other three." \
    "*arch* as the probe against *whorl*, *loop-right* and *tented_arch* (\`BENCH_PROBE=arch" \
    "BENCH_GALLERY_PRINTS='whorl loop-right tented_arch' make bench\`) made each 1000-print run take over" \
    "3 minutes and this figure most of an hour. The cost per print follows that choice; the per-print ratio" \
    "should not, while the whole-process ratio nears 1 as matching gets dearer." ""
fi
out "| prints | \`touchgate identify\` | C reference | ratio | touchgate per print | reference per print | per-print ratio |"
out "| --- | --- | --- | --- | --- | --- | --- |"
for size in $galleries; do
  row="| $size | $(cell "identify-$size") | $(cell "identify-$size-c") | $(ratio "identify-$size" "identify-$size-c")"
  out "$row | $(per_print "$size") | $(per_print "$size" -c) | $(per_print_ratio "$size") |"
done
out ""
out "**Bound:** libfprint's bozorth3 matching: each stored print holds the minutiae of its 5 enrollment" \
  "scans and a print that does not match is compared with all 5, on one thread. Touchgate adds a fixed cost" \
  "(as in figure 1) plus loading and deserializing each template from SQLite."
largest=${galleries##* }
first=${galleries%% *}
out "Touchgate's share of the total: $(share "identify-$first" "identify-$first-c") % for a gallery of $first," \
  "$(share "identify-$largest" "identify-$largest-c") % for $largest (a negative share means touchgate was" \
  "the faster, i.e. within the noise). Where it is over 10 % it is the fixed start-up and store opening of" \
  "figure 1, and goes the same way."
out ""

out "## 3. Secret release" ""
out "\`touchgate secret get\` of an item with policy \`biometry-any\`, inside the reuse window opened by one touch" \
  "just before (no touch needed): vault unlocked, key in the kernel keyring. Beside it \`pass show\` (pass" \
  "1.7, GnuPG with a Curve25519 key whose passphrase is cached by gpg-agent) for the same value." ""
out "| command | time | peak RSS |"
out "| --- | --- | --- |"
out "| \`touchgate secret get\` | $(cell secret-get) | $(kib rss-secret-get) |"
if [ -z "$pass_missing" ]; then
  out "| \`pass show\` (gpg, cached agent) | $(cell pass-show) | $(kib rss-pass-show) |"
  out "| ratio touchgate / pass | $(ratio secret-get pass-show) | |"
else
  out "| \`pass show\` | not available: $pass_missing could not be installed | |"
fi
out ""
out "**Bound:** process start-up and opening the vault (SQLite, keyring read, session state), then the audit" \
  "record of the grant, committed before the item is decrypted (with \`synchronous = $synchronous\`; figure 5)." \
  "Start-up alone (\`--version\`, timed alongside) is $(pct version-secret secret-get) % of it. Nothing does less for the same" \
  "guarantees; a resident agent would remove the start-up and the opening of the database. \`pass show\` is" \
  "a shell script that starts gpg, which asks the agent to decrypt."
out ""

out "## 4. Unlock" ""
out "| command | time |"
out "| --- | --- |"
out "| \`touchgate unlock\` (passphrase on a file descriptor) | $(cell unlock) |"
out "| Argon2id alone, same limits: \`crypto_pwhash\` in a minimal Swift process (\`touchgate-bench argon2id\`) | $(cell argon2id) |"
out "| \`touchgate status\` (start-up and opening the vault, no key derivation) | $(cell status) |"
out "| share of unlock beyond that Argon2id process | $(share unlock argon2id) % |"
out ""
out "**Bound:** Argon2id by design (libsodium MODERATE: 3 passes over 256 MiB), meant to cost about a" \
  "second so that guessing passphrases offline is slow; unlock runs it once. Beyond a bare process running" \
  "it: Foundation's larger start-up, opening the vault (\`touchgate status\` is start-up plus that), the" \
  "keyring write and the audit record."
if [ "$(share unlock argon2id)" -gt 10 ] 2>/dev/null; then
  out "That rest is over 10 % here; it is the same fixed cost as in figures 1 and 3 and would go the same way" \
    "(a resident agent), though for a command run once per boot it hardly matters."
fi
out ""

out "## 5. Audit trail" ""
out "| measure | value |"
out "| --- | --- |"
describe() { [ "$1" = FULL ] && echo "each durable" || echo "not each durable"; }
out "| records appended per second as shipped (\`synchronous = $synchronous\`, $(describe "$synchronous"); sequential, one transaction each, runs of 1000) | $(cell audit-append " /s") |"
out "| the same with the writer set to \`synchronous = $other\` ($(describe "$other")) | $(cell audit-append-other " /s") |"
out "| one 4 KiB overwrite + \`fdatasync\` on the same disk (what each durable commit waits for) | $(cell fsync " µs") |"
out "| \`touchgate audit verify\`, ${audit_count:-$audit_records records} (whole process) | $(cell audit-verify) |"
out "| \`AuditLog.verify()\` on the same log, in a minimal Swift process (\`touchgate-bench audit-verify\`) | $(cell audit-verify-library) |"
out ""
out "Each append is one \`BEGIN IMMEDIATE\` transaction (read the head, insert, update the head) with one keyed" \
  "BLAKE2b; the journald copy is off here. Append rates are taken in process (\`touchgate-bench audit-append\`," \
  "first run of each series dropped as warm-up); verify through the CLI and, for comparison, from a" \
  "minimal Swift process that opens the log and calls \`AuditLog.verify()\`." ""
read -r durable_us shipped_us < <(awk -v r="$(median "$durable")" -v q="$(median "$bare")" \
  'BEGIN { printf "%.0f %.0f\n", r ? 1e6 / r : 0, q ? 1e6 / q : 0 }')
out "**Bound:** a durable append takes $durable_us µs here: $shipped_us µs of transaction and MAC (the" \
  "\`synchronous = NORMAL\` row) and the rest waiting for the disk to acknowledge SQLite's WAL (an fdatasync alone:" \
  "$(median fsync) µs). So fsync bounds it, and on a laptop SSD, where a flush takes longer than on this" \
  "virtual disk, it bounds it more. Verify reads every record and recomputes its MAC: linear in the" \
  "number of records."
if [ "$shipped_us" -gt 0 ] && [ $((shipped_us * 10)) -gt "$durable_us" ]; then
  out "The transaction itself is over 10 % of a durable append: it reads the head row and the last record," \
    "inserts, rewrites the head and compiles each statement anew (\`execute(sql:)\`); cached statements" \
    "and skipping the last-record query when the head row is authentic would trim it. Every decision must" \
    "be on disk before it takes effect, so the fsync itself cannot be batched away for a single writer."
fi
out "\`touchgate audit verify\` spends $(share audit-verify audit-verify-library) % of its time beyond that minimal process:" \
  "opening the vault (its metadata, settings and policy state) and the argument parser; both pay Swift and Foundation start-up (figure 6)."
if [ "$synchronous" != FULL ]; then
  out "" "**Not durable as shipped.** The writer runs with \`synchronous = $synchronous\`: commits are not" \
    "fsynced one by one, and the last records before a power cut or kernel crash can be lost (the chain" \
    "stays consistent; the head moves back with them). The store's \`DatabasePool\` must set \`synchronous = FULL\`" \
    "on its writer after turning WAL on."
fi
out ""

out "## 6. Start-up and memory" ""
out "| measure | value |"
out "| --- | --- |"
out "| \`touchgate --version\` | $(cell version) |"
out "| \`/bin/true\` (process start floor) | $(cell true) |"
out "| the front, \`touchgate --version\` (one static executable: $(size_mib "$touchgate")) | $(cell start-front) |"
out "| \`touchgate-client --version\` (every command the daemon serves; a name of touchgate-cli) | $(cell start-client) |"
out "| \`touchgate-cli --version\` (every command of the personal mode; $(size_mib "$cli")) | $(cell start-cli) |"
out "| \`touchgated --version\` (a name of touchgate-cli) | $(cell start-daemon) |"
out "| \`touchgate-collector --version\` ($(size_mib "$bin/touchgate-collector")) | $(cell start-collector) |"
out "| a two-line Swift program importing Foundation, dynamically linked | $(cell startup-dynamic) |"
out "| the same program with \`-static-stdlib\` (Swift runtime and Foundation linked in) | $(cell startup-static) |"
out "| peak RSS, \`touchgate verify\` (virtual_image, match) | $(kib rss-verify) |"
out "| peak RSS, C reference verify | $(kib rss-verify-c) |"
out "| peak RSS, \`touchgate secret get\` | $(kib rss-secret-get) |"
out ""
out "Sizes are of this build's unstripped binaries (the packages strip them). The Swift runtime is linked" \
  "into each program statically; the installed \`touchgate\` package holds two copies of it, the front's and" \
  "touchgate-cli's, which every other installed program is a name of." ""
out "**Bound:** process start-up: the dynamic loader and the shared libraries touchgate-cli links" \
  "($(ldd "$cli" | wc -l) objects, libfprint and GLib among them), against none for the front," \
  "which is why the front stays a program of its own. \`--version\`, timed alongside them, is $(pct version-secret secret-get) % of" \
  "\`secret get\` and $(pct version-verify verify-device-match) % of \`verify\` on virtual_device." \
  "Memory: the Swift runtime, the store's connection pool and libfprint's own (see the reference);" \
  "nothing grows with the secret."
fi  # the in-process sections' report

# Section 7 goes to a file of its own: appended to the whole report, or, with
# BENCH_ONLY=daemon, put in place of the previous section 7 of BENCHMARKS.md.
daemon_report=$work/daemon.md
dout() { printf '%s\n' "$@" >>"$daemon_report"; }
dout "## 7. System daemon (touchgated)" ""
if [ "$only" = daemon ]; then
  dout "Measured on its own (\`BENCH_ONLY=daemon make bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
    "\`$commit\`$dirty, same machine; load average $load_start at the start, $(load_now) at the end. Sections" \
    "1–6 above are from the run named at the top." ""
fi
dout "\`touchgated --socket\` in the foreground, as root, with a virtual_device reader of its own (reached directly," \
  "no fprintd) and its store in a private state directory; \`touchgate\` reaches it through \`TOUCHGATE_SOCKET\`." \
  "The daemon opens the reader at the first request and keeps it open (it opened it $daemon_opened time(s) in this" \
  "whole section); the feeder plays the finger on the daemon's reader (\`FEEDER_SOCKET\`), sending \`SCAN whorl\`" \
  "before the client starts, as in figure 1. Same medians and ranges as above. The start-up rows (\`--version\`," \
  "\`status\`, \`secret list\` and the reuse-window \`secret get\`s, held to 4 ms or compared with each other) are" \
  "programs hyperfine execs itself (\`--shell=none\`, the environment set before): a shell function would add" \
  "bash's own fork and exec, about 0.7 ms here. The rows with a finger are shell functions, as above." ""
under() {  # under A MS: whether median(A) is at most MS milliseconds
  local a
  a=$(median "$1")
  [ -n "$a" ] || { echo "not measured"; return; }
  awk -v a="$a" -v l="$2" 'BEGIN { print (a <= l * 1000) ? "≤ " l " ms: met" : "≤ " l " ms: **not met**" }'
}
at_least() {  # at_least A N: whether median(A) is at least N
  local a
  a=$(median "$1")
  [ -n "$a" ] || { echo "not measured"; return; }
  awk -v a="$a" -v l="$2" 'BEGIN { print (a >= l) ? "met" : "**not met**" }'
}
verdict() {  # verdict A B LIMIT: whether median(A) / median(B) is within LIMIT
  local a b
  a=$(median "$1")
  b=$(median "$2")
  [ -n "$a" ] && [ -n "$b" ] || { echo "not measured"; return; }
  awk -v a="$a" -v b="$b" -v l="$3" 'BEGIN { print (a / b <= l) ? "≤ " l "×: met" : "≤ " l "×: **not met**" }'
}
dout "| measure | through touchgated | beside it | ratio | target |"
dout "| --- | --- | --- | --- | --- |"
dout "| \`touchgate verify\`, virtual_device, match, vault unlocked / C reference opening the reader per call | $(cell daemon-verify) | $(cell daemon-verify-c) | $(ratio daemon-verify daemon-verify-c) | $(verdict daemon-verify daemon-verify-c 1.0) |"
dout "| the same verify from a small C client (\`bench/client.c\`) / C reference | $(cell daemon-verify-client) | $(cell daemon-verify-c) | $(ratio daemon-verify-client daemon-verify-c) | |"
dout "| \`touchgate secret get\` in the reuse window / the same in-process | $(cell daemon-secret) | $(cell inprocess-secret) | $(ratio daemon-secret inprocess-secret) | $(verdict daemon-secret inprocess-secret 0.5) |"
dout "| the same request from a small C client (\`bench/client.c\`) / \`touchgate secret get\` through the daemon | $(cell daemon-secret-c) | $(cell daemon-secret) | $(ratio daemon-secret-c daemon-secret) | |"
dout "| \`touchgate verify\` through the daemon / the same verify from the C client (what the front adds) | $(cell daemon-verify) | $(cell daemon-verify-client) | $(ratio daemon-verify daemon-verify-client) | |"
dout "| \`touchgate --version\` (the front answers it, in either mode) / \`touchgate-client --version\` | $(cell version-front) | $(cell version-daemon) | $(ratio version-front version-daemon) | $(under version-front 4) |"
dout "| \`touchgate-client --version\` through the daemon (what every other command starts with, after the front's exec) / \`touchgate-cli --version\` (the personal mode's) | $(cell version-daemon) | $(cell version-personal) | $(ratio version-daemon version-personal) | |"
dout "| \`touchgate status\` through the daemon (start, request, output) / \`touchgate-client --version\` | $(cell status-daemon) | $(cell version-daemon) | $(ratio status-daemon version-daemon) | $(under status-daemon 4) |"
dout "| \`touchgate secret list\` through the daemon / \`touchgate-client --version\` | $(cell list-daemon) | $(cell version-daemon) | $(ratio list-daemon version-daemon) | $(under list-daemon 4) |"
dout "| a two-line Swift program importing Foundation, dynamically linked / with \`-static-stdlib\` | $(cell daemon-tiny-dynamic) | $(cell daemon-tiny-static) | $(ratio daemon-tiny-dynamic daemon-tiny-static) | |"
dout ""
dout "The personal mode as the packages set it up: \`touchgate agent\` hosting the store (started here as a"
dout "session's systemd starts it at the first connection), with a virtual_device reader of its own; the commands"
dout "reach it at \`\$XDG_RUNTIME_DIR/touchgate/socket\` with nothing set, measured in the same runs as the rows above."
dout ""
dout "| measure | personal mode, through touchgate agent | beside it | ratio | target |"
dout "| --- | --- | --- | --- | --- |"
dout "| \`touchgate verify\`, match / C reference opening the reader per call | $(cell agent-verify) | $(cell daemon-verify-c) | $(ratio agent-verify daemon-verify-c) | $(verdict agent-verify daemon-verify-c 1.1) |"
dout "| \`touchgate secret get\` in the reuse window / the same through touchgated | $(cell agent-secret) | $(cell daemon-secret) | $(ratio agent-secret daemon-secret) | $(verdict agent-secret daemon-secret 1.2) |"
dout "| \`touchgate status\` / the same through touchgated | $(cell agent-status) | $(cell status-daemon) | $(ratio agent-status status-daemon) | $(verdict agent-status status-daemon 1.2) |"
dout ""
dout "**Through the agent.** The same front and client as through touchgated, and the same service in the agent: the"
dout "store kept open and the unlocked key in its memory. What differs is the choice of the socket: a command reads the"
dout "record the agent keeps beside it (which store it hosts, its pid and start time) instead of asking touchgated's"
dout "fixed place, so it connects once, as through the daemon. The agent keeps the reader open 30 s after a request"
dout "(touchgated keeps it open for good), so a run of commands pays the open once, and the desktop's fprintd gets the"
dout "reader back soon after; the verify row is that run. In-process, every command pays Swift's and the service's"
dout "start-up, opens the store and the reader (section 6, and the in-process release above)."
dout ""
dout "| measure | value |"
dout "| --- | --- |"
dout "| resident memory of touchgated, 1 user's vault unlocked (VmRSS) | ${daemon_rss_1:-?} KiB |"
dout "| resident memory of touchgated, 100 users' vaults unlocked (99 more uids, each \`init\` through the socket) | ${daemon_rss_100:-?} KiB |"
dout "| \`status\` requests per second, 10 C clients at once, 200 requests each on one connection (target ≥ 5,000/s: $(at_least status-rate-c 5000)) | $(cell status-rate-c " /s") |"
dout "| fdatasync, fsync and sync_file_range calls of touchgated during 2,000 of those \`status\` requests (strace -c; target 0) | ${status_syncs:-?} |"
dout "| \`status\` requests per second, 10 \`touchgate status\` loops at once (a process per request) | $(cell status-rate-cli " /s") |"
dout "| \`touchgate\`, the front: what \`ldd\` says of it (its size) | ${front_linking:-?} ($(du -m "$touchgate" | cut -f1) MB) |"
dout "| shared libraries \`touchgate-cli\` loads at start-up (of them, libfprint and the libraries it loads) | ${client_libs:-?} (${client_fprint_libs:-?}) |"
dout "| relocations the dynamic loader applies at \`touchgate-cli\` start-up (relative; by symbol) | ${client_relative:-?}; ${client_symbolic:-?} |"
dout "| shared libraries \`touchgate-client\` loads at start-up (of them, libfprint, GLib, SQLite, libsodium or libpwquality) | ${thin_libs:-?} (${thin_service_libs:-?}) |"
dout ""
rss_per_user=$(awk -v a="${daemon_rss_1:-0}" -v b="${daemon_rss_100:-0}" 'BEGIN { printf "%.0f", (b - a) / 99 }')
dout "**The client.** \`touchgate\` is a front of about a thousand lines without Foundation or libfprint, linked as one" \
  "static executable: for \`verify\` and \`secret get\` through the daemon it sends the request itself and prints what" \
  "\`touchgate-cli\` would. Every other command through the daemon is \`touchgate-client\`, which it execs: installed," \
  "a name of \`touchgate-cli\` (one copy of the Swift runtime in the package, section 13), so it loads the service's" \
  "libraries at start (the rows above) though it uses none of them; the personal mode is \`touchgate-cli\` itself. So the per-touch requests pay about" \
  "what the C client pays ($(ratio daemon-verify daemon-verify-client) of its verify, $(ratio daemon-secret daemon-secret-c)" \
  "of its release), and every other command pays the front's start-up on top of \`touchgate-client\`'s" \
  "(\`--version\` above)." ""
dout "**Verify.** The reference pays for a libfprint context, enumeration and opening the reader on every call;" \
  "the daemon did that once. What \`touchgate verify\` through the daemon pays is the front's start-up, one" \
  "connection, and the daemon's request: checking the user's store (kept open across requests: its files checked" \
  "private and still the ones opened, the audit log's keys read and its head checked), the lockout check (a read:" \
  "an unchanged state is not written), the touch, then the decision and its audit record committed together (one" \
  "fdatasync, figure 5), unsealing the template with the held key." ""
dout "**Secret release.** In-process, every \`secret get\` starts Swift and Foundation, opens SQLite and reads the" \
  "key from the kernel keyring. Through the daemon: the front's start-up, then the daemon checks the kept store and" \
  "the reuse window, writes and commits the audit record, decrypts and sends." ""
if [ -n "$static_stdlib" ]; then
  dout "**Linking.** \`touchgate-cli\` and \`touchgated\` here are linked with (\`make\` does not, yet)" \
    "\`--static-swift-stdlib\`: the Swift runtime, Foundation and ICU's data are in the binary" \
    "($(du -m "$cli" | cut -f1) MB unstripped, $(strip -o "$work/touchgate-stripped" "$cli" && du -m "$work/touchgate-stripped" | cut -f1) MB stripped), not loaded at start-up." \
    "The front is static in every build (\`-static-executable\`)." ""
else
  dout "**Linking.** Linked dynamically (\`BENCH_STATIC_STDLIB=\`), the front excepted (always static)." ""
fi
if verdict daemon-verify daemon-verify-c 1.0 | grep -q "not met"; then
  dout "The verify target is missed in this run: from the C client the daemon's verify is" \
    "$(ratio daemon-verify-client daemon-verify-c) the reference, so what is left is the daemon's work for each decision" \
    "(checking the user's store and its audit log, one durable commit), which the reference does not do." ""
fi
dout "On virtual_device opening the reader is nearly free, which is what makes the reference this fast. A real USB" \
  "reader's open is not: for one driver there is a documented figure, the out-of-tree Goodix 53x5 libfprint driver," \
  "whose open took about 755 ms, about 370 ms after a change to it (pull request 12 of" \
  "github.com/seaweeduk/goodix53x5-libfprint). The daemon pays such an open once, the reference on every call;" \
  "no real reader was measured here." ""
dout "**Memory.** Each further user's unlocked vault costs about $rss_per_user KiB of resident memory (the held" \
  "key in locked memory, and that user's store kept open: SQLite connections and their caches; at most 32" \
  "stores stay open, the least recently used closed first, and each closes after 2 minutes unused);" \
  "the sample user's \`status\` said ${daemon_unlocked:-?} afterwards. The status rate is bound by the store" \
  "work of each request: checking the user's store and audit log and committing its state durably (an fdatasync;" \
  "a profile of the daemon under this load shows SQLite, fdatasync and JSON encoding on top). Connections" \
  "are served in parallel, the durable commits to one user's store one at a time."
dout ""

dout "**The victim under attack.** One local user (the attacker) attacks the daemon with the program the" \
  "availability tests use (\`Tests/AttackPrograms/attack.py\`), while another (the victim) asks for" \
  "\`touchgate status\`, releases a passphrase item (\`secret get --passphrase-fd 0\`, the passphrase on standard" \
  "input) and releases a fresh-touch finger item (\`--policy biometry-any --fresh\`). Both are users the bench makes" \
  "with \`useradd\` (and removes), their programs run under \`setpriv\`. Here the feeder sends \`SCAN whorl\` when the" \
  "victim's client prompts for the finger (\`feeder device-on-prompt\`), not ahead: a touch queued ahead would go to" \
  "whichever request waits at the reader first, the attacker's included. Each attack is made afresh before every" \
  "timed request, except the idle connections and the loop, which run throughout; same medians and ranges" \
  "as above, timed by the script with the three requests' runs alternating." ""
dout "| attack | \`touchgate status\` | passphrase release | finger release |"
dout "| --- | --- | --- | --- |"
dout "| none (as shipped: default limits and deadlines) | $(cell attack-none-status) | $(cell attack-none-passphrase) | $(cell attack-none-finger) |"
dout "| four stalled \`audit.export\`s of the attacker's trail ($((trail_lines - 1)) records) † | $(cell attack-exports-status) | $(cell attack-exports-passphrase) | $(cell attack-exports-finger) |"
dout "| an unanswered \`secret.add\` and an untouched \`verify\` † | $(cell attack-questions-status) | $(cell attack-questions-passphrase) | $(cell attack-questions-finger) |"
dout "| a queue of six untouched \`verify\`s † | $(cell attack-queue-status) | $(cell attack-queue-passphrase) | $(cell attack-queue-finger) |"
dout "| 20 idle connections from sudo-like processes (real uid the attacker's, effective uid 0) † | $(cell attack-idle-status) | $(cell attack-idle-passphrase) | $(cell attack-idle-finger) |"
dout "| a locked-out attacker's request loop, \`loop verify {} 400\` over and over (as shipped) | $(cell attack-loop-status) | $(cell attack-loop-passphrase) | $(cell attack-loop-finger) |"
dout "| none, the victim at seat0 by logind's stand-in (as shipped) | | | $(cell seat-none-finger) |"
dout "| another user, logged in over ssh, asking for untouched \`verify\`s on 16 connections, the victim at seat0 (as shipped) | | | $(cell seat-loop-finger) |"
dout ""
dout "† touchgated restarted on the same state with \`$attack_options\`: deadlines of 3 s for a" \
  "finger and for an answer (60 s and 120 s as shipped), and a request rate that lets the attacker write its trail" \
  "and restart its attacks before every timed request (as shipped: a burst of 100, then 1 a second)." ""
dout "**The attacks.** *Stalled exports*: four connections each ask for the attacker's whole audit trail" \
  "($((trail_lines - 1)) records, mostly 2,500 refused touches of a locked-out user written beforehand;" \
  "$(awk -v b="$trail_bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB as one export) and never read; the daemon" \
  "cuts each off once its sends have made no progress for 10 s (so each is made afresh). *Unanswered question" \
  "and untouched reader*: a \`secret.add\` whose value is never sent (it ends at the answer deadline and holds no" \
  "reader) and a \`verify\` nobody touches, holding the reader until its finger deadline. *Queue*: six \`verify\`s" \
  "sent at once and never touched. *Idle sudo-like connections*: what \`sudo\` prompts of a user not in sudoers" \
  "would hold; they count against the attacker (${idle_counts:-?}: the per-user share is 16), not against the" \
  "victim. *Request loop*: a locked-out attacker's touches, each refused without the reader; past the burst" \
  "they are refused as over the rate, recorded once ($loop_rounds rounds of 400 during these runs: ${loop_counts:-?})." ""
dout "**What bounds the victim.** \`status\` and the passphrase release need no reader and wait for no other user's" \
  "request. The finger release needs the reader: behind an untouched \`verify\` it waits for the request holding" \
  "the reader to reach its finger deadline (3 s here, \`--finger-timeout\`; 60 s as shipped; the attack starts" \
  "about half a second before each timed request, hence about 2.5 s), then gets the next turn, the turns going to the user served least recently, so a queue of six waits no longer than one touch." \
  "Those users have no login session at this machine's seat (no logind here), so nobody is put first. With logind" \
  "saying the victim is at seat0 (the last two rows), the victim's request ends the turn of the attacker, who is" \
  "elsewhere, at once, and the attacker gets at most 20 s of the reader in any minute over its 16 connections" \
  "(refused with \`limit\` beyond that): the finger deadline no longer bounds the victim, the cancelling of the attacker's" \
  "operation and the victim's own touch do (docs/PROTOCOL.md, \"Sharing the daemon\")." \
  "Under the request loop every request shares the CPU with the loop and the daemon's answers to it ($(nproc) CPUs here)." \
  "The rows are taken one after another, not interleaved with each other, on a machine others use (load average" \
  "at the top of this section): a difference of a few tens of milliseconds between two rows' \`status\` or" \
  "passphrase release is as likely the machine's load as the attack; the finger deadline is not."
dout ""

# The sections after 7 (8, fleet collection, comes from bench/fleet.sh and carries its own date
# and commit) are kept as they are in the existing file.
later_sections() {
  [ -f "$output" ] || return 0
  awk '/^## 7\. System daemon/ { seven = 1; next } seven && /^## / { after = 1 } after { print }' "$output"
}
later=$(later_sections)
if [ "$only" = daemon ]; then
  [ -f "$output" ] || die "$output does not exist: run the whole suite first"
  # Everything up to the old section 7 (or the whole file), then the new one.
  awk '/^## 7\. System daemon/ { exit } { print }' "$output" >"$report"
  [ -z "$(tail -1 "$report")" ] || echo >>"$report"
  cat "$daemon_report" >>"$report"
else
  out ""
  cat "$daemon_report" >>"$report"
fi
[ -z "$later" ] || printf '%s\n' "$later" >>"$report"
cp "$report" "$output"
cat "$report"
say "wrote $output"
