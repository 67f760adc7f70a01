#!/usr/bin/env bash
# SSH agent benchmark (`BENCH_ONLY=ssh make bench`, or bench/ssh.sh BIN_DIR): touchgate agent
# beside OpenSSH's own ssh-agent in the same run, each with one Ed25519 key.
#
# - listing the keys (`ssh-add -L`);
# - a signature inside the reuse window (`ssh-keygen -Y sign`, no touch: the window was
#   opened by a touch before the timed runs);
# - a signature that needs a touch (a `--fresh` key), against `touchgate verify` with the
#   same finger: both play the whorl print on libfprint's virtual_device reader through the
#   feeder (no image to process), so what is compared is what each adds around the touch.
#
# Environment:
#   BENCH_RUNS=20              timed runs per figure
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 9. SSH agent")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
runs=${BENCH_RUNS:-20}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
fixtures=${TOUCHGATE_FIXTURES:-$root/../shared/fixtures}
say() { printf 'bench ssh: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
for tool in hyperfine ssh-agent ssh-add ssh-keygen gcc; do
  command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install hyperfine openssh-client gcc"; exit 1; }
done
[ -x "$bin/touchgate" ] || { say "$bin/touchgate is missing: swift build -c release"; exit 1; }

work=$(mktemp -d /tmp/touchgate-ssh-bench.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  TOUCHGATE_SOCKET= XDG_DATA_HOME=$work/verify-data "$bin/touchgate" lock >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_RUNTIME_DIR=$work/run TMPDIR=$work/tmp
mkdir -p -m 0700 "$HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" "$TMPDIR"
unset SSH_AUTH_SOCK FP_VIRTUAL_IMAGE FP_VIRTUAL_DEVICE
gcc -O2 -Wall -Wextra -Werror -o "$work/feeder" "$root/bench/feeder.c"
feeder=$work/feeder

say "a vault with whorl enrolled and two keys (one fresh)"
printf 'bench passphrase for ssh\n' | "$bin/touchgate" init --kdf minimum --passphrase-fd 0 >/dev/null 2>&1
# On virtual_device, whose scans libfprint does not process: a touch then costs what the
# agent or touchgate verify adds around the reader, which is what the touch row compares.
scans=whorl,whorl,whorl,whorl,whorl
printf 'bench passphrase for ssh\n' | "$feeder" device "$scans" -- "$bin/touchgate" enroll --json --finger right-index \
  --passphrase-fd 0 >/dev/null 2>&1
# touchgate verify's own store, in-process: the agent takes the first store's key out of the
# keyring, and a verify through it would need a finger played into the agent's reader.
verify_env="TOUCHGATE_SOCKET= XDG_DATA_HOME=$work/verify-data"
mkdir -p -m 0700 "$work/verify-data"
printf 'bench passphrase for ssh\n' | env TOUCHGATE_SOCKET= XDG_DATA_HOME="$work/verify-data" \
  "$bin/touchgate" init --kdf minimum --passphrase-fd 0 >/dev/null 2>&1
printf 'bench passphrase for ssh\n' | env TOUCHGATE_SOCKET= XDG_DATA_HOME="$work/verify-data" \
  "$feeder" device "$scans" -- "$bin/touchgate" enroll --json --finger right-index --passphrase-fd 0 >/dev/null 2>&1
"$bin/touchgate" ssh keygen bench >"$work/bench.pub" 2>/dev/null
"$bin/touchgate" ssh keygen bench-fresh --fresh >"$work/fresh.pub" 2>/dev/null
ours=$XDG_RUNTIME_DIR/touchgate/ssh-agent.sock
"$feeder" device-on-prompt whorl -- "$bin/touchgate" agent --json >/dev/null 2>"$work/agent.log" &
pids+=($!)

theirs=$work/ssh-agent.sock
ssh-agent -D -a "$theirs" >/dev/null 2>&1 &
pids+=($!)
# Two keys in each agent, as touchgate agent holds two (the second, --fresh, for the touch
# row): ssh-add parses and prints every key listed.
ssh-keygen -q -t ed25519 -N "" -f "$work/openssh" >/dev/null
ssh-keygen -q -t ed25519 -N "" -f "$work/openssh-second" >/dev/null
for _ in $(seq 100); do [ -S "$ours" ] && [ -S "$theirs" ] && break; sleep 0.05; done
SSH_AUTH_SOCK=$theirs ssh-add -q "$work/openssh" "$work/openssh-second" 2>/dev/null
printf 'a message to sign\n' >"$work/message"

# One touch opens the reuse window for the non-fresh key.
SSH_AUTH_SOCK=$ours ssh-keygen -Y sign -f "$work/bench.pub" -n file <"$work/message" >/dev/null 2>&1 \
  || { say "the first signature through touchgate agent failed:"; cat "$work/agent.log" >&2; exit 1; }

# timed NAME COMMAND: median and range in ms over `runs` runs (hyperfine, through sh).
declare -A median low high
timed() {
  local name=$1
  hyperfine --style=none --runs "$runs" --warmup 3 --export-json "$work/$name.json" "$2" >/dev/null 2>&1 \
    || { say "$name failed: $2"; cat "$work/agent.log" >&2; exit 1; }
  read -r median[$name] low[$name] high[$name] < <(python3 - "$work/$name.json" <<'PY'
import json, statistics, sys
times = json.load(open(sys.argv[1]))["results"][0]["times"]
print(f"{statistics.median(times) * 1000:.2f} {min(times) * 1000:.2f} {max(times) * 1000:.2f}")
PY
)
}
# paired NAME_A NAME_B COMMAND_A COMMAND_B: the two commands in turn, `pairs` times each
# (bench/paired.py), into median, low and high.
pairs=${BENCH_PAIRS:-100}
paired() {
  read -r median[$1] low[$1] high[$1] median[$2] low[$2] high[$2] < <(python3 "$root/bench/paired.py" "$pairs" "$3" "$4") \
    || { say "$1 or $2 failed"; cat "$work/agent.log" >&2; exit 1; }
}
ratio() { awk -v a="${median[$1]}" -v b="${median[$2]}" 'BEGIN { printf "%.2f×", a / b }'; }
cell() { echo "${median[$1]} ms (${low[$1]}–${high[$1]})"; }

say "listing keys ($pairs runs of each, in turn)"
paired list_ours list_theirs "SSH_AUTH_SOCK=$ours ssh-add -L" "SSH_AUTH_SOCK=$theirs ssh-add -L"
say "a signature inside the reuse window ($pairs runs of each, in turn)"
paired sign_ours sign_theirs "SSH_AUTH_SOCK=$ours ssh-keygen -Y sign -f $work/bench.pub -n file <$work/message" \
  "SSH_AUTH_SOCK=$theirs ssh-keygen -Y sign -f $work/openssh.pub -n file <$work/message"
say "one listing on a new connection, the agent's side alone"
read -r round_ours round_theirs < <(python3 - "$ours" "$theirs" <<'PY'
import socket, statistics, struct, sys, time
def listing(path):
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(path)
        connection.sendall(struct.pack(">IB", 1, 11))  # SSH_AGENTC_REQUEST_IDENTITIES
        length = struct.unpack(">I", connection.recv(4, socket.MSG_WAITALL))[0]
        connection.recv(length, socket.MSG_WAITALL)
times = {path: [] for path in sys.argv[1:]}
for turn in range(1050):
    for path in times:
        start = time.perf_counter()
        listing(path)
        if turn >= 50:
            times[path].append(time.perf_counter() - start)
print(" ".join(f"{statistics.median(series) * 1e6:.0f}" for series in times.values()))
PY
)
say "a signature with a touch, against touchgate verify (in-process, a store of its own) with the same finger"
pairs=$runs paired touch_sign touch_verify "SSH_AUTH_SOCK=$ours ssh-keygen -Y sign -f $work/fresh.pub -n file <$work/message" \
  "$verify_env $feeder device whorl -- $bin/touchgate verify"
timed keygen_only "ssh-keygen -Y sign -f $work/openssh -n file <$work/message"

section=$work/section
{
  echo "## 9. SSH agent"
  echo
  echo "Measured with \`BENCH_ONLY=ssh make bench\` on $(date -u '+%Y-%m-%d %H:%M') UTC, commit" \
    "\`$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\`, binaries from \`${bin#"$root"/}\`;" \
    "OpenSSH $(ssh -V 2>&1 | cut -d, -f1 | sed 's/^OpenSSH_//'). Median (range) of whole program runs from the" \
    "shell, the two agents side by side, two Ed25519 keys each, run in turns of one run each so that a machine" \
    "slowing down or speeding up weighs on both alike: $pairs turns for the listings and the signatures, $runs for" \
    "the touches."
  echo
  echo "| measure | touchgate agent | OpenSSH's ssh-agent | ratio | target |"
  echo "| --- | --- | --- | --- | --- |"
  echo "| \`ssh-add -L\` | $(cell list_ours) | $(cell list_theirs) | $(ratio list_ours list_theirs) | ≤ 1.0× |"
  echo "| \`ssh-keygen -Y sign\`, inside the reuse window | $(cell sign_ours) | $(cell sign_theirs) | $(ratio sign_ours sign_theirs) | ≤ 1.5× |"
  echo
  echo "| a touch | signature through the agent (\`--fresh\` key) | \`touchgate verify\` | ratio | target |"
  echo "| --- | --- | --- | --- | --- |"
  echo "| whorl on virtual_device, played by the feeder | $(cell touch_sign) | $(cell touch_verify) | $(ratio touch_sign touch_verify) | ≤ 1.0× |"
  echo
  echo "A listing request on a new connection, timed from the client's connect to the answer read (median of" \
    "1000, in turns): touchgate agent ${round_ours} µs, ssh-agent ${round_theirs} µs."
  echo
  echo "\`ssh-keygen -Y sign\` with the key file itself, no agent: $(cell keygen_only) (what any signature costs" \
    "before an agent is asked). Where touchgate agent's time goes: the agent hosts the store, open between requests" \
    "(as touchgated does), with the unlocked key in its own memory; like ssh-agent, one thread waits for every" \
    "client (epoll) and answers a listing itself, and the requester's process chain is read only for a request that" \
    "needs it. A listing is the public halves kept while nothing in the store's directory changed (inotify: one read" \
    "and one lstat, where checking file by file had cost ssh-add's run 180 µs on a cold cache), after a check that" \
    "the key is held." \
    "A signature is a decision of the key's policy in the service: the authenticated state verified, the key its" \
    "kept listing names unsealed, what is signed judged, the key's last record found by its index in the audit trail" \
    "(the reuse window serves the same destination only), the grant and its record written in one transaction and" \
    "synced before the signature leaves (ssh-agent writes nothing; strace: 1 fdatasync a signature), then Ed25519 by" \
    "libsodium. What is left beyond ssh-agent is spread thin (perf: SQLite, the state's JSON, Swift's reference" \
    "counting); on two cores the agent's threads also share the CPU with the client they serve. Since issue 45 each" \
    "request also passes the host's gate, which names the client and the door in its record, and a signature reads" \
    "which keys the agents offer with the state's check (1.34x before, on a quieter machine: ssh-agent's own" \
    "figures were 17% lower)."
  echo
} >"$section"
replace_section 9 "$section" "$output"
cat "$section"
