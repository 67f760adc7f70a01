#!/usr/bin/env bash
# TPM binding benchmark (`BENCH_ONLY=tpm make bench`, or bench/tpm.sh BIN_DIR): `touchgate
# unlock` of a vault bound to a TPM beside the same unlock of an unbound vault, in the same
# run, with the default Argon2id limits; `status` of each (a bound store reads the TPM's
# counter at every command); and the TPM's own commands (tpm2-tools) beside them. The TPM is
# swtpm on a Unix socket: a hardware TPM is slower per command (tens of milliseconds).
#
# Environment:
#   BENCH_RUNS=5               timed runs per figure (unlock runs Argon2id: about a second each)
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 11. TPM binding")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
runs=${BENCH_RUNS:-5}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
say() { printf 'bench tpm: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
for tool in hyperfine swtpm tpm2_getrandom tpm2_createprimary tpm2_nvdefine tpm2_nvincrement python3; do
  command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install hyperfine swtpm tpm2-tools python3"; exit 1; }
done
[ -x "$bin/touchgate" ] || { say "$bin/touchgate is missing: swift build -c release"; exit 1; }

work=$(mktemp -d /tmp/touchgate-tpm-bench.XXXXXX)
cleanup() {
  [ -f "$work/swtpm.pid" ] && kill "$(cat "$work/swtpm.pid")" 2>/dev/null || true
  for store in plain bound; do XDG_DATA_HOME=$work/$store "$bin/touchgate" lock >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home TOUCHGATE_SOCKET=
mkdir -p -m 0700 "$HOME" "$work/plain" "$work/bound" "$work/tpm"
swtpm socket --tpm2 --tpmstate dir="$work/tpm" --server type=unixio,path="$work/tpm/sock" \
  --ctrl type=unixio,path="$work/tpm/sock.ctrl" --flags not-need-init,startup-clear --daemon --pid file="$work/swtpm.pid"
export TOUCHGATE_TPM_TCTI=swtpm:path=$work/tpm/sock TPM2TOOLS_TCTI=swtpm:path=$work/tpm/sock
passphrase_file=$work/passphrase
printf 'bench passphrase for the tpm\n' >"$passphrase_file"

say "two vaults (default Argon2id limits), one bound to the TPM"
for store in plain bound; do
  XDG_DATA_HOME=$work/$store "$bin/touchgate" init --passphrase-fd 3 3<"$passphrase_file" >/dev/null
done
XDG_DATA_HOME=$work/bound "$bin/touchgate" tpm enroll --passphrase-fd 3 3<"$passphrase_file" >/dev/null
XDG_DATA_HOME=$work/bound "$bin/touchgate" tpm status >&2

say "the TPM's own commands: a counter for tpm2_nvincrement"
tpm2_nvdefine 0x01387480 -C o -s 8 -a "ownerread|ownerwrite|nt=counter|orderly|no_da" >/dev/null
tpm2_nvincrement 0x01387480 -C o

json=$work/results.json
hyperfine --style none --warmup 1 --runs "$runs" --export-json "$json" \
  -n unlock-plain "XDG_DATA_HOME=$work/plain $bin/touchgate unlock --passphrase-fd 3 3<$passphrase_file" \
  -n unlock-bound "XDG_DATA_HOME=$work/bound $bin/touchgate unlock --passphrase-fd 3 3<$passphrase_file" >&2
hyperfine --style none --warmup 3 --runs $((runs * 4)) --export-json "$work/small.json" \
  -n status-plain "XDG_DATA_HOME=$work/plain $bin/touchgate status" \
  -n status-bound "XDG_DATA_HOME=$work/bound $bin/touchgate status" \
  -n tpm-status "XDG_DATA_HOME=$work/bound $bin/touchgate tpm status" \
  -n tpm2_getrandom "tpm2_getrandom 8 >/dev/null" \
  -n tpm2_createprimary "tpm2_createprimary -C o -g sha256 -G ecc256 -c $work/primary.ctx >/dev/null && tpm2_flushcontext -t" \
  -n tpm2_nvincrement "tpm2_nvincrement 0x01387480 -C o" \
  -n tpm2_nvread "tpm2_nvread 0x01387480 -C o >/dev/null" >&2

section=$work/section.md
python3 - "$json" "$work/small.json" "$runs" >"$section" <<'PY'
import json, sys, subprocess, datetime
results = {}
for path in sys.argv[1:3]:
    for r in json.load(open(path))["results"]:
        results[r["command"]] = r
def ms(name):
    r = results[name]; return r["median"] * 1000
def cell(name):
    r = results[name]; return f'{r["median"]*1000:.1f} ms (±{r["stddev"]*1000:.1f})'
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
ratio = ms("unlock-bound") / ms("unlock-plain")
print("## 11. TPM binding")
print()
print(f"Measured on its own (`BENCH_ONLY=tpm make bench`) on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, commit {commit},")
print(f"{sys.argv[3]} runs per unlock (hyperfine, median ± standard deviation), four times as many for the rest. The TPM")
print("is swtpm 0.7.1 on a Unix socket in the same run; a hardware TPM takes tens of milliseconds per command.")
print()
print("| what | figure |")
print("| --- | --- |")
print(f"| `touchgate unlock`, vault without a TPM (Argon2id, default limits) | {cell('unlock-plain')} |")
print(f"| `touchgate unlock`, vault bound to the TPM (Argon2id, then the TPM unseals behind the vault's passphrase guard) | {cell('unlock-bound')} |")
print(f"| ratio, bound / unbound (target ≤ 1.1) | {ratio:.3f} ({'met' if ratio <= 1.1 else 'NOT met'}) |")
print(f"| `touchgate status`, without a TPM | {cell('status-plain')} |")
print(f"| `touchgate status`, bound (the counter checked at open, then the TPM asked for the `tpm` line) | {cell('status-bound')} |")
print(f"| `touchgate tpm status` (counter, passphrase guard and dictionary-attack state) | {cell('tpm-status')} |")
print(f"| TPM's own: `tpm2_getrandom 8` (a round trip, with the tool's start-up) | {cell('tpm2_getrandom')} |")
print(f"| TPM's own: `tpm2_createprimary` ECC P-256 and flush (every seal and unseal makes one) | {cell('tpm2_createprimary')} |")
print(f"| TPM's own: `tpm2_nvincrement` on an orderly counter (each change moves one) | {cell('tpm2_nvincrement')} |")
print(f"| TPM's own: `tpm2_nvread` of that counter | {cell('tpm2_nvread')} |")
print()
print(f"The bound unlock costs {ms('unlock-bound') - ms('unlock-plain'):.0f} ms more than the unbound one: the unseal (a primary key made and")
print("flushed, a salted session and a policy session, TPM2_PolicySecret on the vault's guard, the unseal), the")
print("TPM's identity checked once (a keyed-hash primary key's name) and the counter read when the store opens and")
print("brought up after each commit, beside an Argon2id of most of a second that both run. Every other command of a")
print("bound vault checks the TPM's identity and reads the counter when it opens the store, and moves the counter")
print("after each change it commits; `status` also asks the TPM for its `tpm` line (the counter, the guard and the")
print(f"dictionary-attack state): {ms('status-bound') - ms('status-plain'):.1f} ms more than an unbound vault's `status` here.")
PY
cat "$section"
if [ -f "$output" ]; then replace_section 11 "$section" "$output"; else cp "$section" "$output"; fi
say "wrote section 11 of $output"
