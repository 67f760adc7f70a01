#!/usr/bin/env bash
# AI agents' door benchmark (`BENCH_ONLY=agent make bench`, or bench/agent.sh BIN_DIR): what
# `touchgate run` costs beyond the touch and the command, beside `touchgate secret exec` (the
# same touch, the same release, no filter, no receipt) and beside the command run alone, in
# the same run, in the personal mode on the virtual_device reader (the finger played by
# bench/feeder.c; that driver matches without image processing, so what touchgate adds shows).
# Then the output filter's throughput: 4 MiB of base64 through `run` against the same through `secret exec`.
#
# Environment:
#   BENCH_RUNS=10              timed runs per figure
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 12. AI agents' door")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
runs=${BENCH_RUNS:-10}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
fixtures=${TOUCHGATE_FIXTURES:-$root/../shared/fixtures}
say() { printf 'bench agent: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
for tool in hyperfine gcc python3 base64; do
  command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install hyperfine gcc python3 coreutils"; exit 1; }
done
[ -x "$bin/touchgate" ] || { say "$bin/touchgate is missing: swift build -c release"; exit 1; }
[ -f "$fixtures/prints/whorl.pgm" ] || { say "no fixtures at $fixtures (set TOUCHGATE_FIXTURES)"; exit 1; }

work=$(mktemp -d /tmp/touchgate-agent-bench.XXXXXX)
cleanup() {
  XDG_DATA_HOME=$work/data "$bin/touchgate" lock >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/home/.config TMPDIR=$work/tmp TOUCHGATE_SOCKET=
unset DBUS_SESSION_BUS_ADDRESS FP_VIRTUAL_IMAGE FP_VIRTUAL_DEVICE
mkdir -p -m 0700 "$HOME" "$XDG_DATA_HOME" "$TMPDIR"
gcc -O2 -Wall -Wextra -Werror -o "$work/feeder" "$root/bench/feeder.c"
feeder=$work/feeder
touchgate=$bin/touchgate
whorl=$fixtures/prints/whorl.pgm
printf 'bench passphrase for the agent door\n' >"$work/passphrase"

say "a vault (minimum Argon2id cost), whorl enrolled, one secret"
"$touchgate" init --kdf minimum --passphrase-fd 3 3<"$work/passphrase" >/dev/null
"$touchgate" unlock --passphrase-fd 3 3<"$work/passphrase" >/dev/null
"$feeder" device whorl,whorl,whorl,whorl,whorl -- "$touchgate" enroll --finger right-index --yes --passphrase-fd 3 3<"$work/passphrase" >/dev/null 2>&1
# --fresh: `secret exec` asks for a touch each time, as `run` always does (otherwise it would
# reuse the enrollment's touch and time no touch at all).
printf 'ghp_benchToken0123456789abcdefABCDEF' | "$touchgate" secret add gh-token --policy biometry-any --fresh >/dev/null

# The command: print the variable's length (reads the value, prints none of it).
small='printf "%s\n" "${#GH}"'
large='head -c 3145728 /dev/zero | base64 -w 76'
json=$work/results.json
hyperfine --style none --warmup 2 --runs "$runs" --export-json "$json" \
  -n alone "GH=ghp_benchToken0123456789abcdefABCDEF sh -c '$small'" \
  -n verify "$feeder device whorl -- $touchgate verify" \
  -n exec "$feeder device whorl -- $touchgate secret exec gh-token --env GH -- sh -c '$small'" \
  -n run "$feeder device whorl -- $touchgate run --secret GH=gh-token -- sh -c '$small'" \
  -n alone-4MiB "GH=ghp_benchToken0123456789abcdefABCDEF sh -c '$large' >/dev/null" \
  -n exec-4MiB "$feeder device whorl -- $touchgate secret exec gh-token --env GH -- sh -c '$large' >/dev/null" \
  -n run-4MiB "$feeder device whorl -- $touchgate run --secret GH=gh-token -- sh -c '$large' >/dev/null" >&2

section=$work/section.md
python3 - "$json" "$runs" "$(nproc)" >"$section" <<'PY'
import json, sys, subprocess, datetime
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
def ms(name): return results[name]["median"] * 1000
def cell(name):
    r = results[name]; return f'{r["median"]*1000:.1f} ms (±{r["stddev"]*1000:.1f})'
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print("## 12. AI agents' door")
print()
print(f"Measured on its own (`BENCH_ONLY=agent make bench`) on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, commit {commit},")
print(f"{sys.argv[2]} runs each (hyperfine, median ± standard deviation), {sys.argv[3]} CPUs, the personal mode on the")
print("virtual_device reader (it matches without image processing, so what touchgate adds shows), the finger played by bench/feeder.c. `secret exec` is the same touch (the item is")
print("`--fresh`, so no earlier touch is reused) and release without the filter or the receipt; \"alone\" is the command with the value set by hand, no touchgate at all.")
print()
print("| what | median |")
print("| --- | --- |")
print(f"| the command alone (`sh -c 'printf ${{#GH}}'`) | {cell('alone')} |")
print(f"| `touchgate verify` (the touch alone: open the reader, match) | {cell('verify')} |")
print(f"| `touchgate secret exec gh-token --env GH -- …` (touch, release, exec) | {cell('exec')} |")
print(f"| `touchgate run --secret GH=gh-token -- …` (touch, release, filtered run, signed receipt) | {cell('run')} |")
print(f"| **`run` beyond `secret exec`** (the filter, the receipt, the child and its pipes) | {ms('run') - ms('exec'):.1f} ms |")
print(f"| `run` beyond the command alone (the touch on the virtual reader included) | {ms('run') - ms('alone'):.1f} ms |")
print(f"| 4 MiB of base64 output: alone | {cell('alone-4MiB')} |")
print(f"| 4 MiB of base64 output: through `secret exec` | {cell('exec-4MiB')} |")
print(f"| 4 MiB of base64 output: through `run`, filtered | {cell('run-4MiB')} |")
print(f"| **filter throughput** (4 MiB over the difference from `secret exec`) | "
      f"{4 / max(0.001, (ms('run-4MiB') - ms('exec-4MiB')) / 1000):.0f} MiB/s |")
PY
cat "$section"
replace_section 12 "$section" "$output"
say "wrote section 12 of $output"
