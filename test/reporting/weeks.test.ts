// The weekly rollups (src/reporting/weeks.ts): which weeks a pass builds, and that a report
// reading them answers exactly what the daily rows answer, before and after late counts
// for a day a week already holds, in hash parts, and past the retention.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TUPLE_DIMENSIONS, type TupleDimension } from '../../src/base/enums.ts';
import { DAY_MS, HOUR_MS } from '../../src/base/time.ts';
import type { CountRow } from '../../src/counts/tuple.ts';
import { DuckDbReportSource, ReportEngine } from '../../src/reporting/engine.ts';
import { parseReportQuery } from '../../src/reporting/params.ts';
import { WEEKLY_ROLLUPS, daysOutside, mayHoldWeek, weekStart, weeksToBuild } from '../../src/reporting/weeks.ts';
import { RollupWriter } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';

const ms = (iso: string) => Date.parse(iso + 'T00:00:00Z');

t.test('weekStart: the UTC Monday of the week', async (t) => {
  t.equal(weekStart(ms('2026-12-06') + 5 * HOUR_MS), ms('2026-11-30'), 'a Sunday afternoon');
  t.equal(weekStart(ms('2026-11-30')), ms('2026-11-30'), 'a Monday is its own');
  t.equal(weekStart(ms('2026-12-01') - 1), ms('2026-11-30'), 'the last millisecond of a Monday');
  t.equal(weekStart(0), ms('1969-12-29'), '1 January 1970 (a Thursday)');
  t.equal(weekStart(ms('1969-12-28')), ms('1969-12-22'), 'before the epoch');
});

t.test('which weeks a pass builds, and which days a report leaves to the daily rows', async (t) => {
  const now = ms('2026-11-19') + 15 * HOUR_MS; // a Thursday
  const all = weeksToBuild(now, ms('2026-10-01'), new Map(), 100);
  t.same(all.slice(0, 2), [
    { start: ms('2026-11-16'), through: ms('2026-11-19') },
    { start: ms('2026-11-09'), through: ms('2026-11-16') },
  ], 'newest first; the current week up to today');
  t.equal(all.at(-1)!.start, ms('2026-10-05'), 'no week that began before the oldest kept day');
  t.same(weeksToBuild(now, ms('2026-10-01'), new Map([[ms('2026-11-16'), ms('2026-11-19')]]), 1), [{ start: ms('2026-11-09'), through: ms('2026-11-16') }], 'a mark up to date is left; at most max');
  t.same(weeksToBuild(ms('2026-11-16') + HOUR_MS, ms('2026-11-10'), new Map()), [], 'on a Monday the current week has no day over');
  t.same(
    daysOutside(ms('2026-11-07'), ms('2026-12-07'), [
      { start: ms('2026-11-09'), through: ms('2026-11-16') },
      { start: ms('2026-11-16'), through: ms('2026-11-23') },
      { start: ms('2026-11-30'), through: ms('2026-12-03') },
    ]),
    [
      [ms('2026-11-07'), ms('2026-11-09')],
      [ms('2026-11-23'), ms('2026-11-30')],
      [ms('2026-12-03'), ms('2026-12-07')],
    ],
  );
  t.same(daysOutside(ms('2026-11-09'), ms('2026-11-16'), [{ start: ms('2026-11-09'), through: ms('2026-11-16') }]), []);
  t.ok(mayHoldWeek(ms('2026-11-16'), ms('2026-11-17')), 'a Monday alone');
  t.notOk(mayHoldWeek(ms('2026-11-17'), ms('2026-11-23')), 'Tuesday to Sunday');
  t.ok(mayHoldWeek(ms('2026-11-17'), ms('2026-11-24')), 'Tuesday to the next Monday');
});

// The store's clock for this test: a Thursday afternoon; counts from 1 November (a Sunday).
const NOW = ms('2026-11-19') + 15 * HOUR_MS;
const FIRST_DAY = ms('2026-11-01');
const CUSTOMER = 'cust-weeks';
/** Kept days: from 20 October (so the first week built is that of 26 October). */
const RETENTION = 30;

function dims(v: Partial<Record<TupleDimension, string>>): string[] {
  const base: Partial<Record<TupleDimension, string>> = { adt: '1', dvt: '2', env: 'site' };
  return TUPLE_DIMENSIONS.map((d) => v[d] ?? base[d] ?? '');
}

/** Deterministic counts: 19 days, two hours a day, 4 publishers × 3 countries × 3 categories, two customers. */
function countRows(): CountRow[] {
  let seed = 7;
  const rnd = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 16) % n;
  };
  const rows: CountRow[] = [];
  for (let d = 0; d < 19; d++) {
    for (const h of [3, 17]) {
      for (const customerId of [CUSTOMER, 'cust-other']) {
        for (const pub of ['pub-1', 'pub-2', 'pub-3', 'pub-4']) {
          for (const geo of ['US', 'DE', 'FR']) {
            if (rnd(4) === 0) continue;
            const category = ['none', 'declared_crawler', 'denylisted'][rnd(3)]!;
            const total = 1 + rnd(50);
            const givt = category === 'declared_crawler' ? rnd(total) : 0;
            rows.push({ customerId, hour: FIRST_DAY + d * DAY_MS + h * HOUR_MS, dims: dims({ pub, geo, category }), total, givt, sivt: 0 });
          }
        }
      }
    }
  }
  return rows;
}

async function setUp(t: Test): Promise<{ store: Store; writer: RollupWriter; clock: { now: number } }> {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-weeks-'));
  const store = await Store.open(dir);
  const clock = { now: NOW };
  const writer = await RollupWriter.open(store, { flushIntervalMs: HOUR_MS, retentionDays: RETENTION, now: () => clock.now });
  t.teardown(async () => {
    await writer.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, writer, clock };
}

const REPORTS: Array<Record<string, string>> = [
  { start_date: '2026-11-01', end_date: '2026-11-19', group_by: 'pub,geo' },
  { start_date: '2026-11-02', end_date: '2026-11-15' }, // two whole weeks, no daily rows at all
  { start_date: '2026-11-03', end_date: '2026-11-19', group_by: 'category', pub: 'pub-1,pub-3' },
  { start_date: '2026-11-01', end_date: '2026-11-18', group_by: 'geo', limit: '2', offset: '1' },
  { start_date: '2026-11-02', end_date: '2026-11-19', group_by: 'pub', offset: '100' }, // past the last group: counted apart
  { start_date: '2026-11-01', end_date: '2026-11-19', group_by: 'date,pub' }, // by date: daily rows only
  { start_date: '2026-11-10', end_date: '2026-11-12', group_by: 'pub' }, // no whole week
];

/** Every report of REPORTS from the weekly-reading engine and the daily-only one. */
async function bothWays(store: Store): Promise<Array<[unknown, unknown]>> {
  const weekly = new ReportEngine(store, { retentionDays: RETENTION, now: () => NOW });
  const daily = new ReportEngine(store, { retentionDays: RETENTION, now: () => NOW, useWeeklyRollups: false });
  const out: Array<[unknown, unknown]> = [];
  for (const r of REPORTS) {
    const p = new URLSearchParams(r);
    out.push([await weekly.run(CUSTOMER, p), await daily.run(CUSTOMER, p)]);
  }
  return out;
}

async function sameAsDaily(t: Test, store: Store, what: string): Promise<void> {
  const pairs = await bothWays(store);
  pairs.forEach(([w, d], i) => t.same(w, d, `${what}: ${JSON.stringify(REPORTS[i])}`));
}

const marks = async (store: Store) =>
  (await store.all<{ s: Date; e: Date }>(`SELECT week_start AS s, through AS e FROM ${WEEKLY_ROLLUPS.built} ORDER BY s`)).map((r) => [r.s.toISOString().slice(0, 10), r.e.toISOString().slice(0, 10)]);

t.test('a report over weekly rows answers what the daily rows answer', async (t) => {
  const { store, writer } = await setUp(t);
  writer.add(countRows());
  await writer.flush();
  await writer.compact();
  t.same(await marks(store), [
    ['2026-10-26', '2026-11-02'],
    ['2026-11-02', '2026-11-09'],
    ['2026-11-09', '2026-11-16'],
    ['2026-11-16', '2026-11-19'],
  ], 'every week of the kept days, the current one up to today');
  await sameAsDaily(t, store, 'built');

  // The weekly rows are what such a report reads: a weekly row changed by hand shows.
  const p = new URLSearchParams(REPORTS[1]);
  const before = await new ReportEngine(store, { retentionDays: RETENTION, now: () => NOW }).run(CUSTOMER, p);
  await store.run(`UPDATE ${WEEKLY_ROLLUPS.table} SET total = total + 1000 WHERE customer_id = $1 AND period_start = $2::TIMESTAMP`, [CUSTOMER, '2026-11-09 00:00:00']);
  const after = await new ReportEngine(store, { retentionDays: RETENTION, now: () => NOW }).run(CUSTOMER, p);
  t.ok(after.rows[0]!.total_transactions > before.rows[0]!.total_transactions, 'the two-week report reads the weekly rows');
  await store.run(`UPDATE ${WEEKLY_ROLLUPS.table} SET total = total - 1000 WHERE customer_id = $1 AND period_start = $2::TIMESTAMP`, [CUSTOMER, '2026-11-09 00:00:00']);

  // In hash parts (past DuckDB's memory limit) too.
  const source = new DuckDbReportSource(store);
  for (const r of REPORTS.filter((r) => r.group_by)) {
    const q = parseReportQuery(new URLSearchParams(r), { nowMs: NOW, retentionDays: RETENTION, kind: 'lookups' });
    const daily = new DuckDbReportSource(store, true, 'lookups', false);
    t.same(await source.fetchParts(CUSTOMER, q, 4), await daily.fetchParts(CUSTOMER, q, 4), `in 4 parts: ${JSON.stringify(r)}`);
  }
});

t.test('late counts for a day a week holds: the week is read from daily rows until rebuilt', async (t) => {
  const { store, writer } = await setUp(t);
  writer.add(countRows());
  await writer.flush();
  await writer.compact();
  const built = await marks(store);
  // Counts of 10 November (a spool file's replay, a passing day): the week of 9 November.
  writer.add([{ customerId: CUSTOMER, hour: ms('2026-11-10') + 5 * HOUR_MS, dims: dims({ pub: 'pub-2', geo: 'US', category: 'none' }), total: 500, givt: 0, sivt: 0 }]);
  await writer.flush();
  t.same(await marks(store), built.filter(([s]) => s !== '2026-11-09'), "that week's mark went with the flush");
  await sameAsDaily(t, store, 'after the late counts');
  const whole = await new ReportEngine(store, { retentionDays: RETENTION, now: () => NOW }).run(CUSTOMER, new URLSearchParams({ start_date: '2026-11-09', end_date: '2026-11-15', pub: 'pub-2', geo: 'US' }));
  t.ok(whole.rows[0]!.total_transactions >= 500, 'the late counts are in the report');
  await writer.compact();
  t.same(await marks(store), built, 'rebuilt by the next pass');
  await sameAsDaily(t, store, 'rebuilt');
  // Counts of today and of a day no week holds yet leave the marks alone.
  writer.add([{ customerId: CUSTOMER, hour: NOW, dims: dims({ pub: 'pub-1', geo: 'US', category: 'none' }), total: 3, givt: 0, sivt: 0 }]);
  await writer.flush();
  t.same(await marks(store), built, "today's counts: no week holds today");
});

t.test('a new day moves the current week on; the retention takes whole weeks', async (t) => {
  const { store, writer, clock } = await setUp(t);
  writer.add(countRows());
  await writer.flush();
  await writer.compact();
  clock.now = NOW + DAY_MS;
  await writer.compact();
  t.same((await marks(store)).at(-1), ['2026-11-16', '2026-11-20'], 'the current week now holds Thursday');
  // The kept days now start on 11 November: the weeks that began before go.
  clock.now = ms('2026-11-11') + RETENTION * DAY_MS + HOUR_MS;
  await writer.enforceRetention();
  t.same(await marks(store), [['2026-11-16', '2026-11-20']]);
  const left = await store.all<{ p: Date }>(`SELECT DISTINCT period_start AS p FROM ${WEEKLY_ROLLUPS.table}`);
  t.same(left.map((r) => r.p.toISOString().slice(0, 10)), ['2026-11-16'], 'weekly rows of those weeks deleted');
});
