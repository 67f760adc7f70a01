import TouchgateWire

/// The collector's tables, as numbered migrations: `touchgate-collector init` applies those
/// the database lacks, in order, each in the transaction that records it in
/// `schema_version`. A migration, once released, is never edited: a change is a new one.
public enum FleetSchema {
    /// Every migration: its number and its SQL.
    public static let migrations: [(version: Int, sql: String)] = [(1, version1)]

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
