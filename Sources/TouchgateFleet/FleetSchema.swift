import TouchgateAPI

/// The collector's tables, as numbered migrations: `touchgate-collector init` applies those
/// the database lacks, in order, each in the transaction that records it in
/// `schema_version`. A migration, once released, is never edited: a change is a new one.
public enum FleetSchema {
    /// Every migration: its number and its SQL.
    public static let migrations: [(version: Int, sql: String)] = [(1, version1), (2, version2)]

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
