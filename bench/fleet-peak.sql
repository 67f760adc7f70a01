-- One machine's morning shipment as the collector receives it, for pgbench (bench/fleet.sh,
-- "morning peak"): in one transaction, its trail row, all its morning records in one
-- INSERT, the count of its range that finds a squatted sequence number (in the months its
-- records are in, as the shipper does), its seal, and its batch head appended to the fleet
-- log by touchgate_ship_batch, which checks the head against the rows just stored (in the
-- time its records span, which the shipper names). The records' public links (chain,
-- prev_chain) are SHA-256 of the machine's name and sequence, so the head built here names
-- exactly what was stored; its signature line has the right form (SQL does not check the
-- Ed25519 signature: verify does). @RECORDS_KEY@ is the records table's primary key,
-- filled in by fleet.sh from the catalog.
--
-- Variables (pgbench -D): prefix (machine names: prefix || number), machines (how many
-- ship), per (transactions per client), records (per machine), morning (Unix time of the
-- first login), n=0 (the client's own counter: pgbench keeps a client's variables from one
-- transaction to the next). Client c ships machines c*per … c*per+per-1, each once.
\set m :client_id * :per + :n
\set n :n + 1
\if :m < :machines
BEGIN;
INSERT INTO trails (machine, trail, public_key, first_seq)
SELECT name, decode(md5(name), 'hex'), sha256(convert_to('key/' || name, 'UTF8')), 1
FROM (VALUES (:prefix::text || :m::bigint)) AS a(name)
ON CONFLICT (machine, trail) DO NOTHING;
INSERT INTO records (machine, trail, seq, unix_time, boot_time, boot_id, uid, login, vault_user, event, item,
                     outcome, reason, prev_mac, mac, prev_chain, chain)
SELECT name, decode(md5(name), 'hex'), i, :morning::float8 + :m::bigint % 3600 + i * 2.5, 40.0 + i * 2.5,
       md5(name)::uuid::text, 1000, 'user', 'user', CASE WHEN i = 1 THEN 'auth.attempt' ELSE 'item.read' END,
       CASE WHEN i = 1 THEN NULL ELSE 'github-token' END, 'success', 'fingerprint matched on the first touch',
       sha256(convert_to(name || '#' || (i - 1), 'UTF8')), sha256(convert_to(name || '#' || i, 'UTF8')),
       sha256(convert_to(name || '/' || (i - 1), 'UTF8')), sha256(convert_to(name || '/' || i, 'UTF8'))
FROM (VALUES (:prefix::text || :m::bigint)) AS a(name), generate_series(1, :records::bigint) AS i
ON CONFLICT (@RECORDS_KEY@) DO NOTHING;
SELECT count(*) FROM records
WHERE machine = :prefix::text || :m::bigint AND trail = decode(md5(:prefix::text || :m::bigint), 'hex')
  AND seq BETWEEN 1 AND :records::bigint
  AND unix_time >= extract(epoch FROM date_trunc('month', to_timestamp(:morning::float8) AT TIME ZONE 'UTC'))
  AND unix_time < extract(epoch FROM date_trunc('month', to_timestamp(:morning::float8 + 3600 + :records::bigint * 2.5)
                                                AT TIME ZONE 'UTC') + interval '1 month');
INSERT INTO seals (machine, trail, seq, chain, public_key, signature)
SELECT name, decode(md5(name), 'hex'), :records::bigint, sha256(convert_to(name || '/' || :records::bigint, 'UTF8')),
       sha256(convert_to('key/' || name, 'UTF8')), sha512(convert_to(name, 'UTF8'))
FROM (VALUES (:prefix::text || :m::bigint)) AS a(name)
ON CONFLICT (machine, trail, seq) DO NOTHING;
SELECT touchgate_ship_batch(name, decode(md5(name), 'hex'), 1, :records::bigint,
    'touchgate.fleet/batch/v1' || E'\n' || 'machine ' || touchgate_key_name(name) || E'\n'
    || 'trail ' || md5(name) || E'\n' || 'records 1 ' || :records::bigint || E'\n'
    || 'previous ' || encode(sha256(convert_to(name || '/0', 'UTF8')), 'hex') || E'\n'
    || 'chain ' || encode(sha256(convert_to(name || '/' || :records::bigint, 'UTF8')), 'hex') || E'\n'
    || 'key ' || encode(sha256(convert_to('key/' || name, 'UTF8')), 'hex') || E'\n'
    || E'\n' || chr(8212) || ' ' || touchgate_key_name(name) || ' ' || repeat('A', 91) || '=' || E'\n',
    :morning::float8 + :m::bigint % 3600 + 2.5, :morning::float8 + :m::bigint % 3600 + :records::bigint * 2.5)
FROM (VALUES (:prefix::text || :m::bigint)) AS a(name);
END;
\endif
