// Versioned schema migrations, applied in order inside one transaction each.
// Never edit a released migration: add a new one with the next version.

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'customers, users and keys',
    statements: [
      `CREATE TABLE customers (
         customer_id VARCHAR PRIMARY KEY,
         partner_id  VARCHAR NOT NULL UNIQUE,
         name        VARCHAR NOT NULL,
         created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
       )`,
      `CREATE TABLE users (
         user_id       VARCHAR PRIMARY KEY,
         customer_id   VARCHAR NOT NULL REFERENCES customers(customer_id),
         username      VARCHAR NOT NULL UNIQUE,
         password_hash VARCHAR NOT NULL,
         disabled      BOOLEAN NOT NULL DEFAULT false,
         created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
         updated_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
       )`,
      // kind: 'prebid' | 'reporting'. key_hash = sha256 hex of the secret (keys are 192-bit random).
      // expires_at NULL = current key; set to now + grace when rotated out.
      `CREATE TABLE api_keys (
         key_id      VARCHAR PRIMARY KEY,
         customer_id VARCHAR NOT NULL REFERENCES customers(customer_id),
         kind        VARCHAR NOT NULL CHECK (kind IN ('prebid', 'reporting')),
         key_hash    VARCHAR NOT NULL UNIQUE,
         key_prefix  VARCHAR NOT NULL,
         created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
         expires_at  TIMESTAMP
       )`,
    ],
  },
  {
    version: 10,
    name: 'account API: sessions, refresh tokens, projects',
    // No foreign keys to users/customers: DuckDB has no ON DELETE CASCADE, and old
    // sessions must never block removing a user or a customer.
    statements: [
      // One row per login; a session is one refresh-token family. user_version is
      // epoch_ms(users.updated_at) at login: the session ends when the user changes.
      `CREATE TABLE sessions (
         session_id     VARCHAR PRIMARY KEY,
         user_id        VARCHAR NOT NULL,
         customer_id    VARCHAR NOT NULL,
         user_version   BIGINT NOT NULL,
         created_at     TIMESTAMP NOT NULL,
         revoked_at     TIMESTAMP,
         revoked_reason VARCHAR
       )`,
      // token_hash = sha256 hex of the opaque token. used_at is set when it is rotated out.
      `CREATE TABLE refresh_tokens (
         token_hash VARCHAR PRIMARY KEY,
         session_id VARCHAR NOT NULL,
         user_id    VARCHAR NOT NULL,
         issued_at  TIMESTAMP NOT NULL,
         expires_at TIMESTAMP NOT NULL,
         used_at    TIMESTAMP
       )`,
      // seq orders projects by creation even within one millisecond.
      'CREATE SEQUENCE projects_seq',
      `CREATE TABLE projects (
         project_id    VARCHAR PRIMARY KEY,
         customer_id   VARCHAR NOT NULL,
         seq           BIGINT NOT NULL DEFAULT nextval('projects_seq'),
         name          VARCHAR NOT NULL,
         demand_id     VARCHAR NOT NULL,
         tag           VARCHAR NOT NULL,
         scan_now      INTEGER NOT NULL CHECK (scan_now IN (0, 1)),
         times_per_day INTEGER NOT NULL CHECK (times_per_day >= 1),
         alert_pixel   VARCHAR,
         locations     VARCHAR NOT NULL,
         creative_id   VARCHAR,
         created_at    TIMESTAMP NOT NULL,
         updated_at    TIMESTAMP NOT NULL
       )`,
    ],
  },
  {
    version: 20,
    name: 'reporting: hourly and daily transaction rollups',
    // One row per (customer, period, dimension tuple) once compacted: the writer appends
    // deltas to both tables in one transaction and src/reporting/writer.ts later merges
    // duplicate rows of a period. Daily rows answer every report without `hour`. Columns
    // follow TUPLE_DIMENSIONS (test/reporting/schema.test.ts keeps them in step); '' is
    // "not given". invalid = givt + sivt, valid = total - invalid.
    statements: [
      `CREATE TABLE rollups_hourly (
         customer_id  VARCHAR NOT NULL,
         period_start TIMESTAMP NOT NULL,
         pub     VARCHAR NOT NULL,
         sid     VARCHAR NOT NULL,
         app     VARCHAR NOT NULL,
         dmn     VARCHAR NOT NULL,
         node    VARCHAR NOT NULL,
         adt     SMALLINT NOT NULL,
         geo     VARCHAR NOT NULL,
         dvt     SMALLINT NOT NULL,
         os      VARCHAR NOT NULL,
         browser VARCHAR NOT NULL,
         env     VARCHAR NOT NULL,
         cmp     VARCHAR NOT NULL,
         adv     VARCHAR NOT NULL,
         p1      VARCHAR NOT NULL,
         p2      VARCHAR NOT NULL,
         p3      VARCHAR NOT NULL,
         p4      VARCHAR NOT NULL,
         p5      VARCHAR NOT NULL,
         total   BIGINT NOT NULL,
         givt    BIGINT NOT NULL,
         sivt    BIGINT NOT NULL
       )`,
      `CREATE TABLE rollups_daily (
         customer_id  VARCHAR NOT NULL,
         period_start TIMESTAMP NOT NULL,
         pub     VARCHAR NOT NULL,
         sid     VARCHAR NOT NULL,
         app     VARCHAR NOT NULL,
         dmn     VARCHAR NOT NULL,
         node    VARCHAR NOT NULL,
         adt     SMALLINT NOT NULL,
         geo     VARCHAR NOT NULL,
         dvt     SMALLINT NOT NULL,
         os      VARCHAR NOT NULL,
         browser VARCHAR NOT NULL,
         env     VARCHAR NOT NULL,
         cmp     VARCHAR NOT NULL,
         adv     VARCHAR NOT NULL,
         p1      VARCHAR NOT NULL,
         p2      VARCHAR NOT NULL,
         p3      VARCHAR NOT NULL,
         p4      VARCHAR NOT NULL,
         p5      VARCHAR NOT NULL,
         total   BIGINT NOT NULL,
         givt    BIGINT NOT NULL,
         sivt    BIGINT NOT NULL
       )`,
    ],
  },
  {
    version: 40,
    name: 'fleet: delivery spool and the last-known pre-bid key set (src/fleet)',
    // Used only with --clickhouse-url. The spool holds rollup batches until ClickHouse has
    // both tables' copy of them: one row per batch, rows as JSON; seq orders delivery;
    // attempted is set before the first INSERT (a batch never attempted may be merged). fleet_keys is an edge's copy of the fleet's key set, so an edge that
    // restarts while ClickHouse is away still serves (version 0 rows: none pulled yet).
    statements: [
      `CREATE TABLE fleet_spool (
         batch_id    VARCHAR PRIMARY KEY,
         seq         BIGINT NOT NULL,
         created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
         rows_json   VARCHAR NOT NULL,
         row_count   INTEGER NOT NULL,
         attempted   BOOLEAN NOT NULL DEFAULT false
       )`,
      `CREATE TABLE fleet_keys (
         version       BIGINT NOT NULL,
         customer_id   VARCHAR NOT NULL,
         partner_id    VARCHAR NOT NULL,
         key_hash      VARCHAR NOT NULL,
         expires_at_ms BIGINT
       )`,
    ],
  },
  {
    version: 70,
    name: "policy: each customer's allow and deny entries and band thresholds (src/policy)",
    // One row per customer that has a policy; version grows with every change, so the
    // server recompiles only the customers whose policy changed. Values are stored in the
    // normalized form src/policy/model.ts gives them; one (kind, value) is allowed or denied, once.
    statements: [
      `CREATE TABLE policies (
         customer_id VARCHAR PRIMARY KEY,
         medium      DOUBLE,
         high        DOUBLE,
         version     BIGINT NOT NULL,
         updated_at  TIMESTAMP NOT NULL
       )`,
      `CREATE TABLE policy_entries (
         customer_id VARCHAR NOT NULL,
         kind        VARCHAR NOT NULL,
         value       VARCHAR NOT NULL,
         action      VARCHAR NOT NULL CHECK (action IN ('allow', 'deny')),
         PRIMARY KEY (customer_id, kind, value)
       )`,
    ],
  },
  {
    version: 80,
    name: 'reporting: the category dimension (why a transaction is invalid)',
    // The column goes last (ALTER TABLE can only append); the writer names its columns.
    // Rows counted before this version have '' (not recorded): their transactions, valid
    // or not, were never given a category. From now on every row has one of CATEGORIES
    // (src/signals/category.ts), 'none' for valid transactions. DuckDB adds a column
    // with a default but no constraint, so NOT NULL comes in a second step.
    statements: ['rollups_hourly', 'rollups_daily'].flatMap((table) => [
      `ALTER TABLE ${table} ADD COLUMN category VARCHAR DEFAULT ''`,
      `ALTER TABLE ${table} ALTER COLUMN category SET NOT NULL`,
    ]),
  },
  {
    version: 84,
    name: 'reporting: parts of spool files already written into the rollups',
    // A stop whose last flush failed leaves its counts in a spool file (src/reporting/
    // spool-file.ts); the next start writes each part of it in one transaction with its row
    // here, so a replay cut short (a crash, the disk again) never writes a part twice.
    statements: [
      `CREATE TABLE reporting_spool_applied (
         spool_id   VARCHAR NOT NULL,
         part       VARCHAR NOT NULL,
         applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
         PRIMARY KEY (spool_id, part)
       )`,
    ],
  },
  {
    version: 90,
    name: 'reporting: impression rollups (the beacon, docs/post-bid.md)',
    // One row per (customer, hour or day of the lookup, the lookup's dimensions, the band it
    // answered, what the beacon found); impressions and the invalid ones among them (replay,
    // mismatch, expired); `labelled_lookups`: the beacons that labelled their lookup for the
    // calibration report (src/reporting/calibration.ts). Same shape and life as
    // the lookups' rollups: delta rows compacted, deleted past the retention. The columns
    // are written out, not derived from TUPLE_DIMENSIONS: a released migration never changes.
    statements: ['imp_rollups_hourly', 'imp_rollups_daily'].map(
      (table) => `CREATE TABLE ${table} (
         customer_id  VARCHAR NOT NULL,
         period_start TIMESTAMP NOT NULL,
         pub     VARCHAR NOT NULL,
         sid     VARCHAR NOT NULL,
         app     VARCHAR NOT NULL,
         dmn     VARCHAR NOT NULL,
         node    VARCHAR NOT NULL,
         adt     SMALLINT NOT NULL,
         geo     VARCHAR NOT NULL,
         dvt     SMALLINT NOT NULL,
         os      VARCHAR NOT NULL,
         browser VARCHAR NOT NULL,
         env     VARCHAR NOT NULL,
         cmp     VARCHAR NOT NULL,
         adv     VARCHAR NOT NULL,
         p1      VARCHAR NOT NULL,
         p2      VARCHAR NOT NULL,
         p3      VARCHAR NOT NULL,
         p4      VARCHAR NOT NULL,
         p5      VARCHAR NOT NULL,
         category VARCHAR NOT NULL,
         band         VARCHAR NOT NULL,
         imp_status   VARCHAR NOT NULL,
         impressions  BIGINT NOT NULL,
         invalid_impressions BIGINT NOT NULL,
         labelled_lookups BIGINT NOT NULL
       )`,
    ),
  },
  {
    version: 91,
    name: 'feedback: labels customers give their lookups after the fact (POST /v1/feedback)',
    // One row per (customer, lid): the latest label wins. lid_tag is the lid's 64-bit tag
    // in hex (unique per lookup); lookup_at and band come from the lid, so the calibration
    // report groups labels by the band the lookup answered.
    statements: [
      `CREATE TABLE feedback_labels (
         customer_id VARCHAR NOT NULL,
         lid_tag     VARCHAR NOT NULL,
         lookup_at   TIMESTAMP NOT NULL,
         band        VARCHAR NOT NULL,
         label       VARCHAR NOT NULL CHECK (label IN ('invalid', 'valid')),
         source      VARCHAR NOT NULL,
         received_at TIMESTAMP NOT NULL,
         PRIMARY KEY (customer_id, lid_tag)
       )`,
    ],
  },
  {
    version: 92,
    name: "fleet: the impressions' spool (their rollups go to ClickHouse like the lookups')",
    // The same columns and rules as fleet_spool (migration 40): batches of impression count
    // rows waiting for ClickHouse (src/fleet/spool.ts with IMPRESSION_FLEET_ROLLUPS).
    statements: [
      `CREATE TABLE fleet_imp_spool (
         batch_id    VARCHAR PRIMARY KEY,
         seq         BIGINT NOT NULL,
         created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
         rows_json   VARCHAR NOT NULL,
         row_count   INTEGER NOT NULL,
         attempted   BOOLEAN NOT NULL DEFAULT false
       )`,
    ],
  },
  {
    version: 93,
    name: "reporting: the lookups' tuple dictionary on disk, for impressions after a restart",
    // One row per reporting tuple a lookup thread announced (src/reporting/tuple-archive.ts):
    // its hash id under the seed lid.key gives (the same in every run), customer, hour and
    // values (joined by U+001F). Only hours a beacon can still name (--imp-ttl) are kept; a
    // tuple announced again (another run, an evicted slot) may have several identical rows.
    statements: [
      `CREATE TABLE reporting_tuple_ids (
         tuple_id     BIGINT NOT NULL,
         customer_id  VARCHAR NOT NULL,
         period_start TIMESTAMP NOT NULL,
         dims         VARCHAR NOT NULL
       )`,
    ],
  },
  {
    version: 94,
    name: "reporting: the lookups' weekly rollups (src/reporting/weeks.ts)",
    // One row per (customer, UTC week from Monday, tuple): the daily rows of the week's days
    // that are over, summed by the writer's compaction pass; the columns of rollups_daily in
    // its order (category after the counters). A week's mark says which days its rows hold
    // (week_start up to through, exclusive); a report reads weekly rows only of marked weeks
    // (src/reporting/weeks.ts says why the answer stays the daily rows').
    statements: [
      `CREATE TABLE rollups_weekly (
         customer_id  VARCHAR NOT NULL,
         period_start TIMESTAMP NOT NULL,
         pub     VARCHAR NOT NULL,
         sid     VARCHAR NOT NULL,
         app     VARCHAR NOT NULL,
         dmn     VARCHAR NOT NULL,
         node    VARCHAR NOT NULL,
         adt     SMALLINT NOT NULL,
         geo     VARCHAR NOT NULL,
         dvt     SMALLINT NOT NULL,
         os      VARCHAR NOT NULL,
         browser VARCHAR NOT NULL,
         env     VARCHAR NOT NULL,
         cmp     VARCHAR NOT NULL,
         adv     VARCHAR NOT NULL,
         p1      VARCHAR NOT NULL,
         p2      VARCHAR NOT NULL,
         p3      VARCHAR NOT NULL,
         p4      VARCHAR NOT NULL,
         p5      VARCHAR NOT NULL,
         total   BIGINT NOT NULL,
         givt    BIGINT NOT NULL,
         sivt    BIGINT NOT NULL,
         category VARCHAR NOT NULL
       )`,
      `CREATE TABLE rollups_weeks_built (
         week_start TIMESTAMP NOT NULL,
         through    TIMESTAMP NOT NULL
       )`,
    ],
  },
];
