// Fleet benchmark, two parts, one run:
//  1. Reports: ≥ 10 M hourly rollup rows for one customer over 31 days, generated once in
//     DuckDB and loaded as they are into ClickHouse (daily rows derived on each side, both
//     compacted); then the 30-day report grouped by pub,geo through the real ReportEngine
//     with each ReportSource, repeated; prints p50/p95 for DuckDB and for ClickHouse, and
//     the same report forced onto the hourly rows.
//  2. Edge isolation: a full instance and an edge on a real ClickHouse; lookup p99 on the
//     edge at a fixed rate with ClickHouse running, then killed (the edge spools and retries
//     every flush), then back; prints the ratio (target: does not move, < 1.5×).
// ClickHouse is started here (Debian's clickhouse-server, as the tests do) unless
// --clickhouse-url names one (its database is then used as is: give a scratch one).
//   node --import tsx bench/fleet.ts [--rows 10000000] [--runs 15] [--rate 2000] [--duration 8] [--clickhouse-url URL]
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, type Config } from '../src/base/config.ts';
import { TUPLE_DIMENSIONS } from '../src/base/enums.ts';
import { ClickHouse } from '../src/fleet/clickhouse.ts';
import { ClickHouseReportSource } from '../src/fleet/reports.ts';
import { migrateClickHouse } from '../src/fleet/schema.ts';
import { parseClickHouseUrl } from '../src/base/clickhouse-url.ts';
import { KEY_COLUMNS_SQL, ROLLUP_COLUMNS, ROLLUP_TABLES } from '../src/reporting/columns.ts';
import { ReportEngine } from '../src/reporting/engine.ts';
import { storeThreads } from '../src/reporting/service.ts';
import { startServer } from '../src/server/serve.ts';
import { createCustomer } from '../src/store/customers.ts';
import { Store } from '../src/store/db.ts';
import { startClickHouse, type ClickHouseServer } from '../test/helpers/clickhouse.ts';
import { lookupLoad } from './lookup-load.ts';
import { numArg, strArg } from './processes.ts';

const urlArg = strArg('clickhouse-url', '') || undefined;
const ROWS = numArg('rows', 10_000_000);
const RUNS = numArg('runs', 15);
const RATE = numArg('rate', 2000);
const DURATION = numArg('duration', 8);
const DAYS = 31;
const HOURS_PER_TUPLE = 8;
const DAY_MS = 86_400_000;

/** The rollup columns by name (a dimension added later is the table's last column, after the counters). */
const COLUMN_LIST = ROLLUP_COLUMNS.map((c) => `"${c}"`).join(', ');
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const today = Date.now() - (Date.now() % DAY_MS);
const REPORT = { start_date: isoDay(today - 29 * DAY_MS), end_date: isoDay(today), group_by: 'pub,geo', limit: '100' };

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(1);
}

/**
 * Hourly rows in DuckDB: K distinct tuples (p1 tells them apart), each seen in HOURS_PER_TUPLE hours of every day
 * ((5k + 3j) mod 24 is distinct for j < 8), then daily rows summed from them.
 */
async function generateDuckDb(store: Store, customerId: string): Promise<{ hourly: number; daily: number }> {
  if (TUPLE_DIMENSIONS.length !== 19) throw new Error(`the generator lists 19 tuple dimensions, the tuple has ${TUPLE_DIMENSIONS.length}: update it`);
  const k = Math.ceil(ROWS / (DAYS * HOURS_PER_TUPLE));
  const geos = "['US','DE','FR','GB','ES','IT','NL','BR','IN','JP','CA','AU','MX','PL','SE','NO','DK','FI','BE','AT']";
  await store.run(
    `INSERT INTO ${ROLLUP_TABLES.hour} (${COLUMN_LIST})
     SELECT $cid, $from::TIMESTAMP + to_hours(d * 24 + (k * 5 + j * 3) % 24),
       'pub-' || (k * 7919 % 2000), 'ssp-' || (k % 30) || '.example',
       CASE WHEN k % 3 = 0 THEN 'com.example.app' || (k % 500) ELSE '' END, '', 'node-' || (k % 8),
       (1 + k % 4)::SMALLINT, ${geos}[1 + (k * 31 % 20)::INT], (1 + k % 8)::SMALLINT,
       ['windows','ios','android','mac os','linux'][1 + (k % 5)::INT], ['chrome','safari','firefox','edge'][1 + (k % 4)::INT],
       CASE WHEN k % 3 = 0 THEN 'app' ELSE 'site' END, '', 'adv-' || (k % 200), 'p1-' || k, '', '', '', '',
       ['none','data_center','declared_crawler','anonymizing_proxy'][1 + (k % 4)::INT],
       1 + (k * 13 + d * 7 + j) % 200, (k + d + j) % 3, (k * 3 + d + j) % 4
     FROM range(${DAYS}) dd(d), range(${HOURS_PER_TUPLE}) jj(j), range(${k}) kk(k)`,
    { cid: customerId, from: new Date(today - (DAYS - 1) * DAY_MS).toISOString().replace('T', ' ').slice(0, 19) },
  );
  await store.run(
    `INSERT INTO ${ROLLUP_TABLES.day} (${COLUMN_LIST}) SELECT ${KEY_COLUMNS_SQL.replace('"period_start"', "date_trunc('day', period_start)")},
       sum(total), sum(givt), sum(sivt) FROM ${ROLLUP_TABLES.hour} GROUP BY ALL`,
  );
  await store.run('CHECKPOINT');
  const n = async (t: string) => Number((await store.one<{ n: bigint }>(`SELECT count(*) AS n FROM ${t}`))!.n);
  return { hourly: await n(ROLLUP_TABLES.hour), daily: await n(ROLLUP_TABLES.day) };
}

/** The same hourly rows into ClickHouse, a day at a time as CSV; daily rows and merges done there. */
async function loadClickHouse(store: Store, ch: ClickHouse, http: string, dir: string): Promise<{ hourly: number; daily: number }> {
  const cols = ROLLUP_COLUMNS.map((c) => (c === 'period_start' ? "strftime(period_start, '%Y-%m-%d %H:%M:%S')" : `"${c}"`)).join(', ');
  const insert = `INSERT INTO ${ch.database}.${ROLLUP_TABLES.hour} (${ROLLUP_COLUMNS.join(', ')}) FORMAT CSV`;
  const auth = { 'X-ClickHouse-User': ch.target.username, 'X-ClickHouse-Key': ch.target.password };
  for (let d = 0; d < DAYS; d++) {
    const file = join(dir, `day-${d}.csv`);
    const from = new Date(today - (DAYS - 1 - d) * DAY_MS).toISOString().replace('T', ' ').slice(0, 19);
    await store.run(
      `COPY (SELECT ${cols} FROM ${ROLLUP_TABLES.hour} WHERE period_start >= $from::TIMESTAMP AND period_start < $from::TIMESTAMP + INTERVAL 1 DAY) TO '${file}' (FORMAT CSV, HEADER false)`,
      { from },
    );
    if (statSync(file).size === 0) continue;
    const res = await fetch(`${http}/?query=${encodeURIComponent(insert)}`, {
      method: 'POST',
      headers: auth,
      body: createReadStream(file) as unknown as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    if (!res.ok) throw new Error(`ClickHouse load failed: ${res.status} ${(await res.text()).slice(0, 300)}`);
    rmSync(file);
  }
  const keys = ROLLUP_COLUMNS.slice(0, -3).map((c) => (c === 'period_start' ? 'toStartOfDay(period_start)' : c)).join(', ');
  await ch.command(`INSERT INTO ${ROLLUP_TABLES.day} (${ROLLUP_COLUMNS.join(', ')}) SELECT ${keys}, sum(total), sum(givt), sum(sivt) FROM ${ROLLUP_TABLES.hour} GROUP BY ${keys}`);
  for (const t of Object.values(ROLLUP_TABLES)) await ch.command(`OPTIMIZE TABLE ${t} FINAL`);
  const n = async (t: string) => Number((await ch.rows<{ n: string }>(`SELECT count() AS n FROM ${t}`))[0]!.n);
  return { hourly: await n(ROLLUP_TABLES.hour), daily: await n(ROLLUP_TABLES.day) };
}

async function timeReport(engine: ReportEngine, customerId: string, runs: number) {
  const params = new URLSearchParams(REPORT);
  const first = await engine.run(customerId, params);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await engine.run(customerId, params);
    times.push(performance.now() - t0);
  }
  return { p50_ms: pct(times, 0.5), p95_ms: pct(times, 0.95), groups: first.meta.total_rows, first: first.rows[0] };
}

/** A fixed, varied set of valid lookups for the edge (deterministic, so runs compare). */
function edgePaths(partnerId: string, key: string, n: number): string[] {
  const uas = [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
    'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
  ];
  return Array.from({ length: n }, (_, i) => {
    const ip = `${[73, 86, 81, 24][i % 4]}.${(i * 37) % 256}.${(i * 11) % 256}.${1 + (i % 250)}`;
    return (
      `/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1&p=${partnerId}&k=${key}&pub=pub-${i % 40}&node=edge-bench` +
      `&ip=${ip}&ua=${encodeURIComponent(uas[i % uas.length]!)}&uid=u-${i % 3000}&sid=exchange1.example&adt=1&dvt=2&geo=us`
    );
  });
}

async function edgeIsolation(local: ClickHouseServer | null, url: string) {
  const dirs = [mkdtempSync(join(tmpdir(), 'ivtd-bench-full-')), mkdtempSync(join(tmpdir(), 'ivtd-bench-edge-'))];
  const base = (dir: string): Config => ({ ...resolveConfig({}, {}), dataDir: dir, prebidPort: 0, apiPort: 0, reportingPort: 0, metricsPort: 0, logLevel: 'silent', clickhouseUrl: url });
  const full = await startServer(base(dirs[0]!));
  const edge = await startServer({ ...base(dirs[1]!), role: 'edge' });
  try {
    const c = await createCustomer(full.store, { name: 'bench', username: 'bench-edge', password: 'bench-password-1' });
    await full.refreshKeys();
    full.fleet!.keysChanged();
    const paths = edgePaths(c.partner_id, c.prebid_key, 1000);
    const deadline = Date.now() + 15_000;
    while ((await fetch(`http://127.0.0.1:${edge.ports.prebid}${paths[0]}`)).status !== 200) {
      if (Date.now() > deadline) throw new Error('the edge never accepted the published key');
      await new Promise((r) => setTimeout(r, 200));
    }
    const measure = (seconds = DURATION) => lookupLoad({ port: edge.ports.prebid, paths, rate: RATE, seconds, autocannon: true });
    await measure(2); // warm-up
    const running = await measure();
    if (!local) return { skipped: 'ClickHouse given by URL: not stopped by this bench', running };
    await local.kill();
    const stopped = await measure();
    const spooled = edge.fleet!.writer.stats().spoolBatches;
    await local.start();
    await edge.reporting!.flush();
    const back = await measure();
    return {
      rate: RATE,
      load_average_1m: +loadavg()[0]!.toFixed(2),
      running,
      stopped,
      back,
      spooled_batches_while_stopped: spooled,
      p99_ratio_autocannon: +(stopped.autocannon!.p99 / Math.max(running.autocannon!.p99, 1)).toFixed(2),
      p99_ratio_paced: +(stopped.paced.p99Ms / running.paced.p99Ms).toFixed(2),
    };
  } finally {
    await edge.stop();
    await full.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const local = urlArg ? null : await startClickHouse({ timezone: 'UTC' });
  const url = urlArg ?? local!.url('bench');
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-bench-fleet-'));
  try {
    const ch = new ClickHouse(parseClickHouseUrl(url), { requestTimeoutMs: 600_000 });
    await migrateClickHouse(ch);
    const store = await Store.open(dir);
    const customer = await createCustomer(store, { name: 'bench', username: 'bench', password: 'bench-password-1' });
    let t0 = performance.now();
    const duck = await generateDuckDb(store, customer.customer_id);
    const genS = +((performance.now() - t0) / 1000).toFixed(1);
    t0 = performance.now();
    const http = parseClickHouseUrl(url).origin;
    const chRows = await loadClickHouse(store, ch, http, dir);
    const loadS = +((performance.now() - t0) / 1000).toFixed(1);
    console.log(`rows      DuckDB ${duck.hourly} hourly / ${duck.daily} daily (${genS} s); ClickHouse ${chRows.hourly} hourly / ${chRows.daily} daily (loaded in ${loadS} s)`);
    if (duck.hourly !== chRows.hourly || duck.daily !== chRows.daily) throw new Error('the two stores do not hold the same rows');

    await store.run(`SET threads = ${storeThreads(1)}`);
    const opts = { retentionDays: 400 };
    const result = {
      duckdb: await timeReport(new ReportEngine(store, opts), customer.customer_id, RUNS),
      clickhouse: await timeReport(new ReportEngine(new ClickHouseReportSource(ch), opts), customer.customer_id, RUNS),
      duckdb_hourly: await timeReport(new ReportEngine(store, { ...opts, useDailyRollups: false }), customer.customer_id, Math.min(RUNS, 8)),
      clickhouse_hourly: await timeReport(new ReportEngine(new ClickHouseReportSource(ch, false), opts), customer.customer_id, Math.min(RUNS, 8)),
    };
    if (JSON.stringify(result.duckdb.first) !== JSON.stringify(result.clickhouse.first)) throw new Error('the two engines disagree on the first row');
    for (const [name, r] of Object.entries(result)) {
      console.log(`report    ${name.padEnd(18)} 30 days by pub,geo (${r.groups} groups): p50 ${r.p50_ms} ms, p95 ${r.p95_ms} ms`);
    }
    store.close();
    await ch.close();

    const isolation = await edgeIsolation(local, url);
    if (!('skipped' in isolation)) {
      console.log(
        `edge      ${RATE} req/s, lookup p99 ClickHouse running → stopped → back: autocannon ${isolation.running.autocannon!.p99} → ${isolation.stopped.autocannon!.p99} → ${isolation.back.autocannon!.p99} ms, ` +
          `paced ${isolation.running.paced.p99Ms} → ${isolation.stopped.paced.p99Ms} → ${isolation.back.paced.p99Ms} ms (ratio stopped/running ${isolation.p99_ratio_paced}); ${isolation.spooled_batches_while_stopped} batches spooled meanwhile`,
      );
    }
    const strip = (r: { first: unknown }) => ({ ...r, first: undefined });
    console.log(
      JSON.stringify({
        bench: 'fleet',
        rows: { hourly: duck.hourly, daily: duck.daily, days: DAYS, generate_s: genS, clickhouse_load_s: loadS },
        reports: Object.fromEntries(Object.entries(result).map(([k, v]) => [k, strip(v)])),
        isolation,
        targets: { p99_ratio: '< 1.5 (must not move)' },
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await local?.destroy();
  }
}

await main();
