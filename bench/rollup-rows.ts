// Rollup rows for bench:reporting, generated in SQL straight into a store's DuckDB file: K
// tuples (fixed per customer, like real publishers and countries), each seen in
// `hoursPerTuple` distinct hours of every day of `days`; then the daily rows, aggregated
// from the hourly ones as the writer's compaction leaves them, and the weekly rows, built
// from the daily ones by the writer's own code (src/reporting/weeks.ts). Every column is named
// (INSERT … BY NAME), so a column a later migration adds, such as `category`, is either
// given here or refused by DuckDB with its name: never filled by position from the wrong
// value.
import { ROLLUP_COLUMNS, ROLLUP_TABLES } from '../src/reporting/columns.ts';
import { WEEKLY_ROLLUPS, buildWeek, weeksToBuild } from '../src/reporting/weeks.ts';
import { inTransaction, type Store } from '../src/store/db.ts';

export interface RollupRowsOptions {
  /** Hourly rows wanted, about (rounded up to whole tuples). */
  rows: number;
  days: number;
  /** Distinct hours a tuple is seen in each day (at most 8: see the hour rule below). */
  hoursPerTuple: number;
  /** Start of the last day (UTC ms, a whole day): the rows cover it and the days before it. */
  lastDay: number;
}

const DAY_MS = 86_400_000;

/** Fills the rollup tables for `customerId`; returns the rows written and the time it took. */
export async function generateRollups(store: Store, customerId: string, o: RollupRowsOptions): Promise<{ hourly: number; daily: number; weekly: number; seconds: number; weekly_s: number }> {
  if (o.hoursPerTuple < 1 || o.hoursPerTuple > 8) throw new Error('hoursPerTuple: 1 to 8');
  const t0 = performance.now();
  const k = Math.ceil(o.rows / (o.days * o.hoursPerTuple));
  const from = new Date(o.lastDay - (o.days - 1) * DAY_MS).toISOString().replace('T', ' ').slice(0, 19);
  const list = (prefix: string, n: number) => `(SELECT list('${prefix}' || x) FROM range(${n}) r(x))`;
  await store.run(
    `CREATE TEMP TABLE bench_tuples AS SELECT k, h,
       ${list('pub-', 2000)}[1 + h % 2000] AS pub, ${list('ssp-', 30)}[1 + (h >> 11) % 30] || '.example' AS sid,
       CASE WHEN k % 3 = 0 THEN ${list('com.example.app', 500)}[1 + (h >> 16) % 500] ELSE '' END AS app,
       'node-' || (k % 8) AS node, (1 + (h >> 25) % 4)::SMALLINT AS adt,
       ['US','DE','FR','GB','ES','IT','NL','BR','IN','JP','CA','AU','MX','PL','SE','NO','DK','FI','BE','AT'][1 + ((h >> 28) % 20)::INT] AS geo,
       (1 + (h >> 33) % 8)::SMALLINT AS dvt,
       ['windows','ios','android','mac os','linux','chromium os'][1 + ((h >> 36) % 6)::INT] AS os,
       ['chrome','safari','firefox','edge','samsung browser'][1 + ((h >> 39) % 5)::INT] AS browser,
       CASE WHEN k % 3 = 0 THEN 'app' WHEN k % 97 = 0 THEN 'dooh' ELSE 'site' END AS env,
       ${list('adv-', 200)}[1 + (h >> 42) % 200] AS adv, ${list('p1-', 1000)}[1 + (h >> 50) % 1000] AS p1
     FROM (SELECT k, (hash(k) >> 1)::BIGINT AS h FROM range(${k}) t(k))`,
  );
  // Hour j of a tuple's day: (7k + 3j) mod 24 is distinct for j < 8. A row's category is
  // that of its invalid transactions ('none' when it has none), as the writer records it.
  await store.run(
    `INSERT INTO ${ROLLUP_TABLES.hour} BY NAME
     SELECT *, CASE WHEN givt > 0 THEN 'declared_crawler' WHEN sivt > 0 THEN 'activity' ELSE 'none' END AS category
     FROM (SELECT $cid AS customer_id, $from::TIMESTAMP + to_hours(d * 24 + (k * 7 + j * 3) % 24) AS period_start,
       pub, sid, app, '' AS dmn, node, adt, geo, dvt, os, browser, env, '' AS cmp, adv, p1, '' AS p2, '' AS p3, '' AS p4, '' AS p5,
       1 + (k * 31 + d * 17 + j * 7) % 200 AS total, (k + d + j) % 3 AS givt, (k * 5 + d + j) % 4 AS sivt
     FROM range(${o.days}) dd(d), range(${o.hoursPerTuple}) jj(j), bench_tuples)`,
    { cid: customerId, from },
  );
  await store.run(
    `INSERT INTO ${ROLLUP_TABLES.day} BY NAME
     SELECT * EXCLUDE (period_start, total, givt, sivt), date_trunc('day', period_start) AS period_start,
       sum(total) AS total, sum(givt) AS givt, sum(sivt) AS sivt
     FROM ${ROLLUP_TABLES.hour} WHERE customer_id = $cid GROUP BY ALL`,
    { cid: customerId },
  );
  await store.run('DROP TABLE bench_tuples');
  // The weeks a compaction pass today builds (every week of the rows, the current one up to today).
  const t1 = performance.now();
  const q = (c: string) => `"${c}"`;
  const week = {
    daily: ROLLUP_TABLES.day,
    weeks: WEEKLY_ROLLUPS,
    keyColumns: ROLLUP_COLUMNS.slice(0, -3).map(q).join(', '),
    sums: ROLLUP_COLUMNS.slice(-3).map((c) => `sum(${q(c)})::BIGINT AS ${q(c)}`).join(', '),
    allColumns: ROLLUP_COLUMNS.map(q).join(', '),
  };
  for (const w of weeksToBuild(o.lastDay, o.lastDay - (o.days + 6) * DAY_MS, new Map(), Infinity)) {
    await inTransaction(store, () => buildWeek(store, week, w.start, w.through, 1));
  }
  const weeklySeconds = +((performance.now() - t1) / 1000).toFixed(1);
  await store.run('CHECKPOINT');
  const count = async (t: string) => Number((await store.one<{ n: bigint }>(`SELECT count(*) AS n FROM ${t} WHERE customer_id = $cid`, { cid: customerId }))!.n);
  return {
    hourly: await count(ROLLUP_TABLES.hour),
    daily: await count(ROLLUP_TABLES.day),
    weekly: await count(WEEKLY_ROLLUPS.table),
    seconds: +((performance.now() - t0) / 1000).toFixed(1),
    weekly_s: weeklySeconds,
  };
}
