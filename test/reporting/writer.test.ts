// The rollup writer and the query engine over a real DuckDB file: merging, compaction,
// failed flushes, retention, overflow folding and awkward values.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TUPLE_DIMENSIONS, type TupleDimension } from '../../src/base/enums.ts';
import { HttpError } from '../../src/base/errors.ts';
import { OVERFLOW, TupleCounts, foldDims, tupleBytes, type CountRow } from '../../src/counts/tuple.ts';
import { ReportEngine } from '../../src/reporting/engine.ts';
import { RollupWriter } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';
import { ServiceMetrics } from '../../src/ops/metrics.ts';
import { loadBundle } from '../../src/data/bundle.ts';
import { DAY_MS, HOUR_MS } from '../../src/base/time.ts';

const NOW = Date.now();
const THIS_HOUR = NOW - (NOW % HOUR_MS);
const TODAY = new Date(NOW).toISOString().slice(0, 10);

/** A dims array in TUPLE_DIMENSIONS order from a few named values (the rest ''). */
function dims(v: Partial<Record<TupleDimension, string>> = {}): string[] {
  const base: Partial<Record<TupleDimension, string>> = { pub: 'pub-1', adt: '1', dvt: '2', env: 'site', geo: 'US' };
  return TUPLE_DIMENSIONS.map((d) => v[d] ?? base[d] ?? '');
}

function row(customerId: string, v: Partial<Record<TupleDimension, string>>, total: number, givt = 0, sivt = 0, hour = THIS_HOUR): CountRow {
  return { customerId, hour, dims: dims(v), total, givt, sivt };
}

async function openStore(t: Test): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-rollups-'));
  const store = await Store.open(dir);
  t.teardown(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

async function openWriter(t: Test, store: Store, extra: Partial<Parameters<typeof RollupWriter.open>[1]> = {}): Promise<RollupWriter> {
  // Long intervals: every flush in these tests is explicit.
  const w = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400, ...extra });
  t.teardown(() => w.close());
  return w;
}

function day(params: Record<string, string> = {}): URLSearchParams {
  return new URLSearchParams({ start_date: TODAY, end_date: TODAY, ...params });
}

async function storedRows(store: Store, table: 'rollups_hourly' | 'rollups_daily' = 'rollups_hourly'): Promise<number> {
  return Number((await store.one<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`))!.n);
}

/** A byte budget that holds `n` tuples like the widest of `samples` (budgets are bytes, not tuples). */
function bytesFor(n: number, ...samples: string[][]): number {
  return n * Math.max(...samples.map((d) => tupleBytes(d, 'cust')));
}

t.test('thread counts fold hostile cardinality into the overflow value, counting every transaction', async (t) => {
  const c = new TupleCounts(bytesFor(3, dims({ p1: 'hostile-999', adt: '2' })), { seed: 1 });
  const env = TUPLE_DIMENSIONS.indexOf('env');
  for (let i = 0; i < 1000; i++) {
    const d = dims({ p1: `hostile-${i}`, adt: String(1 + (i % 2)) });
    c.count('cust', THIS_HOUR, d, i % 10 === 0 ? 'givt' : i % 10 === 1 ? 'sivt' : 'valid');
  }
  t.ok(c.size <= 3 + 2, 'memory bounded: the cap plus one overflow tuple per enumeration combination');
  t.equal(c.folded, 997);
  t.ok(c.bytes <= c.maxBytes + 2 * tupleBytes(foldDims(dims({})), 'cust'), 'within its bytes plus the overflow tuples');
  const rows = c.take();
  t.same(
    rows.reduce((a, r) => [a[0]! + r.total, a[1]! + r.givt, a[2]! + r.sivt], [0, 0, 0]),
    [1000, 100, 100],
    'totals exact',
  );
  const folded = rows.filter((r) => r.dims[TUPLE_DIMENSIONS.indexOf('p1')] === OVERFLOW);
  t.equal(folded.length, 2, 'one overflow tuple per adt value');
  for (const r of folded) {
    t.equal(r.dims[TUPLE_DIMENSIONS.indexOf('pub')], OVERFLOW, 'free text folds');
    t.equal(r.dims[env], 'site', 'env kept');
    t.ok(['1', '2'].includes(r.dims[TUPLE_DIMENSIONS.indexOf('adt')]!), 'adt kept');
  }
  t.equal(c.size, 0, 'drained');
});

t.test('a folded tuple keeps its category: why stays exact when the free text overflows', async (t) => {
  const cat = TUPLE_DIMENSIONS.indexOf('category');
  const c = new TupleCounts(bytesFor(3, dims({ p1: 'hostile-999', category: 'declared_crawler' })), { seed: 1 });
  const kinds = [['none', 'valid'], ['data_center', 'givt'], ['anonymizing_proxy', 'sivt']] as const;
  for (let i = 0; i < 900; i++) {
    const [category, cls] = kinds[i % 3]!;
    c.count('cust', THIS_HOUR, dims({ p1: `hostile-${i}`, category }), cls);
  }
  const rows = c.take();
  const folded = rows.filter((r) => r.dims[TUPLE_DIMENSIONS.indexOf('p1')] === OVERFLOW);
  t.same(folded.map((r) => r.dims[cat]).sort(), ['anonymizing_proxy', 'data_center', 'none'], 'one overflow tuple per category, category kept');
  const byCategory = new Map<string, number>();
  for (const r of rows) byCategory.set(r.dims[cat]!, (byCategory.get(r.dims[cat]!) ?? 0) + r.total);
  t.same(Object.fromEntries(byCategory), { none: 300, data_center: 300, anonymizing_proxy: 300 }, 'counts per category exact');
});

t.test('pending counts merge deltas and fold past their budget', async (t) => {
  const p = new TupleCounts(bytesFor(2, row('a', { p1: 'x' }, 1).dims), { seed: 1 });
  p.addRows([row('a', {}, 2, 1), row('a', {}, 3, 0, 1), row('a', { p1: 'x' }, 1)]);
  t.equal(p.size, 2, 'same tuple merged');
  p.addRows([row('a', { p1: 'y' }, 4, 1, 1), row('a', { p1: 'z' }, 5), row('a', { p1: 'x' }, 1)]);
  t.equal(p.size, 3, 'y and z share one overflow tuple');
  t.equal(p.folded, 2);
  const rows = p.take();
  t.same(rows.reduce((a, r) => a + r.total, 0), 16);
  const over = rows.find((r) => r.dims[TUPLE_DIMENSIONS.indexOf('p1')] === OVERFLOW)!;
  t.same([over.total, over.givt, over.sivt], [9, 1, 1]);
  t.equal(rows.find((r) => r.dims[TUPLE_DIMENSIONS.indexOf('p1')] === 'x')!.total, 2, 'known tuples still merge past the cap');
  t.equal(p.size, 0);
});

t.test('flushes append deltas; compaction merges them and keeps every total', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  w.add([row('a', {}, 5, 1, 2), row('a', { geo: 'DE' }, 3)]);
  w.add([row('a', {}, 1)]);
  await w.flush();
  t.equal(await storedRows(store), 2, 'merged in memory before writing');
  w.add([row('a', {}, 10, 0, 4), row('b', {}, 7, 7)]);
  await w.flush();
  t.equal(await storedRows(store), 4, 'the second flush appends');
  const before = await engine.run('a', day({ group_by: 'geo' }));
  t.same(before.rows, [
    { geo: 'DE', total_transactions: 3, valid_transactions: 3, invalid_transactions: 0, sivt_transactions: 0, givt_transactions: 0, policy_transactions: 0 },
    { geo: 'US', total_transactions: 16, valid_transactions: 9, invalid_transactions: 7, sivt_transactions: 6, givt_transactions: 1, policy_transactions: 0 },
  ]);
  t.equal(await storedRows(store, 'rollups_daily'), 4);
  t.equal(await w.compact(), 2, 'the hour and its day rewritten');
  t.equal(await storedRows(store), 3, 'one row per (customer, hour, tuple)');
  t.equal(await storedRows(store, 'rollups_daily'), 3, 'one row per (customer, day, tuple)');
  t.same((await engine.run('a', day({ group_by: 'geo' }))).rows, before.rows, 'same numbers after compaction');
  t.same(
    (await engine.run('a', day({ group_by: 'geo,hour' }))).rows.map(({ hour: _h, ...r }) => r),
    before.rows,
    'the hourly table agrees',
  );
  t.equal(await w.compact(), 0, 'nothing left to compact');
  t.equal((await engine.run('b', day())).rows[0]!.givt_transactions, 7);
  t.equal(w.stats().flushes, 2);
  t.ok(w.stats().lastFlushAt! >= NOW, 'the last successful flush is stamped');
});

t.test('a failed flush writes nothing, keeps its counts, and the next one writes them once', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  w.add([row('a', {}, 4, 1)]);
  // The hourly insert succeeds, the daily one fails: the transaction must undo both.
  await store.run('ALTER TABLE rollups_daily RENAME TO rollups_away');
  await t.rejects(w.flush(), 'the flush fails while a table is gone');
  t.equal(await storedRows(store), 0, 'no half-written flush');
  t.equal(w.stats().pendingTuples, 1, 'kept in memory');
  t.equal(w.stats().failedFlushes, 1);
  t.equal(w.stats().lastFlushAt, null, 'no successful flush yet');
  w.add([row('a', {}, 2)]);
  await store.run('ALTER TABLE rollups_away RENAME TO rollups_daily');
  await w.flush();
  const want = { total_transactions: 6, valid_transactions: 5, invalid_transactions: 1, sivt_transactions: 0, givt_transactions: 1, policy_transactions: 0 };
  t.same((await engine.run('a', day())).rows[0], want);
  t.same((await engine.run('a', day({ group_by: 'hour' }))).rows[0], { hour: new Date(THIS_HOUR).getUTCHours(), ...want });
  t.equal(w.stats().pendingTuples, 0);
});

t.test('hours of one day: hourly rows per hour, one daily row, the same totals', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const dayStart = NOW - (NOW % DAY_MS);
  w.add([row('a', {}, 1, 0, 0, dayStart), row('a', {}, 2, 1, 0, dayStart + 5 * HOUR_MS), row('a', {}, 4, 0, 4, dayStart + 23 * HOUR_MS)]);
  await w.flush();
  t.equal(await storedRows(store), 3);
  t.equal(await storedRows(store, 'rollups_daily'), 1, 'merged per day as it is written');
  const byHour = await engine.run('a', day({ group_by: 'date,hour' }));
  t.same(byHour.rows.map((r) => [r.date, r.hour, r.total_transactions]), [[TODAY, 0, 1], [TODAY, 5, 2], [TODAY, 23, 4]]);
  const byDate = await engine.run('a', day({ group_by: 'date' }));
  t.same(byDate.rows, [{ date: TODAY, total_transactions: 7, valid_transactions: 2, invalid_transactions: 5, sivt_transactions: 4, givt_transactions: 1, policy_transactions: 0 }]);
});

t.test('close() writes whatever is pending', async (t) => {
  const store = await openStore(t);
  const w = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: 400 });
  w.add([row('a', {}, 9, 0, 3)]);
  await w.close();
  const engine = new ReportEngine(store, { retentionDays: 400 });
  t.equal((await engine.run('a', day())).rows[0]!.total_transactions, 9);
});

t.test('overflow tuples are reported as __overflow__ and totals stay exact', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store, { maxPendingBytes: bytesFor(5, dims({ p1: 'p-999' })) });
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const counter = new TupleCounts(bytesFor(10, dims({ p1: 'p-999' })), { seed: 1 });
  for (let i = 0; i < 500; i++) counter.count('a', THIS_HOUR, dims({ p1: `p-${i}` }), i < 50 ? 'sivt' : 'valid');
  w.add(counter.take());
  await w.flush();
  const total = await engine.run('a', day());
  t.same([total.rows[0]!.total_transactions, total.rows[0]!.sivt_transactions], [500, 50]);
  const byP1 = await engine.run('a', day({ group_by: 'p1', limit: '1000' }));
  // The thread kept 10 values and folded 490; the writer kept 5 of those 10 and folded the rest.
  t.equal(byP1.meta.total_rows, 6, 'five distinct values and the overflow value');
  const over = byP1.rows.find((r) => r.p1 === OVERFLOW)!;
  t.equal(over.total_transactions, 495);
  const filtered = await engine.run('a', day({ p1: OVERFLOW }));
  t.equal(filtered.rows[0]!.total_transactions, 495, 'the overflow value can be filtered on');
});

t.test('values with quotes, commas, newlines and other scripts survive the write exactly', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const odd = ['a"b', "it's", 'x\ny', 'back\\slash', 'ünïcødé 日本', ' spaced ', '{"json":1}', "'; DROP TABLE rollups_daily; --"];
  w.add(odd.map((v, i) => row('a', { p2: v }, i + 1)));
  await w.flush();
  const r = await engine.run('a', day({ group_by: 'p2', limit: '100' }));
  t.same(new Map(r.rows.map((x) => [x.p2, x.total_transactions])), new Map(odd.map((v, i) => [v, i + 1])));
  const f = await engine.run('a', day({ p2: "'; DROP TABLE rollups_daily; --" }));
  t.equal(f.rows[0]!.total_transactions, 8, 'filter values are bound parameters');
  t.equal(await storedRows(store, 'rollups_daily'), odd.length, 'the table is still there');
});

t.test('every value lands in its own column, hourly and daily, empty ones and a U+001F too', async (t) => {
  // The text values of a row travel joined by U+001F and are split again in SQL.
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const full = Object.fromEntries(TUPLE_DIMENSIONS.map((d, i) => [d, d === 'adt' ? '3' : d === 'dvt' ? '7' : `${d}-${i} "x",\n`])) as Record<TupleDimension, string>;
  const edges = dims({ pub: '', p5: '', category: '' });
  edges[TUPLE_DIMENSIONS.indexOf('p2')] = 'a\u001fb\u001f';
  w.add([row('a', full, 5, 1, 2), { customerId: 'b', hour: THIS_HOUR, dims: edges, total: 1, givt: 0, sivt: 0 }]);
  await w.flush();
  for (const table of ['rollups_hourly', 'rollups_daily'] as const) {
    const cols = TUPLE_DIMENSIONS.map((d) => `"${d}"`).join(', ');
    const got = await store.all<Record<string, unknown>>(`SELECT customer_id, ${cols}, total, givt, sivt FROM ${table} ORDER BY customer_id`);
    t.equal(got.length, 2, table);
    t.same(
      TUPLE_DIMENSIONS.map((d) => String(got[0]![d])),
      TUPLE_DIMENSIONS.map((d) => full[d]),
      `${table}: each of the ${TUPLE_DIMENSIONS.length} values in its own column`,
    );
    t.same([got[0]!.total, got[0]!.givt, got[0]!.sivt].map(Number), [5, 1, 2]);
    const b = got[1]!;
    t.same([b.pub, b.p5, b.category, b.geo, b.env], ['', '', '', 'US', 'site'], `${table}: empty values stay empty, the rest in place`);
    t.equal(b.p2, 'a\ufffdb\ufffd', `${table}: a U+001F left in a value is stored as U+FFFD, not a column break`);
  }
});

t.test('a flush larger than one INSERT chunk is written whole', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const rows: CountRow[] = [];
  for (let i = 0; i < 45_000; i++) rows.push(row('a', { p3: `v${i}` }, 1 + (i % 3), i % 3 === 2 ? 1 : 0));
  w.add(rows);
  await w.flush();
  const r = await engine.run('a', day());
  t.same([r.rows[0]!.total_transactions, r.rows[0]!.givt_transactions], [90_000, 15_000]);
  t.equal(await storedRows(store), 45_000);
});

t.test('rows the store refuses are quarantined, the rest of the flush is written, and reporting goes on', async (t) => {
  const store = await openStore(t);
  const w = await openWriter(t, store);
  const engine = new ReportEngine(store, { retentionDays: 400 });
  const metrics = new ServiceMetrics({ threads: 1, bundle: () => loadBundle({ dataDir: '/nonexistent', mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined }), keysLoaded: () => 0, flushStats: () => w.stats() });
  // Three rows DuckDB refuses, in three different INSERT chunks (2 000 rows each) of 4 500 good ones:
  // a SMALLINT out of range, a lone surrogate (malformed JSON), a count that is not a number.
  const good: CountRow[] = [];
  for (let i = 0; i < 4_500; i++) good.push(row('a', { p3: `v${i}` }, 1 + (i % 2), i % 2));
  const bad = [row('a', { adt: '99999' }, 7), row('a', { p2: 'broken \ud800 surrogate' }, 7), row('a', { p2: 'not a number' }, NaN)];
  const rows = [...good];
  rows.splice(10, 0, bad[0]!);
  rows.splice(2_100, 0, bad[1]!);
  rows.splice(4_400, 0, bad[2]!);
  w.add(rows);
  await w.flush(); // resolves: the refused rows do not fail the flush
  const totals = (r: Awaited<ReturnType<ReportEngine["run"]>>) => [r.rows[0]!.total_transactions, r.rows[0]!.givt_transactions];
  t.same(totals(await engine.run('a', day())), [6_750, 2_250], 'every good row counted, no refused one');
  t.equal(await storedRows(store), 4_500);
  t.match(w.stats(), { rowsQuarantined: 3, rowsWritten: 4_500, pendingTuples: 0, failedFlushes: 0, flushes: 1 });
  const text = await metrics.text();
  t.match(text, /^ivtd_reporting_rows_quarantined_total 3$/m, 'counted on /metrics');

  // The refused rows are gone for good: the next flush writes only what came since.
  w.add([row('a', { p3: 'later' }, 5)]);
  await w.flush();
  t.same(totals(await engine.run('a', day())), [6_755, 2_250]);
  t.match(w.stats(), { rowsQuarantined: 3, rowsWritten: 4_501, failedFlushes: 0, flushes: 2 });
});

t.test('retention: old rows are deleted and cannot be asked for', async (t) => {
  const store = await openStore(t);
  // Both clocks pinned to NOW: a run that crosses midnight UTC must not move the window.
  const w = await openWriter(t, store, { retentionDays: 30, now: () => NOW });
  const engine = new ReportEngine(store, { retentionDays: 30, now: () => NOW });
  const todayStart = NOW - (NOW % DAY_MS);
  w.add([
    row('a', {}, 1, 0, 0, todayStart - 31 * DAY_MS), // the day before the oldest kept day
    row('a', {}, 2, 0, 0, todayStart - 30 * DAY_MS), // the oldest kept day
    row('a', {}, 4, 0, 0, THIS_HOUR),
  ]);
  await w.flush();
  t.equal(await w.enforceRetention(), 2, 'the hourly and the daily row past retention deleted');
  t.equal(await storedRows(store), 2);
  t.equal(await storedRows(store, 'rollups_daily'), 2);
  const oldest = new Date(todayStart - 30 * DAY_MS).toISOString().slice(0, 10);
  const r = await engine.run('a', new URLSearchParams({ start_date: oldest, end_date: TODAY }));
  t.equal(r.rows[0]!.total_transactions, 6);
  const tooOld = new Date(todayStart - 31 * DAY_MS).toISOString().slice(0, 10);
  const refused = await engine.run('a', new URLSearchParams({ start_date: tooOld, end_date: TODAY })).catch((e: HttpError) => e);
  t.ok(refused instanceof HttpError && refused.status === 422, 'a day past retention is a 422');

  // The writer's clock decides; a writer opened later deletes on start.
  const later = await openWriter(t, store, { retentionDays: 30, now: () => NOW + 29 * DAY_MS });
  await later.enforceRetention();
  t.equal(await storedRows(store), 1, 'only the row of today is left a month on');
  t.equal(await storedRows(store, 'rollups_daily'), 1);
  const left = await store.one<{ total: bigint }>('SELECT total FROM rollups_hourly');
  t.equal(Number(left!.total), 4);
});
