// The fleet's tables in ClickHouse, versioned like the DuckDB migrations
// (src/store/migrations.ts): applied in order, recorded in schema_migrations, never edited
// once released. ClickHouse has no transactions, so every statement is idempotent
// (IF NOT EXISTS, or skipped when what it adds is there) and a migration interrupted
// halfway is simply run again. Two hosts migrating at once do the same harmless work
// twice (or one of them fails once on a column the other just added, and its next
// attempt finds the column and goes on).
//
// The DDL is the single-server form and keeps to what ClickHouse 18.16 and current
// releases both accept (ENGINE = …MergeTree() PARTITION BY … ORDER BY …, plain types).
// docs/fleet.md gives the replicated-cluster form (ReplicatedMergeTree + Distributed).
import type { ClickHouse } from './clickhouse.ts';
import { FleetError } from './clickhouse.ts';
import { sqlString } from './sql.ts';

/**
 * A statement that adds a column, skipped when the table has it already: ClickHouse 18.16
 * has no ADD COLUMN IF NOT EXISTS.
 */
export interface AddColumnStatement {
  sql: string;
  table: string;
  column: string;
}

export interface ClickHouseMigration {
  version: number;
  name: string;
  statements: Array<string | AddColumnStatement>;
}

/** Rollup columns of migration 1, same names and order as the DuckDB tables (migration 20 there). */
const ROLLUP_COLUMNS_DDL = `
  customer_id  String,
  period_start DateTime('UTC'),
  pub     String,
  sid     String,
  app     String,
  dmn     String,
  node    String,
  adt     Int16,
  geo     String,
  dvt     Int16,
  os      String,
  browser String,
  env     String,
  cmp     String,
  adv     String,
  p1      String,
  p2      String,
  p3      String,
  p4      String,
  p5      String,
  total   UInt64,
  givt    UInt64,
  sivt    UInt64`;

/** Columns of the impressions' rollups (migration 5): the lookups' dimensions (category too), band, imp_status, three counters. */
const IMP_ROLLUP_COLUMNS_DDL = `${ROLLUP_COLUMNS_DDL.replace(/,\s*total\s+UInt64,\s*givt\s+UInt64,\s*sivt\s+UInt64$/, '')},
  category   String,
  band       String,
  imp_status String,
  impressions         UInt64,
  invalid_impressions UInt64,
  labelled_lookups    UInt64`;

/** Every key column of migration 1: rows equal in all of them are summed by the merges (SummingMergeTree). */
const ROLLUP_KEY = '(customer_id, period_start, pub, sid, app, dmn, node, adt, geo, dvt, os, browser, env, cmp, adv, p1, p2, p3, p4, p5)';
/** Sorting key of the impressions' rollups: every dimension, so the merges sum only equal tuples. */
const IMP_ROLLUP_KEY = `${ROLLUP_KEY.slice(0, -1)}, category, band, imp_status)`;

/**
 * A new dimension column of both rollup tables, appended to the sorting key in the same
 * ALTER: SummingMergeTree sums rows equal in the sorting key and keeps any one value of a
 * column outside it, so a dimension outside the key would be merged away. ClickHouse
 * (18.16 and current) allows adding a column to the sorting key only in the ALTER that
 * adds it, and only without a default expression: existing rows get the type's default
 * ('' for String). The primary key (the index) stays the first 20 columns.
 */
function addKeyColumn(table: string, column: string, type: string, keyBefore: string): AddColumnStatement {
  const key = `${keyBefore.slice(0, -1)}, ${column})`;
  return { sql: `ALTER TABLE ${table} ADD COLUMN ${column} ${type}, MODIFY ORDER BY ${key}`, table, column };
}

export const CLICKHOUSE_MIGRATIONS: ClickHouseMigration[] = [
  {
    version: 1,
    name: 'rollups, delivery markers, key sets, bot IPs',
    statements: [
      // Hourly and daily rollups, as in DuckDB. A delivered batch also carries one marker
      // row (customer_id '#batch', pub = batch id, total 1) in the same INSERT block: it
      // lands with the batch or not at all, and tells a retry whether the batch is in.
      // Reports always filter on a real customer_id, so markers are never counted.
      `CREATE TABLE IF NOT EXISTS rollups_hourly (${ROLLUP_COLUMNS_DDL}
       ) ENGINE = SummingMergeTree() PARTITION BY toYYYYMM(period_start) ORDER BY ${ROLLUP_KEY}`,
      `CREATE TABLE IF NOT EXISTS rollups_daily (${ROLLUP_COLUMNS_DDL}
       ) ENGINE = SummingMergeTree() PARTITION BY toYYYYMM(period_start) ORDER BY ${ROLLUP_KEY}`,
      // Each publication of the live pre-bid key set is one INSERT under a new version; a
      // row with key_hash '' marks the version (so an empty set is a set too). Hashes
      // only: ClickHouse never sees a key. expires_at_ms 0 = no end.
      `CREATE TABLE IF NOT EXISTS prebid_keys (
         version       UInt64,
         published_at  DateTime('UTC'),
         customer_id   String,
         partner_id    String,
         key_hash      String,
         expires_at_ms Int64
       ) ENGINE = MergeTree() PARTITION BY toYYYYMM(published_at) ORDER BY (version, key_hash)`,
      // Each host's bot-heavy IPs, once a minute (bounded top-K), read back fleet-wide.
      `CREATE TABLE IF NOT EXISTS bot_ips (
         minute  DateTime('UTC'),
         host    String,
         ip      String,
         lookups UInt64,
         invalid UInt64
       ) ENGINE = MergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (minute, ip)`,
    ],
  },
  {
    version: 2,
    name: "customers' policies (src/fleet/policies.ts)",
    statements: [
      // Each publication of one customer's policy is one row under a new version: the whole
      // policy as JSON ({medium, high, entries}). Edges read the newest version per customer.
      `CREATE TABLE IF NOT EXISTS customer_policies (
         customer_id  String,
         version      UInt64,
         published_at DateTime('UTC'),
         policy       String
       ) ENGINE = MergeTree() PARTITION BY toYYYYMM(published_at) ORDER BY (customer_id, version)`,
    ],
  },
  {
    version: 3,
    name: 'rollups: the category dimension (why a transaction is invalid)',
    // As DuckDB's migration 80: rows delivered before it have category '' (not recorded).
    statements: ['rollups_hourly', 'rollups_daily'].map((table) => addKeyColumn(table, 'category', 'String', ROLLUP_KEY)),
  },
  {
    version: 4,
    name: 'the lookup-id secret offered by each host; the earliest is the fleet\'s (src/fleet/lid-secret.ts)',
    statements: [
      `CREATE TABLE IF NOT EXISTS lid_secrets (
         offered_at_ms UInt64,
         host          String,
         secret        String
       ) ENGINE = MergeTree() ORDER BY (offered_at_ms, host)`,
    ],
  },
  {
    version: 5,
    name: "impressions' rollups (the beacon's counts, src/fleet/spool.ts with IMPRESSION_FLEET_ROLLUPS)",
    statements: [
      // As DuckDB's imp_rollups_* (its migration 90), summed like the lookups' rollups: every
      // dimension in the sorting key. Counters: impressions, the invalid ones, and the
      // beacons that labelled their lookup (calibration). Delivered as the lookups' rollups
      // are (batches with a marker row: customer_id '#batch', pub = batch id, impressions 1).
      `CREATE TABLE IF NOT EXISTS imp_rollups_hourly (${IMP_ROLLUP_COLUMNS_DDL}
       ) ENGINE = SummingMergeTree() PARTITION BY toYYYYMM(period_start) ORDER BY ${IMP_ROLLUP_KEY}`,
      `CREATE TABLE IF NOT EXISTS imp_rollups_daily (${IMP_ROLLUP_COLUMNS_DDL}
       ) ENGINE = SummingMergeTree() PARTITION BY toYYYYMM(period_start) ORDER BY ${IMP_ROLLUP_KEY}`,
    ],
  },
  {
    version: 6,
    name: 'the lids each host saw (fleet-wide replays) and the IPs of invalid impressions (bot-IP exchange)',
    statements: [
      // Each host's first sights of lids (the tag, the lookup's second, whether that first
      // beacon was a mismatch), published every few seconds; every host loads them into its
      // seen-lids table, so a lid replayed to another host is a replay there too
      // (src/fleet/seen-lids.ts). Daily partitions, dropped after a day by the full instance.
      `CREATE TABLE IF NOT EXISTS seen_lids (
         published      DateTime('UTC'),
         host           String,
         tag_hi         UInt32,
         tag_lo         UInt32,
         at             UInt32,
         first_mismatch UInt8
       ) ENGINE = MergeTree() PARTITION BY toYYYYMMDD(published) ORDER BY (published, host)`,
      // As bot_ips, for the lookups' IPs of invalid impressions: a beacon knows the lookup's
      // IP only by its history key (the lid carries no address), which every host of the
      // fleet computes alike (its seed comes from the fleet's lid secret).
      `CREATE TABLE IF NOT EXISTS bot_ip_keys (
         minute  DateTime('UTC'),
         host    String,
         key_hi  UInt32,
         key_lo  UInt32,
         beacons UInt64,
         invalid UInt64
       ) ENGINE = MergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (minute, key_hi, key_lo)`,
    ],
  },
  {
    version: 7,
    name: 'fleet-wide activity per key (src/fleet/activity.ts)',
    statements: [
      // Each host's lookups per history key (kind 0 IP, 1 uid, 2 IFA) every second: counts
      // and two 128-bit maps of the values seen with the key (a0 a1, b0 b1). Ten-minute
      // partitions, dropped by every host once older than the minute it reads back.
      `CREATE TABLE IF NOT EXISTS activity (
         t        DateTime('UTC'),
         host     String,
         kind     UInt8,
         key_hi   UInt32,
         key_lo   UInt32,
         n        UInt32,
         bad      UInt32,
         outcomes UInt32,
         a0 UInt64, a1 UInt64, b0 UInt64, b1 UInt64
       ) ENGINE = MergeTree() PARTITION BY intDiv(toUInt32(t), 600) ORDER BY (t, kind, key_hi, key_lo)`,
      // The hosts insert here: a Buffer gathers their small inserts (one a second each) into
      // few parts of activity; a read sees the buffer and the table together. The database
      // is named as a literal ({database}, the fleet's): currentDatabase() there would be
      // evaluated again when the server restarts and attaches the table, as `default`.
      `CREATE TABLE IF NOT EXISTS activity_buffer AS activity
       ENGINE = Buffer({database}, activity, 4, 1, 2, 10000, 1000000, 1000000, 100000000)`,
      // The fleet's view, computed once an interval (by the full instance) from the last minute
      // of activity and read by every host: the busiest keys' decayed totals and maps.
      `CREATE TABLE IF NOT EXISTS activity_view (
         at       DateTime('UTC'),
         kind     UInt8,
         key_hi   UInt32,
         key_lo   UInt32,
         rate     Float64,
         burst    Float64,
         seen     Float64,
         bad      Float64,
         outcomes Float64,
         recent   Float64,
         newest   UInt32,
         a0 UInt64, a1 UInt64, b0 UInt64, b1 UInt64
       ) ENGINE = MergeTree() PARTITION BY intDiv(toUInt32(at), 600) ORDER BY (at, kind, key_hi, key_lo)`,
    ],
  },
];

export const CLICKHOUSE_SCHEMA_VERSION = Math.max(...CLICKHOUSE_MIGRATIONS.map((m) => m.version));

const LEDGER = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    UInt32,
  name       String,
  applied_at DateTime('UTC')
) ENGINE = MergeTree() ORDER BY version`;

export async function clickhouseSchemaVersion(ch: ClickHouse): Promise<number> {
  const r = await ch.rows<{ v: number | string }>('SELECT max(version) AS v FROM schema_migrations', 'schema version');
  return Number(r[0]?.v ?? 0);
}

async function hasColumn(ch: ClickHouse, table: string, column: string): Promise<boolean> {
  const r = await ch.rows<{ n: number | string }>(
    `SELECT count() AS n FROM system.columns WHERE database = currentDatabase() AND table = ${sqlString(table)} AND name = ${sqlString(column)}`,
    'schema check',
  );
  return Number(r[0]?.n ?? 0) > 0;
}

/**
 * Creates the database and applies the migrations it lacks, up to `upTo` (the current
 * version; tests make an older release's schema with a lower one). Refuses a database whose
 * schema is newer than this ivtd knows (an older binary must not write into it).
 */
export async function migrateClickHouse(ch: ClickHouse, upTo = CLICKHOUSE_SCHEMA_VERSION): Promise<number> {
  await ch.ensureDatabase();
  await ch.command(LEDGER, 'CREATE TABLE schema_migrations');
  const current = await clickhouseSchemaVersion(ch);
  if (current > CLICKHOUSE_SCHEMA_VERSION) {
    throw new FleetError(
      `ClickHouse database ${ch.database} has schema version ${current}, newer than this ivtd knows (${CLICKHOUSE_SCHEMA_VERSION}); upgrade ivtd on this host`,
      null,
      false,
    );
  }
  for (const m of CLICKHOUSE_MIGRATIONS) {
    if (m.version <= current || m.version > upTo) continue;
    for (const stmt of m.statements) {
      if (typeof stmt !== 'string' && (await hasColumn(ch, stmt.table, stmt.column))) continue;
      // {database}: the fleet's database as a checked identifier (ClickHouse's constructor checked it).
      await ch.command((typeof stmt === 'string' ? stmt : stmt.sql).replaceAll('{database}', ch.database), `migration ${m.version}`);
    }
    await ch.insert('schema_migrations', [{ version: m.version, name: m.name, applied_at: Math.floor(Date.now() / 1000) }]);
  }
  return Math.max(current, upTo);
}
