// Reporting benchmark, two parts:
//  1. Query speed: ≥ 10 M hourly rollup rows for one customer over 31 days, generated in
//     SQL straight into a temp DuckDB file (each tuple seen in 8 hours of every day), the
//     daily rows derived from them as the writer's compaction would, then the 30-day
//     report grouped by pub,geo through the real ReportEngine, repeated; prints p50/p95
//     (target p95 ≤ 200 ms), and the same report forced onto the hourly rows for contrast.
//  2. Isolation: the real server (a process of its own) on that data dir; lookup latency at
//     a fixed rate against the bare uWS baseline (bench/latency.ts: wrk with µs resolution,
//     or bench/paced.ts) without and with a loop of heavy reports on the reporting port;
//     prints the p99 ratio (target < 2×) beside the bare server's on the same host.
//   node --import tsx bench/reporting.ts [--rows 10000000] [--runs 25] [--rate 2000] [--duration 8]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TUPLE_DIMENSIONS } from '../src/enums.ts';
import { KEY_COLUMNS_SQL, ROLLUP_TABLES } from '../src/reporting/columns.ts';
import { ReportEngine } from '../src/reporting/engine.ts';
import { storeThreads } from '../src/reporting/service.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';
import { describeLatency, latencyVsBare } from './latency.ts';
import { numArg, startBare, startIvtd, thisCheckout } from './processes.ts';
import { lookupPaths } from './requests.ts';
import { wrkAvailable } from './wrk.ts';

const ROWS = numArg('rows', 10_000_000);
const DAYS = 31;
const RUNS = numArg('runs', 25);
const RATE = numArg('rate', 2000);
const DURATION = numArg('duration', 8);
const HOURS_PER_TUPLE = 8;
const DAY_MS = 86_400_000;

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const today = Date.now() - (Date.now() % DAY_MS);
/** The report under test: the last 30 days (inclusive), grouped by pub and geo. */
const REPORT = { start_date: day(today - 29 * DAY_MS), end_date: day(today), group_by: 'pub,geo', limit: '100' };
/** A heavier one for the isolation loop: hourly rows, grouped by hour and publisher. */
const HOURLY_REPORT = { ...REPORT, group_by: 'date,hour,pub' };

function percentile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(1);
}

/**
 * Hourly rows for DAYS days: K tuples (fixed per customer, like real publishers and
 * countries), each seen in HOURS_PER_TUPLE distinct hours of every day; then the daily
 * rows, aggregated from the hourly ones exactly as compaction would leave them.
 */
async function generate(store: Store, customerId: string): Promise<{ hourly: number; daily: number; seconds: number }> {
  const t0 = performance.now();
  const k = Math.ceil(ROWS / (DAYS * HOURS_PER_TUPLE));
  const from = new Date(today - (DAYS - 1) * DAY_MS).toISOString().replace('T', ' ').slice(0, 19);
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
  // Hour j of a tuple's day: (7k + 3j) mod 24 is distinct for j < 8.
  await store.run(
    `INSERT INTO ${ROLLUP_TABLES.hour} SELECT $cid, $from::TIMESTAMP + to_hours(d * 24 + (k * 7 + j * 3) % 24),
       pub, sid, app, '', node, adt, geo, dvt, os, browser, env, '', adv, p1, '', '', '', '',
       1 + (k * 31 + d * 17 + j * 7) % 200, (k + d + j) % 3, (k * 5 + d + j) % 4
     FROM range(${DAYS}) dd(d), range(${HOURS_PER_TUPLE}) jj(j), bench_tuples`,
    { cid: customerId, from },
  );
  await store.run(
    `INSERT INTO ${ROLLUP_TABLES.day} SELECT ${KEY_COLUMNS_SQL.replace('"period_start"', "date_trunc('day', period_start)")},
       sum(total), sum(givt), sum(sivt) FROM ${ROLLUP_TABLES.hour} GROUP BY ALL`,
  );
  await store.run('DROP TABLE bench_tuples');
  await store.run('CHECKPOINT');
  const count = async (t: string) => Number((await store.one<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`))!.n);
  if (TUPLE_DIMENSIONS.length !== 18) throw new Error('the generator lists 18 tuple dimensions; update it');
  return { hourly: await count(ROLLUP_TABLES.hour), daily: await count(ROLLUP_TABLES.day), seconds: +((performance.now() - t0) / 1000).toFixed(1) };
}

async function timeReport(engine: ReportEngine, customerId: string, params: URLSearchParams, runs: number): Promise<{ p50_ms: number; p95_ms: number; groups: number }> {
  const first = await engine.run(customerId, params);
  await engine.run(customerId, params);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await engine.run(customerId, params);
    times.push(performance.now() - t0);
  }
  return { p50_ms: percentile(times, 0.5), p95_ms: percentile(times, 0.95), groups: first.meta.total_rows };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-reporting-'));
  try {
    // Part 1: the query engine over a large rollup table.
    const store = await Store.open(dataDir);
    const customer = await createCustomer(store, { name: 'bench', username: 'bench', password: 'bench-password-1' });
    const gen = await generate(store, customer.customer_id);
    // Query with the thread budget the server gives DuckDB (one lookup thread).
    await store.run(`SET threads = ${storeThreads(1)}`);
    console.log(`generated ${gen.hourly} hourly rows (${gen.daily} daily) over ${DAYS} days in ${gen.seconds} s`);
    const params = new URLSearchParams(REPORT);
    const engine = new ReportEngine(store, { retentionDays: 400 });
    const report = await timeReport(engine, customer.customer_id, params, RUNS);
    const hourlyOnly = await timeReport(new ReportEngine(store, { retentionDays: 400, useDailyRollups: false }), customer.customer_id, params, Math.min(RUNS, 10));
    const query = { hourly_rows: gen.hourly, daily_rows: gen.daily, days: DAYS, generate_s: gen.seconds, runs: RUNS, ...report, hourly_rows_only: hourlyOnly };
    console.log(`query     30 days by pub,geo (${report.groups} groups): p50 ${report.p50_ms} ms, p95 ${report.p95_ms} ms (target p95 <= 200)`);
    console.log(`          same report forced onto the hourly rows: p50 ${hourlyOnly.p50_ms} ms, p95 ${hourlyOnly.p95_ms} ms`);
    store.close();

    // Part 2: lookups while reports run, on the real server (a process of its own) over the
    // same data, against the bare uWS baseline measured by the same client in the same run.
    const server = await startIvtd(thisCheckout(), {
      threads: 1,
      args: ['--report-rate', '100000', '--report-burst', '100000'],
      existing: { dataDir, partnerId: customer.partner_id, key: customer.prebid_key },
    });
    const paths = lookupPaths(customer.partner_id, customer.prebid_key, 1000, 7);
    const check = await fetch(`http://127.0.0.1:${server.prebidPort}${paths[0]}`);
    const checkBody = await check.text();
    if (check.status !== 200) throw new Error(`sample lookup failed: ${check.status} ${checkBody}`);
    const bare = await startBare(Buffer.byteLength(checkBody));
    try {
      const client = wrkAvailable() ? 'wrk' : 'paced';
      const measure = (seconds = Math.max(2, Math.round(DURATION / 2))) =>
        latencyVsBare({ client, ivtdPort: server.prebidPort, barePort: bare.port, metricsPort: server.metricsPort, paths, rate: RATE, seconds, rounds: 3 });
      await measure(2); // warm-up
      const quiet = await measure();

      // The heavy loop: the daily pub,geo report and an hourly date,hour,pub report, in turn.
      const auth = 'Basic ' + Buffer.from(`${customer.customer_id}:${customer.reporting_key}`).toString('base64');
      const base = `http://127.0.0.1:${server.reportingPort}/v1/report?`;
      const urls = [base + new URLSearchParams(REPORT), base + new URLSearchParams(HOURLY_REPORT)];
      let running = true;
      const reportTimes: number[] = [];
      const loop = (async () => {
        for (let i = 0; running; i++) {
          const t0 = performance.now();
          const r = await fetch(urls[i % 2]!, { headers: { authorization: auth } });
          await r.arrayBuffer();
          if (r.status !== 200) throw new Error(`report failed: ${r.status}`);
          reportTimes.push(performance.now() - t0);
        }
      })();
      const busy = await measure();
      running = false;
      await loop;

      // The reports also take CPU from the bare server on this 2-core host: ivtd's isolation
      // is how much more its p99 moves than the bare server's.
      const isolation = {
        rate: RATE,
        client,
        load_average_1m: +loadavg()[0]!.toFixed(2),
        without_reports: quiet,
        with_reports: busy,
        reports_run: reportTimes.length,
        report_p50_ms: reportTimes.length ? percentile(reportTimes, 0.5) : null,
        p99_ratio: +(busy.ivtd.p99Ms / quiet.ivtd.p99Ms).toFixed(2),
        bare_p99_ratio: +(busy.bare.p99Ms / quiet.bare.p99Ms).toFixed(2),
      };
      console.log(`lookups   without reports: ${describeLatency(quiet)}`);
      console.log(`          with ${reportTimes.length} reports running: ${describeLatency(busy)}`);
      console.log(`          p99 with/without reports: ivtd ${isolation.p99_ratio}, bare uWS on the same host ${isolation.bare_p99_ratio} (target: ivtd < 2)`);
      console.log(JSON.stringify({ bench: 'reporting', query, isolation, targets: { query_p95_ms: '<= 200', p99_ratio: '< 2' } }));
    } finally {
      await bare.stop();
      await server.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
