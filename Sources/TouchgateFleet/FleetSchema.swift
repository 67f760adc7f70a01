import TouchgateAPI

/// The collector's tables, as numbered migrations: `touchgate-collector init` applies those
/// the database lacks, in order, each in the transaction that records it in
/// `schema_version`. A migration, once released, is never edited: a change is a new one.
public enum FleetSchema {
    /// Every migration: its number and its SQL.
    public static let migrations: [(version: Int, sql: String)] = [(1, version1), (2, version2), (3, version3), (4, version4),
                                                                          (5, version5)]

    /// The newest version.
    public static var current: Int { migrations.last!.version }

    /// Version 1: machines' keys, trails, records and seals.
    static let version1 = """
        -- The public keys registered for each machine (touchgate-collector register). In
        -- personal mode every user's store has its own key, so a machine may have several.
        CREATE TABLE machine_keys (
            machine text NOT NULL,
            public_key bytea NOT NULL CHECK (octet_length(public_key) = 32),
            registered timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (machine, public_key)
        );
        -- Each trail a machine shipped, the key its seal names and the first record sent.
        CREATE TABLE trails (
            machine text NOT NULL,
            trail bytea NOT NULL CHECK (octet_length(trail) = 16),
            public_key bytea NOT NULL,
            first_seq bigint NOT NULL,
            first_shipped timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (machine, trail)
        );
        -- Every field of `touchgate audit export`, exactly as stored on the machine.
        CREATE TABLE records (
            machine text NOT NULL,
            trail bytea NOT NULL,
            seq bigint NOT NULL,
            unix_time double precision NOT NULL,
            boot_time double precision NOT NULL,
            boot_id text NOT NULL,
            uid bigint NOT NULL,
            login text NOT NULL,
            vault_user text,
            event text NOT NULL,
            item text,
            outcome text NOT NULL,
            reason text NOT NULL,
            prev_mac bytea NOT NULL,
            mac bytea NOT NULL,
            prev_chain bytea,
            chain bytea,
            received timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (machine, trail, seq)
        );
        CREATE INDEX records_time ON records (unix_time);
        CREATE INDEX records_login ON records (login);
        CREATE INDEX records_item ON records (item);
        -- Every signed head shipped: the last record it names and its public link.
        CREATE TABLE seals (
            machine text NOT NULL,
            trail bytea NOT NULL,
            seq bigint NOT NULL,
            chain bytea NOT NULL,
            public_key bytea NOT NULL,
            signature bytea NOT NULL,
            received timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (machine, trail, seq)
        );
        """

    /// Version 2: the fleet log (an RFC 9162 Merkle tree over every shipment and key
    /// registration, its checkpoints and witnesses' cosignatures) and per-machine write
    /// rights: a machine ships as a role named after it, a member of `touchgate_shipper`,
    /// and row-level security lets it write and read only its own records.
    static let version2 = """
        -- The log's name: the origin line of its checkpoints, random per collector.
        CREATE TABLE fleet_log (
            origin text PRIMARY KEY CHECK (origin LIKE 'touchgate.fleet/%')
        );
        INSERT INTO fleet_log (origin) VALUES ('touchgate.fleet/' || replace(gen_random_uuid()::text, '-', ''));
        -- Each leaf: a shipment (a batch of one trail) or a key registration, as its text.
        CREATE TABLE log_entries (
            leaf bigint PRIMARY KEY CHECK (leaf >= 0 AND leaf < 281474976710656),
            kind text NOT NULL CHECK (kind IN ('shipment', 'registration')),
            machine text NOT NULL,
            trail bytea,
            first_seq bigint,
            last_seq bigint,
            body text NOT NULL,
            appended timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX log_entries_trail ON log_entries (machine, trail, last_seq);
        -- Every complete perfect subtree's hash (level 0: the leaves).
        CREATE TABLE log_nodes (
            level smallint NOT NULL CHECK (level >= 0 AND level <= 48),
            idx bigint NOT NULL CHECK (idx >= 0 AND idx < 281474976710656),
            hash bytea NOT NULL CHECK (octet_length(hash) = 32),
            PRIMARY KEY (level, idx)
        );
        -- The signed checkpoint after each append (C2SP checkpoint notes).
        CREATE TABLE checkpoints (
            size bigint PRIMARY KEY CHECK (size > 0 AND size <= 281474976710656),
            note text NOT NULL,
            signer text NOT NULL,
            made timestamptz NOT NULL DEFAULT now()
        );
        -- Witnesses' cosignatures (cosignature/v1 lines) of checkpoints they checked.
        CREATE TABLE cosignatures (
            witness text NOT NULL,
            size bigint NOT NULL,
            line text NOT NULL,
            received timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (witness, size)
        );
        -- Which log entry registered each key.
        ALTER TABLE machine_keys ADD COLUMN leaf bigint;

        -- Write rights. Machines ship as roles in touchgate_shipper named as their
        -- fleet.conf names them; each may add, never change or remove, and only its own rows.
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'touchgate_shipper') THEN
                CREATE ROLE touchgate_shipper NOLOGIN;
            END IF;
        END $$;
        GRANT SELECT, INSERT ON trails, records, seals, log_entries, log_nodes, checkpoints TO touchgate_shipper;
        GRANT SELECT ON fleet_log TO touchgate_shipper;
        ALTER TABLE trails ENABLE ROW LEVEL SECURITY;
        ALTER TABLE records ENABLE ROW LEVEL SECURITY;
        ALTER TABLE seals ENABLE ROW LEVEL SECURITY;
        ALTER TABLE log_entries ENABLE ROW LEVEL SECURITY;
        CREATE POLICY own_trails ON trails TO touchgate_shipper
            USING (machine = current_user) WITH CHECK (machine = current_user);
        CREATE POLICY own_records ON records TO touchgate_shipper
            USING (machine = current_user) WITH CHECK (machine = current_user);
        CREATE POLICY own_seals ON seals TO touchgate_shipper
            USING (machine = current_user) WITH CHECK (machine = current_user);
        CREATE POLICY read_log ON log_entries FOR SELECT TO touchgate_shipper USING (true);
        CREATE POLICY own_shipments ON log_entries FOR INSERT TO touchgate_shipper
            WITH CHECK (kind = 'shipment' AND machine = current_user);
        """

    /// Version 3: the log is written by the collector's own code alone. A machine's role
    /// keeps its INSERT on its own records, seals and trails, and loses it on the log's
    /// tables: it hands its signed batch head to `touchgate_ship_batch`, a function that runs
    /// with the rights of the role that ran `init` (SECURITY DEFINER), checks that the head
    /// names rows this machine stored, and appends it through `touchgate_log_append`, the one
    /// place that writes entries and nodes (SHA-256 in SQL, RFC 9162's hashing). So a
    /// machine's credentials can neither plant a node, an entry nor a checkpoint, nor append
    /// an entry naming records it did not store. A state the append finds impossible (a node
    /// or entry in its way, one missing) is raised as SQLSTATE TG001, "log damaged", never
    /// as an outage. Checkpoints are now made by the log's key (`touchgate-collector
    /// publish`); witnesses cosign the tree head.
    static let version3 = """
        ALTER TABLE log_entries DROP CONSTRAINT log_entries_kind_check;
        ALTER TABLE log_entries ADD CONSTRAINT log_entries_kind_check
            CHECK (kind IN ('shipment', 'registration', 'batch'));
        REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON log_entries, log_nodes, checkpoints, cosignatures, fleet_log
            FROM touchgate_shipper;
        DROP POLICY own_shipments ON log_entries;
        ALTER TABLE checkpoints ALTER COLUMN signer SET DEFAULT '';

        -- A machine's name as a note's key name: SignedNote.keyName's escaping.
        CREATE FUNCTION touchgate_key_name(name text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE STRICT AS $$
        DECLARE
            bytes bytea := convert_to(name, 'UTF8');
            escaped text := '';
            byte int;
        BEGIN
            FOR i IN 0 .. length(bytes) - 1 LOOP
                byte := get_byte(bytes, i);
                IF byte BETWEEN 33 AND 126 AND byte <> 43 AND byte <> 37 THEN
                    escaped := escaped || chr(byte);
                ELSE
                    escaped := escaped || '%' || upper(lpad(to_hex(byte), 2, '0'));
                END IF;
            END LOOP;
            RETURN escaped;
        END $$;

        DO $do$ BEGIN
        -- The one append: the entry, its leaf and the nodes it completes. Serialised by the
        -- append lock, the row of fleet_log taken FOR UPDATE: a machine's role has no UPDATE
        -- on it, so only these functions can take it (an advisory lock anyone may take), and
        -- an append waits for it at most 15 s (the administrator's session holding it).
        EXECUTE format($f$
        CREATE FUNCTION touchgate_log_append(entry_kind text, entry_machine text, entry_trail bytea,
                                             entry_first bigint, entry_last bigint, entry_body text) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %I, pg_temp AS $$
        DECLARE
            v_size bigint;
            v_height int := 0;
            v_index bigint;
            v_hash bytea;
            v_sibling bytea;
        BEGIN
            PERFORM set_config('lock_timeout', '15s', true);
            PERFORM 1 FROM fleet_log FOR UPDATE;
            SELECT coalesce(max(idx) + 1, 0) INTO v_size FROM log_nodes n WHERE n.level = 0;
            IF v_size >= 281474976710656 THEN
                RAISE EXCEPTION USING ERRCODE = 'TG001',
                    MESSAGE = 'the collector''s fleet log holds a leaf at an index past 2^48: its tables were edited';
            END IF;
            IF v_size > 0 AND NOT EXISTS (SELECT 1 FROM log_entries WHERE leaf = v_size - 1) THEN
                RAISE EXCEPTION USING ERRCODE = 'TG001', MESSAGE = format('the collector''s fleet log holds a leaf at '
                    '%%s without its entry: its tables were edited', v_size - 1);
            END IF;
            IF EXISTS (SELECT 1 FROM log_entries WHERE leaf >= v_size) THEN
                RAISE EXCEPTION USING ERRCODE = 'TG001', MESSAGE = format('the collector''s fleet log holds entries '
                    'past the %%s leaves of its tree: its tables were edited', v_size);
            END IF;
            v_hash := sha256(decode('00', 'hex') || convert_to(entry_body, 'UTF8'));
            v_index := v_size;
            BEGIN
                INSERT INTO log_entries (leaf, kind, machine, trail, first_seq, last_seq, body)
                VALUES (v_size, entry_kind, entry_machine, entry_trail, entry_first, entry_last, entry_body);
                INSERT INTO log_nodes (level, idx, hash) VALUES (0, v_index, v_hash);
                WHILE v_index %% 2 = 1 LOOP
                    SELECT n.hash INTO v_sibling FROM log_nodes n WHERE n.level = v_height AND n.idx = v_index - 1;
                    IF v_sibling IS NULL THEN
                        RAISE EXCEPTION USING ERRCODE = 'TG001', MESSAGE = format('the collector''s fleet log lacks '
                            'its node at level %%s, index %%s: its tables were edited', v_height, v_index - 1);
                    END IF;
                    v_hash := sha256(decode('01', 'hex') || v_sibling || v_hash);
                    v_height := v_height + 1;
                    v_index := v_index / 2;
                    INSERT INTO log_nodes (level, idx, hash) VALUES (v_height, v_index, v_hash);
                END LOOP;
            EXCEPTION WHEN unique_violation THEN
                RAISE EXCEPTION USING ERRCODE = 'TG001', MESSAGE = format('the collector''s fleet log already holds '
                    'a node where entry %%s''s go: its tables were edited', v_size);
            END;
            RETURN v_size;
        END $$;
        $f$, current_schema());

        -- A machine's batch head, appended unless the log already names the batch. The
        -- head must be the one the rows it names make, signed under the machine's key name
        -- (the signature itself is checked by every auditor: SQL has no Ed25519).
        EXECUTE format($f$
        CREATE FUNCTION touchgate_ship_batch(batch_machine text, batch_trail bytea, batch_first bigint,
                                             batch_last bigint, head text) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %I, pg_temp AS $$
        DECLARE
            v_key bytea;
            v_previous bytea;
            v_chain bytea;
            v_stored bigint;
            v_name text;
            v_body text;
            v_line text;
            v_held bigint;
        BEGIN
            -- A machine's role ships as itself; the role that ran init (or a superuser) may
            -- ship for any machine, as it may write any row.
            IF batch_machine IS DISTINCT FROM session_user AND session_user <> current_user
               AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) THEN
                RAISE EXCEPTION USING ERRCODE = '42501',
                    MESSAGE = format('role %%s may ship only as machine %%s', session_user, session_user);
            END IF;
            SELECT t.public_key INTO v_key FROM trails t WHERE t.machine = batch_machine AND t.trail = batch_trail;
            SELECT r.prev_chain INTO v_previous FROM records r
                WHERE r.machine = batch_machine AND r.trail = batch_trail AND r.seq = batch_first;
            SELECT r.chain INTO v_chain FROM records r
                WHERE r.machine = batch_machine AND r.trail = batch_trail AND r.seq = batch_last;
            SELECT count(*) INTO v_stored FROM records r
                WHERE r.machine = batch_machine AND r.trail = batch_trail AND r.seq BETWEEN batch_first AND batch_last;
            IF v_key IS NULL OR v_previous IS NULL OR v_chain IS NULL OR batch_first < 1 OR batch_last < batch_first
               OR v_stored <> batch_last - batch_first + 1 THEN
                RAISE EXCEPTION USING ERRCODE = 'TG002', MESSAGE = format('the batch head names records %%s…%%s of '
                    'a trail the collector does not hold whole for machine %%s', batch_first, batch_last, batch_machine);
            END IF;
            v_name := touchgate_key_name(batch_machine);
            v_body := 'touchgate.fleet/batch/v1' || E'\n' || 'machine ' || v_name || E'\n'
                || 'trail ' || encode(batch_trail, 'hex') || E'\n' || 'records ' || batch_first || ' ' || batch_last || E'\n'
                || 'previous ' || encode(v_previous, 'hex') || E'\n' || 'chain ' || encode(v_chain, 'hex') || E'\n'
                || 'key ' || encode(v_key, 'hex') || E'\n';
            v_line := substr(head, length(v_body) + 2);
            IF left(head, length(v_body) + 1) <> v_body || E'\n'
               OR left(v_line, length(v_name) + 3) <> '— ' || v_name || ' '
               OR substr(v_line, length(v_name) + 4) !~ '^[A-Za-z0-9+/]{91}=\n$' THEN
                RAISE EXCEPTION USING ERRCODE = 'TG002', MESSAGE = format('the batch head of records %%s…%%s is not the '
                    'one the stored rows make, signed under the name %%s', batch_first, batch_last, v_name);
            END IF;
            PERFORM set_config('lock_timeout', '15s', true);
            PERFORM 1 FROM fleet_log FOR UPDATE;
            SELECT e.leaf INTO v_held FROM log_entries e
                WHERE e.kind IN ('batch', 'shipment') AND e.machine = batch_machine AND e.trail = batch_trail
                  AND e.last_seq = batch_last AND e.first_seq <= batch_first
                ORDER BY e.leaf LIMIT 1;
            IF v_held IS NOT NULL THEN
                RETURN v_held;
            END IF;
            RETURN touchgate_log_append('batch', batch_machine, batch_trail, batch_first, batch_last, head);
        END $$;
        $f$, current_schema());
        END $do$;
        REVOKE ALL ON FUNCTION touchgate_log_append(text, text, bytea, bigint, bigint, text) FROM PUBLIC;
        REVOKE ALL ON FUNCTION touchgate_ship_batch(text, bytea, bigint, bigint, text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION touchgate_ship_batch(text, bytea, bigint, bigint, text) TO touchgate_shipper;
        """

    /// Version 4: retention. `records` is partitioned by the month of `unix_time` (one
    /// partition a month, `records_YYYY_MM`, and `records_other` for times outside them: a
    /// machine whose clock is far off), so a query by machine and month reads one partition
    /// through (machine, unix_time), and a month past the retention floor leaves with
    /// `touchgate-collector archive` as a whole partition. The primary key holds `unix_time`,
    /// as partitioning requires; a sequence number held twice is caught by the shipper's
    /// check and by verify. `archived_trails` keeps, per trail, the last record archived and
    /// its public link (where verify takes the chain up), `archives` each month archived.
    static let version4 = """
        ALTER TABLE records RENAME TO records_v3;
        ALTER TABLE records_v3 RENAME CONSTRAINT records_pkey TO records_v3_pkey;
        ALTER INDEX records_time RENAME TO records_v3_time;
        ALTER INDEX records_login RENAME TO records_v3_login;
        ALTER INDEX records_item RENAME TO records_v3_item;
        -- The same columns, in the same order (so rows copy as they are), keyed with the time.
        CREATE TABLE records (
            LIKE records_v3 INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
            PRIMARY KEY (machine, trail, seq, unix_time)
        ) PARTITION BY RANGE (unix_time);
        CREATE TABLE records_other PARTITION OF records DEFAULT;
        CREATE INDEX records_time ON records (unix_time);
        CREATE INDEX records_machine_time ON records (machine, unix_time);
        CREATE INDEX records_login ON records (login, unix_time);
        CREATE INDEX records_item ON records (item, unix_time);

        -- Makes the monthly partitions of `months` months from `first` that do not exist yet,
        -- moving their records out of records_other; returns how many it made.
        CREATE FUNCTION touchgate_record_months(from_month date, months int) RETURNS int
        LANGUAGE plpgsql AS $$
        DECLARE
            month date;
            low double precision;
            high double precision;
            made int := 0;
        BEGIN
            FOR step IN 0 .. months - 1 LOOP
                month := (date_trunc('month', from_month) + make_interval(months => step))::date;
                CONTINUE WHEN to_regclass(format('records_%s', to_char(month, 'YYYY_MM'))) IS NOT NULL;
                low := extract(epoch FROM month::timestamp);
                high := extract(epoch FROM (month + interval '1 month')::timestamp);
                IF EXISTS (SELECT 1 FROM records_other WHERE unix_time >= low AND unix_time < high) THEN
                    ALTER TABLE records DETACH PARTITION records_other;
                    EXECUTE format('CREATE TABLE %I PARTITION OF records FOR VALUES FROM (%s) TO (%s)',
                                   format('records_%s', to_char(month, 'YYYY_MM')), low, high);
                    INSERT INTO records SELECT * FROM records_other WHERE unix_time >= low AND unix_time < high;
                    DELETE FROM records_other WHERE unix_time >= low AND unix_time < high;
                    ALTER TABLE records ATTACH PARTITION records_other DEFAULT;
                ELSE
                    EXECUTE format('CREATE TABLE %I PARTITION OF records FOR VALUES FROM (%s) TO (%s)',
                                   format('records_%s', to_char(month, 'YYYY_MM')), low, high);
                END IF;
                made := made + 1;
            END LOOP;
            RETURN made;
        END $$;
        REVOKE ALL ON FUNCTION touchgate_record_months(date, int) FROM PUBLIC;

        -- The partitions every month from the oldest record held in records_other (at most ten
        -- years back) or last month, to three months ahead: what init and publish keep.
        CREATE FUNCTION touchgate_keep_months() RETURNS int
        LANGUAGE sql AS $$
            SELECT touchgate_record_months(first_month,
                ((extract(year FROM last_month) - extract(year FROM first_month)) * 12
                 + extract(month FROM last_month) - extract(month FROM first_month))::int + 1)
            FROM (SELECT date_trunc('month', greatest(least(coalesce(min(to_timestamp(unix_time) AT TIME ZONE 'UTC'),
                                                                     now() AT TIME ZONE 'UTC'),
                                                            now() AT TIME ZONE 'UTC' - interval '1 month'),
                                                      now() AT TIME ZONE 'UTC' - interval '10 years'))::date AS first_month,
                         date_trunc('month', now() AT TIME ZONE 'UTC' + interval '3 months')::date AS last_month
                  FROM records_other WHERE unix_time > 0) AS span
        $$;
        REVOKE ALL ON FUNCTION touchgate_keep_months() FROM PUBLIC;
        INSERT INTO records SELECT * FROM records_v3;
        DROP TABLE records_v3;
        SELECT touchgate_keep_months();
        ALTER TABLE records ENABLE ROW LEVEL SECURITY;
        CREATE POLICY own_records ON records TO touchgate_shipper
            USING (machine = current_user) WITH CHECK (machine = current_user);
        GRANT SELECT, INSERT ON records TO touchgate_shipper;

        -- Per trail, the last record archived and its public link: verify takes the chain up there.
        CREATE TABLE archived_trails (
            machine text NOT NULL,
            trail bytea NOT NULL,
            through_seq bigint NOT NULL,
            chain bytea NOT NULL CHECK (octet_length(chain) = 32),
            month date NOT NULL,
            PRIMARY KEY (machine, trail)
        );
        -- Each month archived: its file's name, rows and SHA-256, and the manifest written beside it.
        CREATE TABLE archives (
            month date PRIMARY KEY,
            file text NOT NULL,
            rows bigint NOT NULL,
            sha256 bytea NOT NULL,
            manifest text NOT NULL,
            made timestamptz NOT NULL DEFAULT now()
        );
        GRANT SELECT ON archived_trails, archives TO touchgate_shipper;
        """

    /// Version 5: a batch head's checks read the month its records are in, not every month.
    /// The morning peak measured 65 heads a second on a store of 41 million records: each
    /// head's four checks (the trail's key, the first record's link, the last one's, the
    /// count) probed every monthly partition's index, most of them out of memory. The
    /// shipper now names the time its batch's records span (the first and last `unix_time`),
    /// and the checks, one query, read those partitions alone. The bounds cannot make a check
    /// pass that would fail: they only hide rows, and a head whose rows are hidden is
    /// refused as naming records not held. Machines of before (five arguments) keep working
    /// with every month read.
    ///
    /// The function plans its queries anew each call (`plan_cache_mode`), with the bounds'
    /// values: PL/pgSQL's cached generic plan, from the sixth call on, holds every partition
    /// and locks each of them and their indexes on every call, past the lock manager's fast
    /// path (measured: 4.8 ms a head alone, 1.2 ms with the plan made each time).
    static let version5 = """
        DO $do$ BEGIN
        EXECUTE format($f$
        CREATE FUNCTION touchgate_ship_batch(batch_machine text, batch_trail bytea, batch_first bigint,
                                             batch_last bigint, head text, batch_since double precision,
                                             batch_until double precision) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %I, pg_temp SET plan_cache_mode = force_custom_plan AS $$
        DECLARE
            v_key bytea;
            v_previous bytea;
            v_chain bytea;
            v_stored bigint;
            v_name text;
            v_body text;
            v_line text;
            v_held bigint;
        BEGIN
            -- A machine's role ships as itself; the role that ran init (or a superuser) may
            -- ship for any machine, as it may write any row.
            IF batch_machine IS DISTINCT FROM session_user AND session_user <> current_user
               AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = session_user) THEN
                RAISE EXCEPTION USING ERRCODE = '42501',
                    MESSAGE = format('role %%s may ship only as machine %%s', session_user, session_user);
            END IF;
            SELECT t.public_key INTO v_key FROM trails t WHERE t.machine = batch_machine AND t.trail = batch_trail;
            SELECT (array_agg(r.prev_chain) FILTER (WHERE r.seq = batch_first))[1],
                   (array_agg(r.chain) FILTER (WHERE r.seq = batch_last))[1], count(*)
              INTO v_previous, v_chain, v_stored
              FROM records r
             WHERE r.machine = batch_machine AND r.trail = batch_trail AND r.seq BETWEEN batch_first AND batch_last
               AND r.unix_time BETWEEN batch_since AND batch_until;
            IF v_key IS NULL OR v_previous IS NULL OR v_chain IS NULL OR batch_first < 1 OR batch_last < batch_first
               OR v_stored <> batch_last - batch_first + 1 THEN
                RAISE EXCEPTION USING ERRCODE = 'TG002', MESSAGE = format('the batch head names records %%s…%%s of '
                    'a trail the collector does not hold whole for machine %%s', batch_first, batch_last, batch_machine);
            END IF;
            v_name := touchgate_key_name(batch_machine);
            v_body := 'touchgate.fleet/batch/v1' || E'\\n' || 'machine ' || v_name || E'\\n'
                || 'trail ' || encode(batch_trail, 'hex') || E'\\n' || 'records ' || batch_first || ' ' || batch_last || E'\\n'
                || 'previous ' || encode(v_previous, 'hex') || E'\\n' || 'chain ' || encode(v_chain, 'hex') || E'\\n'
                || 'key ' || encode(v_key, 'hex') || E'\\n';
            v_line := substr(head, length(v_body) + 2);
            IF left(head, length(v_body) + 1) <> v_body || E'\\n'
               OR left(v_line, length(v_name) + 3) <> '— ' || v_name || ' '
               OR substr(v_line, length(v_name) + 4) !~ '^[A-Za-z0-9+/]{91}=\\n$' THEN
                RAISE EXCEPTION USING ERRCODE = 'TG002', MESSAGE = format('the batch head of records %%s…%%s is not the '
                    'one the stored rows make, signed under the name %%s', batch_first, batch_last, v_name);
            END IF;
            PERFORM set_config('lock_timeout', '15s', true);
            PERFORM 1 FROM fleet_log FOR UPDATE;
            SELECT e.leaf INTO v_held FROM log_entries e
                WHERE e.kind IN ('batch', 'shipment') AND e.machine = batch_machine AND e.trail = batch_trail
                  AND e.last_seq = batch_last AND e.first_seq <= batch_first
                ORDER BY e.leaf LIMIT 1;
            IF v_held IS NOT NULL THEN
                RETURN v_held;
            END IF;
            RETURN touchgate_log_append('batch', batch_machine, batch_trail, batch_first, batch_last, head);
        END $$;
        $f$, current_schema());

        -- A machine of before: every month is read.
        EXECUTE format($f$
        CREATE OR REPLACE FUNCTION touchgate_ship_batch(batch_machine text, batch_trail bytea, batch_first bigint,
                                                        batch_last bigint, head text) RETURNS bigint
        LANGUAGE sql SECURITY DEFINER SET search_path = %I, pg_temp AS $$
            SELECT touchgate_ship_batch(batch_machine, batch_trail, batch_first, batch_last, head,
                                        '-Infinity'::double precision, 'Infinity'::double precision)
        $$;
        $f$, current_schema());
        END $do$;
        REVOKE ALL ON FUNCTION touchgate_ship_batch(text, bytea, bigint, bigint, text, double precision, double precision)
            FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION touchgate_ship_batch(text, bytea, bigint, bigint, text, double precision, double precision)
            TO touchgate_shipper;
        """

    /// Applies the migrations `connection`'s database lacks; returns the version before.
    static func migrate(_ connection: PostgresConnection) throws(ServiceError) -> Int {
        try connection.transaction { () throws(ServiceError) -> Int in
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS schema_version (
                    version integer PRIMARY KEY,
                    applied timestamptz NOT NULL DEFAULT now()
                )
                """)
            // Two collectors initialising at once: the second waits, then finds nothing to do.
            try connection.execute("LOCK TABLE schema_version IN EXCLUSIVE MODE")
            let before = Int(try connection.execute("SELECT coalesce(max(version), 0) FROM schema_version").scalar ?? "")
                ?? 0
            for migration in migrations where migration.version > before {
                try connection.execute(migration.sql)
                try connection.execute("INSERT INTO schema_version (version) VALUES ($1)", [String(migration.version)])
            }
            return before
        }
    }
}
