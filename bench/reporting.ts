// Reporting benchmark, two parts:
//  1. Query speed: ≥ 10 M hourly rollup rows for one customer over 31 days, generated in
//     SQL straight into a temp DuckDB file (each tuple seen in 8 hours of every day), the
//     daily and weekly rows derived from them as the writer's compaction would, then the
//     30-day report grouped by pub,geo through the real ReportEngine, repeated; prints
//     p50/p95 (target p95 ≤ 200 ms) beside the same report on the daily rows alone (what
//     it read before the weekly rows, src/reporting/weeks.ts), the two timed in turn, and
//     the same report forced onto the hourly rows for contrast.
//  2. Isolation: the real server (a process of its own) on that data dir; lookup latency at
//     a fixed rate against the bare uWS baseline (bench/latency.ts: wrk with µs resolution,
//     or bench/paced.ts) without and with a loop of heavy reports on the reporting port;
//     prints the p99 ratio (target < 2×) beside the bare server's on the same host.
//   node --import tsx bench/reporting.ts [--rows 10000000] [--runs 25] [--rate 2000] [--duration 8]
//        [--ivtd PATH | --checkout DIR] (the server of part 2; default this checkout through tsx)
//        [--query-only] (part 1 alone) [--baseline-checkout DIR] (part 1 also times DIR's
//        ReportEngine, e.g. a git worktree of an older commit, in turn with this one's)
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ReportEngine, type Report } from '../src/reporting/engine.ts';
import { storeThreads } from '../src/reporting/service.ts';
import { Store } from '../src/store/db.ts';
import { createCustomer } from '../src/store/customers.ts';
import { describeLatency, latencyVsBare } from './latency.ts';
import { numArg, startBare, strArg, startIvtd, targetFromArgs, thisCheckout } from './processes.ts';
import { generateRollups } from './rollup-rows.ts';
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

/** The same report on each engine in turn, `runs` times (after two warm-ups each): p50/p95 of each. */
async function timeReportsInTurn(engines: ReportEngine[], customerId: string, params: URLSearchParams, runs: number): Promise<Array<{ p50_ms: number; p95_ms: number; groups: number; rows_md5: string }>> {
  const times: number[][] = engines.map(() => []);
  const firsts: Report[] = [];
  for (const e of engines) {
    firsts.push(await e.run(customerId, params));
    await e.run(customerId, params);
  }
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < engines.length; k++) {
      const t0 = performance.now();
      await engines[k]!.run(customerId, params);
      times[k]!.push(performance.now() - t0);
    }
  }
  return engines.map((_, k) => ({
    p50_ms: percentile(times[k]!, 0.5),
    p95_ms: percentile(times[k]!, 0.95),
    groups: firsts[k]!.meta.total_rows,
    rows_md5: createHash('md5').update(JSON.stringify(firsts[k])).digest('hex'),
  }));
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
    const gen = await generateRollups(store, customer.customer_id, { rows: ROWS, days: DAYS, hoursPerTuple: HOURS_PER_TUPLE, lastDay: today });
    // Query with the thread budget the server gives DuckDB (one lookup thread).
    await store.run(`SET threads = ${storeThreads(1)}`);
    console.log(
      `generated ${gen.hourly} hourly rows (${gen.daily} daily, ${gen.weekly} weekly) over ${DAYS} days in ${gen.seconds} s (the weekly rows ${gen.weekly_s} s); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    );
    const params = new URLSearchParams(REPORT);
    const engine = new ReportEngine(store, { retentionDays: 400 });
    const dailyEngine = new ReportEngine(store, { retentionDays: 400, useWeeklyRollups: false });
    const baselineDir = strArg('baseline-checkout', '');
    const engines = [engine, dailyEngine];
    if (baselineDir) {
      // The older checkout's engine over the same store (its SQL reads the tables it knows).
      const old = (await import(pathToFileURL(join(resolve(baselineDir), 'src/reporting/engine.ts')).href)) as { ReportEngine: typeof ReportEngine };
      engines.push(new old.ReportEngine(store, { retentionDays: 400 }));
    }
    const [report, dailyOnly, baseline] = await timeReportsInTurn(engines, customer.customer_id, params, RUNS);
    if (report!.rows_md5 !== dailyOnly!.rows_md5) throw new Error('the report on the weekly rows differs from the daily rows\' answer');
    if (baseline && baseline.rows_md5 !== report!.rows_md5) throw new Error(`the report differs from ${baselineDir}'s answer`);
    const hourlyOnly = await timeReport(new ReportEngine(store, { retentionDays: 400, useDailyRollups: false }), customer.customer_id, params, Math.min(RUNS, 10));
    const query = {
      hourly_rows: gen.hourly,
      daily_rows: gen.daily,
      weekly_rows: gen.weekly,
      days: DAYS,
      generate_s: gen.seconds,
      weekly_build_s: gen.weekly_s,
      runs: RUNS,
      load_average_1m: +loadavg()[0]!.toFixed(2),
      ...report,
      daily_rows_only: dailyOnly,
      p50_ratio_vs_daily: +(report!.p50_ms / dailyOnly!.p50_ms).toFixed(2),
      p95_ratio_vs_daily: +(report!.p95_ms / dailyOnly!.p95_ms).toFixed(2),
      ...(baseline
        ? { baseline: { checkout: baselineDir, ...baseline }, p50_ratio_vs_baseline: +(report!.p50_ms / baseline.p50_ms).toFixed(2), p95_ratio_vs_baseline: +(report!.p95_ms / baseline.p95_ms).toFixed(2) }
        : {}),
      hourly_rows_only: hourlyOnly,
    };
    console.log(`query     30 days by pub,geo (${report!.groups} groups): p50 ${report!.p50_ms} ms, p95 ${report!.p95_ms} ms (target p95 <= 200)`);
    console.log(`          same report on the daily rows alone (timed in turn): p50 ${dailyOnly!.p50_ms} ms, p95 ${dailyOnly!.p95_ms} ms; answers identical`);
    if (baseline) console.log(`          ${baselineDir}'s engine (timed in turn): p50 ${baseline.p50_ms} ms, p95 ${baseline.p95_ms} ms; answer identical`);
    console.log(`          same report forced onto the hourly rows: p50 ${hourlyOnly.p50_ms} ms, p95 ${hourlyOnly.p95_ms} ms`);
    store.close();
    if (process.argv.includes('--query-only')) {
      console.log(JSON.stringify({ bench: 'reporting', query, targets: { query_p95_ms: '<= 200' } }));
      return;
    }

    // Part 2: lookups while reports run, on the real server (a process of its own) over the
    // same data, against the bare uWS baseline measured by the same client in the same run.
    const server = await startIvtd(targetFromArgs(process.argv) ?? thisCheckout(), {
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
