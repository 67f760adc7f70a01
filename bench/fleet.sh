#!/usr/bin/env bash
# Fleet collection benchmark (`BENCH_ONLY=fleet make bench`, or bench/fleet.sh BIN_DIR):
# records shipped per second by `touchgate audit ship` and the collector's verify rate,
# over one million records, and how both grow with the number of machines.
#
# A real PostgreSQL 15 cluster is made in a temporary directory (run as `postgres`, on a
# free loopback port, fsync on as shipped). One personal store is filled with
# FLEET_TRAIL records (touchgate-bench audit-fill: real, validly chained and sealed
# records) and copied for every simulated machine, so each machine ships a genuine trail.
#
# Environment:
#   FLEET_TRAIL=25000          records per machine
#   FLEET_MACHINES="1 4 16"    machines shipping at once, for the shipping rate
#   FLEET_TOTAL=1000000        records in the database when verify is timed (FLEET_TOTAL / FLEET_TRAIL machines)
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 8. Fleet")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
trail=${FLEET_TRAIL:-25000}
machines_list=${FLEET_MACHINES:-"1 4 16"}
total=${FLEET_TOTAL:-1000000}
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
pg=/usr/lib/postgresql/15/bin
say() { printf 'bench fleet: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
[ -x "$pg/initdb" ] || { say "PostgreSQL 15 is missing: apt-get install postgresql"; exit 1; }
[ -x /usr/bin/time ] || { say "GNU time is missing (for the collector's peak memory): apt-get install time"; exit 1; }
for tool in touchgate touchgate-collector touchgate-bench; do
  [ -x "$bin/$tool" ] || { say "$bin/$tool is missing: swift build -c release"; exit 1; }
done

work=$(mktemp -d /tmp/touchgate-fleet.XXXXXX)
chmod 755 "$work"
mkdir "$work/pg" && chown postgres: "$work/pg"
as_postgres() { setpriv --reuid=postgres --regid=postgres --clear-groups -- "$@"; }
cleanup() { as_postgres "$pg/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_postgres "$pg/initdb" -D "$work/pg/data" -A trust -U postgres -E UTF8 >/dev/null
as_postgres "$pg/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w \
  -o "-p $port -k $work/pg -c listen_addresses=127.0.0.1" start >/dev/null
export TOUCHGATE_COLLECTOR_DATABASE="host=127.0.0.1 port=$port user=postgres dbname=postgres"
"$bin/touchgate-collector" init >/dev/null
"$bin/touchgate-collector" keygen --name enroll.bench --out "$work/enrollment.key" >/dev/null
"$bin/touchgate-collector" keygen --witness --name witness.bench --out "$work/witness.key" >/dev/null
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f s", b - a }'; }

say "filling one store with $trail records"
mkdir -p -m 700 "$work/source/data"
"$bin/touchgate-bench" audit-fill --data "$work/source/data" --total "$trail" >/dev/null

made=0
machine() {  # machine N: a copy of the source store under the name mN, registered
  local name=m$1 home=$work/machines/m$1
  mkdir -p "$home"
  cp -a "$work/source/data" "$home/data"
  printf 'database = %s\nmachine = %s\n' "$TOUCHGATE_COLLECTOR_DATABASE" "$name" >"$home/fleet.conf"
  chmod 644 "$home/fleet.conf"
}
ship() {  # ship N: machine N ships its whole trail
  HOME=$work/machines/m$1 XDG_DATA_HOME=$work/machines/m$1/data TOUCHGATE_SOCKET= \
    "$bin/touchgate" audit ship --config "$work/machines/m$1/fleet.conf" >/dev/null
}

rows=()
for count in $machines_list; do
  first=$((made + 1))
  for ((i = first; i < first + count; i++)); do machine "$i"; done
  made=$((made + count))
  start=$(now)
  for ((i = first; i < first + count; i++)); do ship "$i" & done
  wait
  end=$(now)
  rows+=("| $count machine(s) at once, $((count * trail)) records | $(seconds "$start" "$end") | $(rate $((count * trail)) "$start" "$end") /s |")
  say "shipped $count machine(s): $(rate $((count * trail)) "$start" "$end") records/s"
done

# Up to FLEET_TOTAL records in all, four machines at a time.
needed=$((total / trail))
while ((made < needed)); do
  batch=$((needed - made < 4 ? needed - made : 4))
  for ((i = made + 1; i <= made + batch; i++)); do machine "$i"; done
  for ((i = made + 1; i <= made + batch; i++)); do ship "$i" & done
  wait
  made=$((made + batch))
done
stored=$(/usr/bin/psql "$TOUCHGATE_COLLECTOR_DATABASE" -XAtqc "SELECT count(*) FROM records")
((stored == made * trail)) || { say "the database holds $stored records, not $((made * trail)): shipping lost or repeated some"; exit 1; }
# Every machine's key (they are copies: one key) is registered with the enrollment key, so
# verify checks signatures and registrations too. A witness cosigns the log before the
# registrations and again after them: its second round proves the registrations only
# appended to the log that holds the million records.
pub=$work/machine.pub
/usr/bin/psql "$TOUCHGATE_COLLECTOR_DATABASE" -XAtqc "SELECT encode(public_key, 'hex') FROM trails LIMIT 1" >"$pub"
"$bin/touchgate-collector" witness --key "$work/witness.key" --state "$work/witness.state" >/dev/null
for ((i = 1; i <= made; i++)); do
  "$bin/touchgate-collector" register --machine "m$i" --public-key "$pub" --enrollment-key "$work/enrollment.key" >/dev/null
done
entries=$(/usr/bin/psql "$TOUCHGATE_COLLECTOR_DATABASE" -XAtqc "SELECT count(*) FROM log_entries")
start=$(now)
"$bin/touchgate-collector" witness --key "$work/witness.key" --state "$work/witness.state" >/dev/null
end=$(now)
witness_time=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f ms", (b - a) * 1000 }')
say "witness round over $entries log entries: $witness_time"
trust=(--enrollment-key "$work/enrollment.key.pub" --witness-key "$work/witness.key.pub")

verify_rows=()
for subset in 1 $((made / 4)) "$made"; do
  ((subset >= 1)) || continue
  start=$(now)
  if ((subset == made)); then
    /usr/bin/time -f %M -o "$work/verify.rss" "$bin/touchgate-collector" verify "${trust[@]}" >"$work/verify.out" \
      || { cat "$work/verify.out" >&2; exit 1; }
  else
    for ((i = 1; i <= subset; i++)); do
      /usr/bin/time -f %M -o "$work/verify.rss" "$bin/touchgate-collector" verify "${trust[@]}" --machine "m$i" >/dev/null
    done
  fi
  end=$(now)
  peak=$(awk '{ printf "%.1f MB", $1 / 1024 }' "$work/verify.rss")
  verify_rows+=("| $subset machine(s), $((subset * trail)) records | $(seconds "$start" "$end") | $(rate $((subset * trail)) "$start" "$end") /s | $peak |")
  say "verified $subset machine(s): $(rate $((subset * trail)) "$start" "$end") records/s"
done

section=$work/fleet.md
{
  echo "## 8. Fleet collection (PostgreSQL)"
  echo
  echo "Measured with \`BENCH_ONLY=fleet make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
    "\`$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\`, binaries from \`$bin\`; PostgreSQL 15 on" \
    "loopback in a temporary cluster (defaults, fsync on). Each machine is a copy of one personal store of $trail" \
    "real records; \`touchgate audit ship\` sends them in batches of 5000 (the default), one transaction each."
  echo
  echo "| shipping | wall time | records per second |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "| \`touchgate-collector verify\` with the log's proofs ($stored records stored, $entries log entries) | wall time | records per second | peak RSS of one verify |"
  echo "| --- | --- | --- | --- |"
  printf '%s\n' "${verify_rows[@]}"
  echo
  echo "How they grow: shipping is bound by the database's commits and by the CPU the shippers and the server" \
    "share (two cores here), so it rises from one machine to a few at once and then levels off; more machines" \
    "than that only queue. Verify reads each trail once, in sequence order, holding one trail's seals and" \
    "streaming its records, so its time grows linearly with the records stored and its memory stays flat" \
    "however many there are (one verify per machine, or one for all, in the last column). Past one server," \
    "verify splits by machine (README, \"Fleet\")."
  echo
  echo "The fleet log: every shipped batch is one entry of the RFC 9162 tree (about two rows of" \
    "\`log_nodes\` and one checkpoint each), appended under one lock in the batch's own transaction, and" \
    "each machine checks a consistency and an inclusion proof before moving its cursor: both are in the" \
    "shipping figures above. Verify recomputes the whole log whatever subset it checks (it streams the" \
    "entries: memory stays flat). A witness round (\`touchgate-collector witness\`: the newest checkpoint" \
    "checked against the stored tree and a consistency proof from the witness's last one, O(log n) rows)" \
    "took $witness_time over $entries entries."
  echo
} >"$section"
replace_section 8 "$section" "$output"
cat "$section"
