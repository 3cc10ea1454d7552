// GROUP BYs of many groups past DuckDB's memory limit. DuckDB should spill its hash table to
// disk, and at some limits does not ("Out of Memory Error"): at the default --memory-budget,
// 48 MB, one thread, a report by date,hour,pub of half a million groups, or the compaction of a
// day of a million tuples. The report engine then answers the same report in hash parts,
// each a fraction of the groups, and only when even its smallest parts do not fit does the
// customer get a 422 that says what to do (not a 500); the writer compacts in parts too
// (instead of failing every ten minutes, its deltas piling up).
import t, { type Test } from 'tap';
import { generateRollups } from '../../bench/rollup-rows.ts';
import { HttpError } from '../../src/base/errors.ts';
import { log } from '../../src/base/log.ts';
import { DuckDbReportSource, ReportEngine } from '../../src/reporting/engine.ts';
import { RollupWriter } from '../../src/reporting/writer.ts';
import { parseReportQuery } from '../../src/reporting/params.ts';
import type { Store } from '../../src/store/db.ts';
import { createCustomer } from '../../src/store/customers.ts';
import { openStore } from '../helpers/store.ts';

const DAY_MS = 86_400_000;
const LAST_DAY = Date.now() - (Date.now() % DAY_MS);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const MONTH = { start_date: day(LAST_DAY - 29 * DAY_MS), end_date: day(LAST_DAY) };

/** A store with `rows` hourly rollup rows over 31 days for one customer (bench:reporting's generator). */
async function storeWith(t: Test, rows: number): Promise<{ store: Store; customerId: string }> {
  const store = await openStore(t);
  const c = await createCustomer(store, { name: 'big', username: 'big-customer', password: 'a long password 1' });
  await generateRollups(store, c.customer_id, { rows, days: 31, hoursPerTuple: 8, lastDay: LAST_DAY });
  await store.set('threads', '1');
  await store.set('preserve_insertion_order', 'false');
  return { store, customerId: c.customer_id };
}

/** Warnings logged while fn runs. */
async function warnings<T>(fn: () => Promise<T>): Promise<{ value: T | undefined; error: unknown; warned: Array<Record<string, unknown>> }> {
  const warned: Array<Record<string, unknown>> = [];
  const saved = log.warn;
  (log as any).warn = (obj: unknown, msg?: string) => {
    warned.push({ ...(obj as object), msg });
  };
  try {
    return { value: await fn(), error: undefined, warned };
  } catch (error) {
    return { value: undefined, error, warned };
  } finally {
    (log as any).warn = saved;
  }
}

const plain = (x: unknown) => JSON.parse(JSON.stringify(x, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)));

t.test('the parts give the same rows and count as one statement', async (t) => {
  const { store, customerId } = await storeWith(t, 100_000);
  await store.set('memory_limit', "'256MB'");
  const source = new DuckDbReportSource(store);
  const cases: Record<string, string>[] = [
    { group_by: 'date,hour,pub', limit: '100' },
    { group_by: 'pub,geo', limit: '1000', offset: '250' },
    { group_by: 'geo,category', limit: '7', offset: '3' },
    { group_by: 'os', limit: '20', offset: '5000' }, // past the last group: no rows, the count still
    { group_by: 'date,hour,sid', limit: '50', offset: '20000', geo: 'US,DE', env: 'site' },
  ];
  for (const c of cases) {
    const q = parseReportQuery(new URLSearchParams({ ...MONTH, ...c }), { nowMs: Date.now(), retentionDays: 400, kind: 'lookups' });
    // (The one statement also gives each row the count, which the engine reads from the first.)
    const whole = plain(await source.fetch(customerId, q));
    for (const r of whole.rows) delete r.total_rows;
    for (const parts of [16, 128]) {
      t.same(plain(await source.fetchParts(customerId, q, parts)), whole, `${JSON.stringify(c)} in ${parts} parts`);
    }
    t.ok(whole.totalRows > 0, `${JSON.stringify(c)}: ${whole.totalRows} groups`);
  }
  // The impressions' rollups, with counters of their own (empty here: the statements still run).
  const imps = new DuckDbReportSource(store, true, 'impressions');
  const q = parseReportQuery(new URLSearchParams({ ...MONTH, group_by: 'pub,imp_status' }), { nowMs: Date.now(), retentionDays: 400, kind: 'impressions' });
  t.same(plain(await imps.fetchParts(customerId, q, 16)), plain(await imps.fetch(customerId, q)), 'impressions: the same in parts');
});

for (const [rows, mb, what] of [
  [1_000_000, 48, 'the default budget (48 MB for DuckDB), half a million groups'],
  [200_000, 8, '8 MB, 180 000 groups'],
] as const) {
  t.test(`past DuckDB's memory limit (${what}): answered in parts, as the whole would be`, async (t) => {
    const { store, customerId } = await storeWith(t, rows);
    const params = new URLSearchParams({ ...MONTH, group_by: 'date,hour,pub', limit: '100', offset: '1000' });
    await store.set('memory_limit', "'512MB'");
    const reference = plain(await new ReportEngine(store, { retentionDays: 400 }).run(customerId, params));
    await store.set('memory_limit', `'${mb}MB'`);
    const { value, error, warned } = await warnings(() => new ReportEngine(store, { retentionDays: 400 }).run(customerId, params));
    t.error(error, 'no error');
    t.same(plain(value), reference, `the same page and total_rows (${reference.meta.total_rows}) as with 512 MB`);
    t.equal(reference.rows.length, 100, 'a full page');
    t.equal(warned.length, 1, 'one warning: this DuckDB did not manage it in one statement');
    t.match(warned[0], { groupBy: ['date', 'hour', 'pub'], groups: reference.meta.total_rows, msg: /answered in parts.*--memory-budget/ }, 'the warning says what happened and what to change');
  });
}

t.test('too little memory even for the parts: a 422 that says what to do', async (t) => {
  const { store, customerId } = await storeWith(t, 200_000);
  await store.set('memory_limit', "'2MB'");
  const params = new URLSearchParams({ ...MONTH, group_by: 'date,hour,pub' });
  const { error } = await warnings(() => new ReportEngine(store, { retentionDays: 400 }).run(customerId, params));
  t.ok(error instanceof HttpError, 'an HttpError');
  t.match(error, { status: 422, code: 'unprocessable', message: /too many groups for the memory the server gives reports .*shorter date range.*--memory-budget/ });
  // The store is still usable: a small report answers.
  await store.set('memory_limit', "'64MB'");
  const small = await new ReportEngine(store, { retentionDays: 400 }).run(customerId, new URLSearchParams({ ...MONTH, group_by: 'geo' }));
  t.equal(small.meta.total_rows, 20, 'a small report afterwards');
});

t.test("compacting a day of a million tuples past DuckDB's memory limit (48 MB): done in parts", async (t) => {
  const { store } = await storeWith(t, 0);
  // A delta row for each of a million tuples of today, and a second one (a later flush's) for a tenth of them, over five customers.
  await store.run(
    `INSERT INTO rollups_daily BY NAME SELECT 'customer-' || (k % 5) AS customer_id, $day::TIMESTAMP AS period_start,
       'pub-' || (k % 5000) AS pub, 'ssp-' || (k % 37) || '.example' AS sid, '' AS app, 'site-' || (k // 5000) || '.example' AS dmn,
       'node-1' AS node, 1::SMALLINT AS adt, 'US' AS geo, 2::SMALLINT AS dvt, 'ios' AS os, 'safari' AS browser, 'site' AS env,
       '' AS cmp, 'adv-' || (k % 300) AS adv, '' AS p1, '' AS p2, '' AS p3, '' AS p4, '' AS p5,
       CASE WHEN k % 7 = 0 THEN 'data_center' ELSE 'none' END AS category, 1 + d AS total, CASE WHEN k % 7 = 0 THEN 1 ELSE 0 END AS givt, 0 AS sivt
     FROM range(1000000) t(k), range(2) dd(d) WHERE d = 0 OR k % 10 = 0`,
    { day: new Date(LAST_DAY).toISOString().replace('T', ' ').slice(0, 19) },
  );
  const sums = () => store.one<{ rows: bigint; total: bigint; givt: bigint }>('SELECT count(*) AS rows, sum(total)::BIGINT AS total, sum(givt)::BIGINT AS givt FROM rollups_daily');
  const before = plain(await sums());
  t.same(before, { rows: 1_100_000, total: 1_200_000, givt: 142_858 + 14_286 }, 'a row a tuple and a tenth with two, before');
  await store.set('memory_limit', "'48MB'");
  const w = await RollupWriter.open(store, { flushIntervalMs: 3_600_000, retentionDays: 400, now: () => LAST_DAY + 3_600_000 });
  t.teardown(() => w.close());
  const { value, error, warned } = await warnings(() => w.compact());
  t.error(error, 'no error');
  t.equal(value, 1, 'the day rewritten');
  t.same(plain(await sums()), { ...before, rows: 1_000_000 }, 'one row a tuple after, the same sums');
  t.equal(warned.length, 1, 'one warning: this DuckDB did not manage it in one statement');
  t.match(warned[0], { day: new Date(LAST_DAY).toISOString(), parts: 16, msg: /compacting a period .* in parts.*--memory-budget/ });
});
