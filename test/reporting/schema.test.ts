// The rollup tables (migration 20, category by migration 80) and the reporting dimensions
// stay in step; a database made before the category dimension is upgraded in place.
import t from 'tap';
import { DuckDBInstance } from '@duckdb/node-api';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIMENSIONS, FILTERS, TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { ROLLUP_COLUMNS, ROLLUP_TABLES, columnType } from '../../src/reporting/columns.ts';
import { ReportEngine } from '../../src/reporting/engine.ts';
import { RollupWriter } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { DAY_MS, HOUR_MS } from '../../src/base/time.ts';

t.test('each rollup table has one column per tuple dimension, of the type the writer sends', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-schema-'));
  const store = await Store.open(dir);
  t.teardown(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  for (const table of Object.values(ROLLUP_TABLES)) {
    const cols = await store.all<{ column_name: string; data_type: string }>(
      'SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [table],
    );
    // The writer names every column, so table order is free (ALTER TABLE appends: category
    // sits after the counters); the set must be exactly the writer's.
    t.same(cols.map((c) => c.column_name).sort(), [...ROLLUP_COLUMNS].sort(), `${table}: the writer's columns, no other`);
    for (const d of TUPLE_DIMENSIONS) {
      t.equal(cols.find((c) => c.column_name === d)?.data_type, columnType(d), `${table}: ${d} type`);
    }
  }
  t.same(
    DIMENSIONS.filter((d) => !(TUPLE_DIMENSIONS as readonly string[]).includes(d)),
    ['date', 'hour'],
    'date and hour come from period_start',
  );
  t.ok(FILTERS.every((f) => (TUPLE_DIMENSIONS as readonly string[]).includes(f)), 'every filter is a stored column');
});

t.test('a database made before the category dimension is upgraded: old rows kept, reported as not recorded', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-upgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const CATEGORY_VERSION = 80;
  t.ok(MIGRATIONS.some((m) => m.version === CATEGORY_VERSION), 'migration 80 adds the category');
  const customer = '0b5e8a52-1c1e-4f3c-9d59-0000000000c1';
  const hour = Date.now() - (Date.now() % HOUR_MS);
  const today = new Date(hour).toISOString().slice(0, 10);

  // The previous schema, made the way the previous release made it (released migrations are
  // never edited), with rows in both rollup tables.
  {
    const instance = await DuckDBInstance.create(join(dir, 'ivtd.duckdb'));
    const conn = await instance.connect();
    await conn.run('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)');
    for (const m of MIGRATIONS.filter((m) => m.version < CATEGORY_VERSION)) {
      for (const stmt of m.statements) await conn.run(stmt);
      await conn.run(`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, 'before')`);
    }
    for (const [table, start] of [['rollups_hourly', hour], ['rollups_daily', hour - (hour % DAY_MS)]] as const) {
      await conn.run(
        `INSERT INTO ${table} (customer_id, period_start, pub, sid, app, dmn, node, adt, geo, dvt, os, browser, env, cmp, adv, p1, p2, p3, p4, p5, total, givt, sivt)
         VALUES ('${customer}', make_timestamp(${start * 1000}), 'pub-old', '', '', '', '', 1, 'US', 2, '', '', 'site', '', '', '', '', '', '', '', 10, 3, 2)`,
      );
    }
    conn.closeSync();
    instance.closeSync();
  }

  const store = await Store.open(dir);
  t.teardown(() => store.close());
  t.equal(await store.schemaVersion(), Math.max(...MIGRATIONS.map((m) => m.version)), 'migrated to the current version');
  for (const table of Object.values(ROLLUP_TABLES)) {
    const col = await store.one<{ data_type: string; is_nullable: string }>(
      "SELECT data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 AND column_name = 'category'",
      [table],
    );
    t.same(col, { data_type: 'VARCHAR', is_nullable: 'NO' }, `${table}: category VARCHAR NOT NULL`);
    t.same(await store.all(`SELECT pub, category, total FROM ${table}`), [{ pub: 'pub-old', category: '', total: 10n }], `${table}: the old row kept, category ''`);
  }

  // New counts carry a category; the writer appends and compacts beside the old rows.
  const writer = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  t.teardown(() => writer.close());
  const dims = (category: string) => TUPLE_DIMENSIONS.map((d) => ({ pub: 'pub-new', adt: '1', dvt: '2', env: 'site', geo: 'US', category })[d as string] ?? '');
  writer.add([
    { customerId: customer, hour, dims: dims('data_center'), total: 4, givt: 4, sivt: 0 },
    { customerId: customer, hour, dims: dims('none'), total: 6, givt: 0, sivt: 0 },
  ]);
  await writer.flush();
  await writer.flush(); // a second flush compacts the hour again: nothing is lost or doubled
  const engine = new ReportEngine(store, { retentionDays: 400 });
  for (const useDailyRollups of [true, false]) {
    const e = useDailyRollups ? engine : new ReportEngine(store, { retentionDays: 400, useDailyRollups });
    const r = await e.run(customer, new URLSearchParams({ start_date: today, end_date: today, group_by: 'category' }));
    t.same(
      r.rows.map((x) => [x.category, x.total_transactions, x.givt_transactions, x.sivt_transactions]),
      [['', 10, 3, 2], ['data_center', 4, 4, 0], ['none', 6, 0, 0]],
      `grouped by category (${useDailyRollups ? 'daily' : 'hourly'} rows): the old row as '' (not recorded)`,
    );
    const f = await e.run(customer, new URLSearchParams({ start_date: today, end_date: today, category: 'data_center,none' }));
    t.equal(f.rows[0]!.total_transactions, 10, 'a category filter leaves the unrecorded rows out');
  }
});
