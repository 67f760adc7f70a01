#!/usr/bin/env bash
# Fleet collection benchmark (`BENCH_ONLY=fleet make bench`, or bench/fleet.sh BIN_DIR):
# records shipped per second by `touchgate audit ship` and the collector's verify rate,
# over ten million records, and how both grow with the number of machines; then the scale of
# issue 49: a morning peak of 100,000 machines shipping at once (pgbench, bench/fleet-peak.sql)
# and queries by machine and month on a six-year store of 100 million records.
#
# A real PostgreSQL 15 cluster is made in a temporary directory (run as `postgres`, on a
# free loopback port, fsync on as shipped). One personal store is filled with
# FLEET_TRAIL records (touchgate-bench audit-fill: real, validly chained and sealed
# records) and copied for every simulated machine, so each machine ships a genuine trail.
#
# Environment:
#   FLEET_TRAIL=25000          records per machine
#   FLEET_MACHINES="1 4 16"    machines shipping at once, for the shipping rate
#   FLEET_TOTAL=10000000       records in the database when verify is timed (FLEET_TOTAL / FLEET_TRAIL machines)
#   FLEET_PEAK_MACHINES=100000 machines shipping once each in the morning peak
#   FLEET_PEAK_RECORDS=10      records per machine in the peak (all in one shipment)
#   FLEET_PEAK_CLIENTS="16 64" connections (held open) of each peak run; every run ships FLEET_PEAK_MACHINES machines
#   FLEET_PEAK_RECONNECT=      connections of peak runs that open a new connection per machine (e.g. "64")
#   FLEET_QUERY_RECORDS=100000000  records synthesized in SQL for the queries by machine and month
#   FLEET_QUERY_MACHINES=      machines they belong to (default: FLEET_QUERY_RECORDS / 10000)
#   FLEET_QUERY_MONTHS=72      months they span, ending with the last whole month
#   FLEET_QUERY_CHUNK=4000000  records per INSERT while synthesizing
#   FLEET_QUERY_RUNS=20        queries timed (random machines and months, fixed seed)
#   FLEET_SKIP_PEAK=1, FLEET_SKIP_QUERY=1  leave the peak, or the query store, out
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 8. Fleet")
#
# Disk: about 0.7 GB per million records with their indexes (schema 4), some 80 GB at the
# default sizes; a sample is measured first, and the run refuses to start when the disk
# holding /tmp has too little room. Time: one to three hours at the default sizes on two cores,
# most of it the query store and the peak runs (each run ships 100,000 machines).
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$(cd "$root" && swift build -c release --show-bin-path)}
trail=${FLEET_TRAIL:-25000}
machines_list=${FLEET_MACHINES:-"1 4 16"}
total=${FLEET_TOTAL:-10000000}
peak_machines=${FLEET_PEAK_MACHINES:-100000}
peak_records=${FLEET_PEAK_RECORDS:-10}
peak_clients=${FLEET_PEAK_CLIENTS:-16 64}
peak_reconnect=${FLEET_PEAK_RECONNECT:-}
query_records=${FLEET_QUERY_RECORDS:-100000000}
query_machines=${FLEET_QUERY_MACHINES:-$((query_records >= 20000 ? query_records / 10000 : 1))}
query_months=${FLEET_QUERY_MONTHS:-72}
query_chunk=${FLEET_QUERY_CHUNK:-4000000}
query_runs=${FLEET_QUERY_RUNS:-20}
skip_peak=${FLEET_SKIP_PEAK:-0}
skip_query=${FLEET_SKIP_QUERY:-0}
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
((skip_peak)) || [ -x "$pg/pgbench" ] || { say "pgbench is missing (for the morning peak): apt-get install postgresql-15"; exit 1; }
for number in "$trail" "$total" "$peak_machines" "$peak_records" "$query_records" "$query_machines" "$query_months" \
  "$query_chunk" "$query_runs" $peak_clients $peak_reconnect; do
  [[ $number =~ ^[1-9][0-9]*$ ]] || { say "'$number' is not a positive number (FLEET_* settings)"; exit 1; }
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
sql() { /usr/bin/psql "$TOUCHGATE_COLLECTOR_DATABASE" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
gigabytes() { awk -v n="$1" 'BEGIN { if (n >= 1e9) printf "%.2f GB", n / 1e9; else printf "%.1f MB", n / 1e6 }'; }
# The records table with its indexes, partitioned or not (a partitioned table's own size is 0).
store_size() { sql "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('records')"; }

# The query store: query_machines machines of query_records / query_machines records each (the
# names store-1, store-2, …), evenly spread over the query_months months before this one, and
# written month after month as a collector receives them (row r is machine 1 + r % machines's
# record 1 + r / machines). Any 32-byte values do for the links: nothing verifies these trails.
store_per_machine=$((query_records / query_machines))
store_total=$((store_per_machine * query_machines))
store_first=$(date -u -d "$(date -u +%Y-%m-01) -$query_months months" +%Y-%m-01)
store_t0=$(date -u -d "$store_first" +%s)
store_t1=$(date -u -d "$(date -u +%Y-%m-01)" +%s)
store_step=$(awk -v a="$store_t0" -v b="$store_t1" -v n="$store_per_machine" 'BEGIN { printf "%.6f", (b - a) / n }')
store_rows() {  # store_rows FROM COUNT: rows FROM … FROM+COUNT-1 of the query store
  sql "INSERT INTO records (machine, trail, seq, unix_time, boot_time, boot_id, uid, login, vault_user, event, item,
                            outcome, reason, prev_mac, mac, prev_chain, chain)
       SELECT name, decode(md5(name), 'hex'), s,
              $store_t0::float8 + ((s - 1)::float8 + ((i * 7919 + s * 104729) % 1000)::float8 / 1000) * $store_step::float8,
              600.0 + (s % 50) * 900.0, md5(name || '/' || s / 50)::uuid::text, 1000 + i % 3, 'user' || i % 3,
              CASE WHEN s % 4 = 0 THEN NULL ELSE 'user' || i % 3 END,
              (ARRAY['auth.attempt', 'item.read', 'item.read', 'item.read', 'item.write', 'unlock'])[1 + (s % 6)::int],
              CASE WHEN s % 6 BETWEEN 1 AND 4 THEN 'token-' || s % 40 END,
              CASE WHEN s % 23 = 0 THEN 'failure' ELSE 'success' END, 'fingerprint matched on the first touch',
              prev, link, prev, link
       FROM (SELECT name, i, s, sha256(convert_to(name || '#' || (s - 1), 'UTF8')) AS prev,
                    sha256(convert_to(name || '#' || s, 'UTF8')) AS link
             FROM (SELECT 'store-' || (1 + r % $query_machines) AS name, 1 + r % $query_machines AS i,
                          1 + r / $query_machines AS s
                   FROM generate_series($1::bigint, $1::bigint + $2 - 1) AS r) AS g
             OFFSET 0) AS h" >/dev/null
}

# Room on disk, before anything is spent: a sample of the query store (its first records,
# 0.1 per cent of it at the default sizes) gives the bytes a record takes with its indexes, in
# this schema. Then `init` once more: from schema 4 on it makes the partitions of every month
# from the oldest record it finds to three months ahead (as `publish` keeps them), so the
# store's six years have theirs, as they would after six years of publishing.
sample=$((store_total < 100000 ? store_total : 100000))
store_rows 0 "$sample"
per_record=$(($(store_size) / sample))
"$bin/touchgate-collector" init >/dev/null
sql "TRUNCATE records" >/dev/null
expected=$((total + (skip_peak ? 0 : peak_machines * peak_records * $(echo $peak_clients $peak_reconnect | wc -w)) \
  + (skip_query ? 0 : store_total)))
room=$((expected * per_record * 23 / 20 + 6000000000))  # 15 % more, and the WAL (max_wal_size 4 GB while filling)
free=$(df --output=avail -B1 "$work/pg" | tail -1)
say "about $expected records to store, $per_record bytes each with the indexes (from a sample of $sample):" \
  "$(gigabytes "$room") needed, $(gigabytes "$free") free"
if ((room > free)); then
  say "not enough room on the disk holding /tmp, where the temporary cluster lives: free some, or store fewer" \
    "records (FLEET_QUERY_RECORDS, FLEET_TOTAL), or leave the query store out (FLEET_SKIP_QUERY=1)"
  exit 1
fi

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
  rm -rf "$work/machines"  # shipped: the disk stays flat however many machines follow
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
  rm -rf "$work/machines"
  made=$((made + batch))
  ((made % 40)) || say "shipped $((made * trail)) of $((needed * trail)) records"
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

# The morning peak: every machine ships its morning's records at once, in one shipment.
# pgbench runs bench/fleet-peak.sql, one transaction per machine doing what the collector
# does for a shipment (its trail row, its records, its seal, touchgate_ship_batch), with the
# records' own key for ON CONFLICT, read from the catalog (it changes with the schema).
peak_rows=()
if ((!skip_peak)); then
  records_key=$(sql "SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.ord)
                     FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
                     WHERE c.conrelid = 'records'::regclass AND c.contype = 'p'")
  sed "s/@RECORDS_KEY@/$records_key/" "$root/bench/fleet-peak.sql" >"$work/peak.sql"
  morning=$(date -u -d 'today 07:00' +%s)
  runs=()
  for clients in $peak_clients; do runs+=("$clients:held"); done
  for clients in $peak_reconnect; do runs+=("$clients:new"); done
  run=0
  for spec in "${runs[@]}"; do
    clients=${spec%:*} run=$((run + 1))
    per=$(((peak_machines + clients - 1) / clients))
    connect=() how="held open"
    [ "${spec#*:}" = new ] && connect=(-C) how="new per machine"
    records_before=$(sql "SELECT count(*) FROM records")
    leaves_before=$(sql "SELECT count(*) FROM log_entries")
    trails_before=$(sql "SELECT count(*) FROM trails")
    say "morning peak: $peak_machines machines of $peak_records records, $clients connections ($how)"
    start=$(now)
    "$pg/pgbench" -n -M extended -c "$clients" -j $((clients < 2 ? clients : 2)) -t "$per" "${connect[@]}" \
      -f "$work/peak.sql" -D prefix="peak$run-" -D machines="$peak_machines" -D per="$per" \
      -D records="$peak_records" -D morning="$morning" -D n=0 "$TOUCHGATE_COLLECTOR_DATABASE" >"$work/pgbench.out" 2>&1 \
      || { cat "$work/pgbench.out" >&2; say "pgbench failed"; exit 1; }
    end=$(now)
    shipped=$(($(sql "SELECT count(*) FROM records") - records_before))
    leaves=$(($(sql "SELECT count(*) FROM log_entries") - leaves_before))
    trails=$(($(sql "SELECT count(*) FROM trails") - trails_before))
    if ((shipped != peak_machines * peak_records || leaves != peak_machines || trails != peak_machines)); then
      cat "$work/pgbench.out" >&2
      say "the peak stored $shipped records, $leaves batch heads and $trails trails, not" \
        "$((peak_machines * peak_records)), $peak_machines and $peak_machines: some machine did not ship exactly once"
      exit 1
    fi
    latency=$(awk -F' = ' '/^latency average/ { print $2 }' "$work/pgbench.out")
    row="| $peak_machines machines × $peak_records records | $clients, $how | $(seconds "$start" "$end")"
    peak_rows+=("$row | $(rate "$shipped" "$start" "$end") /s | $(rate "$leaves" "$start" "$end") /s | ${latency:-?} |")
    say "peak with $clients connections: $(seconds "$start" "$end"), $(rate "$shipped" "$start" "$end") records/s," \
      "$(rate "$leaves" "$start" "$end") batch heads/s"
  done
  log_entries=$(sql "SELECT count(*) FROM log_entries")
  log_size=$(sql "SELECT pg_total_relation_size('log_entries') + pg_total_relation_size('log_nodes')
                         + pg_total_relation_size('checkpoints')")
fi

# Queries by machine and month on a six-year store, synthesized in SQL as the database's
# owner (row-level security does not apply to it), in chunks, month after month.
query_rows=()
if ((!skip_query)); then
  sql "ALTER SYSTEM SET max_wal_size = '4GB'" >/dev/null && sql "SELECT pg_reload_conf()" >/dev/null
  say "query store: synthesizing $store_total records ($query_machines machines × $store_per_machine," \
    "$store_first to $(date -u -d "$store_first +$query_months months -1 day" +%Y-%m-%d))"
  start=$(now)
  for ((from = 0; from < store_total; from += query_chunk)); do
    count=$((store_total - from < query_chunk ? store_total - from : query_chunk))
    store_rows "$from" "$count"
    say "query store: $((from + count)) of $store_total records ($(rate $((from + count)) "$start" "$(now)") /s)"
  done
  sql "ANALYZE records" >/dev/null
  end=$(now)
  store_time=$(seconds "$start" "$end") store_rate=$(rate "$store_total" "$start" "$end")
  sql "ALTER SYSTEM RESET max_wal_size" >/dev/null && sql "SELECT pg_reload_conf()" >/dev/null
  stored_all=$(sql "SELECT count(*) FROM records")
  store_bytes=$(store_size)
  partitions=$(sql "SELECT count(*) FROM pg_partition_tree('records') WHERE isleaf AND relid <> 'records'::regclass")
  in_default=$(sql "SELECT coalesce(sum(c.reltuples), 0)::bigint FROM pg_partition_tree('records') t
                    JOIN pg_class c ON c.oid = t.relid WHERE pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'")
  schema=$(sql "SELECT max(version) FROM schema_version")
  by_machine_time=$(sql "SELECT count(*) FROM pg_index i WHERE i.indrelid = 'records'::regclass AND i.indnatts >= 2
    AND i.indkey[0] = (SELECT attnum FROM pg_attribute WHERE attrelid = 'records'::regclass AND attname = 'machine')
    AND i.indkey[1] = (SELECT attnum FROM pg_attribute WHERE attrelid = 'records'::regclass AND attname = 'unix_time')")
  say "query store: $stored_all records, $(gigabytes "$store_bytes") ($store_time to synthesize)"

  # Random machines and months, the same each run (seed 49, the issue's number).
  awk -v runs="$query_runs" -v machines="$query_machines" -v months="$query_months" \
    'BEGIN { srand(49); for (k = 0; k < runs; k++) print 1 + int(rand() * machines), int(rand() * months) }' \
    >"$work/picks"
  : >"$work/query.times"
  returned=0
  while read -r number month; do
    since=$(date -u -d "$store_first +$month months" +%Y-%m-%d)
    until=$(date -u -d "$store_first +$((month + 1)) months" +%Y-%m-%d)
    start=$(now)
    "$bin/touchgate-collector" query --machine "store-$number" --since "$since" --until "$until" --json \
      >"$work/query.out" || { say "query of store-$number in $since failed"; exit 1; }
    end=$(now)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.6f\n", b - a }' >>"$work/query.times"
    returned=$((returned + $(wc -l <"$work/query.out")))
    if [ -z "${explain_since:-}" ]; then explain_machine=store-$number explain_since=$since explain_until=$until; fi
  done <"$work/picks"
  query_median=$(sort -n "$work/query.times" | awk '{ t[NR] = $1 } END {
    printf "%.1f ms", (NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2) * 1000 }')
  query_max=$(sort -n "$work/query.times" | awk 'END { printf "%.1f ms", $1 * 1000 }')
  query_rows+=("| $query_runs queries, $((returned / query_runs)) records each on average | $query_median | $query_max |")
  say "queries by machine and month: median $query_median, max $query_max"

  # The same SQL as the query command's (the times as it writes them), planned and run once.
  explain_from=$(date -u -d "$explain_since" +%s) explain_to=$(date -u -d "$explain_until" +%s)
  sql "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
       SELECT machine, trail, seq, unix_time, uid, login, vault_user, event, item, outcome, reason
       FROM records WHERE machine = '$explain_machine' AND unix_time >= $explain_from.0::float8
         AND unix_time < $explain_to.0::float8 ORDER BY unix_time, machine, seq" >"$work/explain.json"
  plan=$(/usr/bin/python3 -c '
import json, sys
top = json.load(open(sys.argv[1]))[0]
scanned, indexes, removed = [], [], 0
def walk(node):
    global removed
    removed += node.get("Subplans Removed", 0)
    if node.get("Actual Loops", 1) > 0:
        if "Relation Name" in node and node["Relation Name"] not in scanned:
            scanned.append(node["Relation Name"])
        if "Index Name" in node:
            used = "%s on %s" % (node["Node Type"].lower(), node["Index Name"])
            if used not in indexes:
                indexes.append(used)
    for child in node.get("Plans", []):
        walk(child)
walk(top["Plan"])
plan = top["Plan"]
partitions = int(sys.argv[2])
print("it reads %d relation%s, %s%s%s; through %s; %d rows, %d buffers hit and %d read, %.1f ms executing" % (
    len(scanned), "" if len(scanned) == 1 else "s", ", ".join(scanned),
    " (of the %d partitions)" % partitions if partitions else "",
    ", %d more pruned while running" % removed if removed else "",
    ", ".join(indexes) if indexes else "no index (a sequential scan)", plan["Actual Rows"],
    plan.get("Shared Hit Blocks", 0), plan.get("Shared Read Blocks", 0), top["Execution Time"]))
' "$work/explain.json" "$partitions")
  say "plan of $explain_machine in $explain_since: $plan"
fi

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
    "\`log_nodes\` each; checkpoints are signed by \`publish\`), appended under one lock in the batch's own" \
    "transaction by \`touchgate_ship_batch\`, and" \
    "each machine checks a consistency and an inclusion proof before moving its cursor: both are in the" \
    "shipping figures above. Verify recomputes the whole log whatever subset it checks (it streams the" \
    "entries: memory stays flat). A witness round (\`touchgate-collector witness\`: the newest checkpoint" \
    "checked against the stored tree and a consistency proof from the witness's last one, O(log n) rows)" \
    "took $witness_time over $entries entries."
  echo
  if ((skip_peak)); then
    echo "The morning peak was left out of this run (FLEET_SKIP_PEAK=1)."
  else
    echo "The morning peak (issue 49: a fleet of 100,000 workstations logging in within the hour): $peak_machines" \
      "machines each ship their morning's $peak_records records in one shipment, all at once. pgbench runs" \
      "\`bench/fleet-peak.sql\`, one transaction per machine doing what the collector does for a shipment: its trail" \
      "row, its records in one \`INSERT … SELECT\` (\`ON CONFLICT ($records_key) DO NOTHING\`, the records' key), the" \
      "count of their range that finds a squatted sequence number (in their months), its seal, and" \
      "\`touchgate_ship_batch\` with a batch head naming exactly those rows and the time they span (its signature" \
      "only of the right form: SQL does not check it, verify does). Each machine ships once (numbered from pgbench's client and the" \
      "client's own count), which the records, trails and log leaves counted after each run confirm; every run" \
      "ships $peak_machines new machines. Connections held open are what a pooler (PgBouncer) in front of the" \
      "collector gives the machines; FLEET_PEAK_RECONNECT adds runs with a new connection per machine. Not" \
      "included: the proofs each machine reads after its shipment (reads, outside the log's lock), TLS, and" \
      "row-level security (pgbench connects as the database's owner, not as each machine's role)."
    echo
    echo "| morning peak, one shipment per machine | connections | wall time | records per second | batch heads (log leaves) per second | mean time of one shipment |"
    echo "| --- | --- | --- | --- | --- | --- |"
    printf '%s\n' "${peak_rows[@]}"
    echo
    echo "After the peak runs the fleet log held $log_entries entries, $(gigabytes "$log_size") in \`log_entries\`," \
      "\`log_nodes\` and \`checkpoints\` ($((log_size / log_entries)) bytes an entry). How it grows: a shipment's" \
      "records, its count of the range and its batch head's checks read the months its records are in (schema 5)," \
      "then the append takes the log's one lock (the \`fleet_log\` row, \`FOR UPDATE\`) and holds it until its" \
      "transaction has committed, so batch heads are appended one at a time, each with its commit's WAL flush" \
      "inside the lock: heads per second are bounded by one over the time of one append and commit, and below that" \
      "by the CPU the shipments' statements take (two cores here); more connections only queue (the time of one" \
      "shipment grows with them). Records per second grow with the records in each shipment; the log grows by one" \
      "leaf per shipment, whatever its size."
  fi
  echo
  if ((skip_query)); then
    echo "The queries on a six-year store were left out of this run (FLEET_SKIP_QUERY=1)."
  else
    if ((partitions > 0)); then
      layout="\`records\` is partitioned (schema version $schema): $partitions partitions (the store's months made"
      layout+=" beforehand by \`init\`, as \`publish\` keeps them ahead), $in_default records (estimated) in the default one"
    else
      layout="\`records\` is one table, not partitioned (schema version $schema)"
    fi
    echo "Queries by machine and month: a six-year store of $store_total records, synthesized in SQL as the" \
      "database's owner ($query_machines machines × $store_per_machine records, spread evenly over the $query_months" \
      "months from $store_first, inserted month after month as a collector receives them, in chunks of" \
      "$query_chunk), beside the records above: $stored_all records, $(gigabytes "$store_bytes") on disk with the" \
      "indexes ($((store_bytes / stored_all)) bytes a record); synthesizing and \`ANALYZE\` took $store_time" \
      "($store_rate records/s, max_wal_size 4 GB meanwhile). $layout. Each query is" \
      "\`touchgate-collector query --machine M --since YYYY-MM-01 --until <the next month> --json\`, timed whole" \
      "(a new process: start, connect, query, print), for $query_runs machines and months drawn at random (seed 49)."
    echo
    echo "| query by machine and month, $stored_all records stored | median wall time | max wall time |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${query_rows[@]}"
    echo
    echo "The plan of the first (\`EXPLAIN (ANALYZE, BUFFERS)\` of the command's SQL, once, after the timed" \
      "queries): $plan."
    echo
    if ((by_machine_time > 0)); then
      echo "How it grows: the store grows linearly with its records. An index that leads with the machine and" \
        "then the time (in the month's partition alone, when the table is partitioned by month) takes a query by" \
        "machine and month straight to its rows, so it reads about as many pages as it returns records (the" \
        "buffers above) and its time stays flat as the store grows, while the index's upper pages stay in memory."
    else
      echo "How it grows: the store grows linearly with its records. Without an index that leads with the machine" \
        "and then the time, a query by machine and month reads one of two ranges and filters it: all of the" \
        "machine's records (the primary key), or all of the month's (\`records_time\`), so its time grows with" \
        "the machine's history or with the fleet, not with the records it returns."
    fi
  fi
  echo
} >"$section"
replace_section 8 "$section" "$output"
cat "$section"
