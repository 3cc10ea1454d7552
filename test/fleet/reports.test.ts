// Reports from ClickHouse equal reports from DuckDB: the same count rows go through the
// DuckDB writer and through the fleet's spool into a real ClickHouse, then one list of
// report requests (groupings, filters with hostile values, pages, tenancy) runs on both
// engines and must give identical answers.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse, FleetError } from '../../src/fleet/clickhouse.ts';
import { ClickHouseReportSource, reportSql } from '../../src/fleet/reports.ts';
import { migrateClickHouse } from '../../src/fleet/schema.ts';
import { FleetWriter } from '../../src/fleet/spool.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { log } from '../../src/base/log.ts';
import { ReportEngine } from '../../src/reporting/engine.ts';
import { parseReportQuery } from '../../src/reporting/params.ts';
import type { CountRow } from '../../src/counts/tuple.ts';
import { RollupWriter } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { CUSTOMER_A, CUSTOMER_B, DAY, HOUR, REPORT_VALUES, dims, reportDate } from './rows.ts';

log.level = 'silent';

const A = CUSTOMER_A;
const B = CUSTOMER_B;
const NOW = Date.now();
const TODAY = NOW - (NOW % DAY);
const date = reportDate;

const VALUES = REPORT_VALUES;

function dataset(): CountRow[] {
  const rows: CountRow[] = [];
  let i = 0;
  for (const customer of [A, B]) {
    for (let d = 0; d < 3; d++) {
      for (const h of [0, 5, 23]) {
        for (const [k, v] of VALUES.entries()) {
          i++;
          rows.push({
            customerId: customer,
            hour: TODAY - d * DAY + h * HOUR,
            dims: dims({
              pub: k % 3 === 0 ? v : `pub-${k % 4}`,
              p1: v,
              app: k % 2 ? 'com.example.app' : '',
              geo: ['US', 'DE', 'FR'][k % 3]!,
              adt: String(1 + (k % 4)),
              dvt: String(1 + (k % 8)),
              env: k % 2 ? 'app' : 'site',
              node: `bidder-${k % 2}`,
              category: ['none', 'data_center', 'declared_crawler', 'activity', ''][k % 5]!,
            }),
            total: 1 + (i % 9),
            givt: i % 4 === 0 ? 1 : 0,
            sivt: i % 6 === 0 ? 1 : 0,
          });
        }
      }
    }
  }
  return rows;
}

const from = date(TODAY - 2 * DAY);
const to = date(TODAY);
const hostileList = VALUES.slice(0, 8);

/** The requests both engines answer (customer, query string). */
const REQUESTS: Array<[string, Record<string, string>]> = [
  [A, {}],
  [A, { offset: '1' }],
  [A, { group_by: 'date' }],
  [A, { group_by: 'hour', limit: '1000' }],
  [A, { group_by: 'date,hour', limit: '1000' }],
  [A, { group_by: 'pub', limit: '1000' }],
  [A, { group_by: 'p1,pub', limit: '7', offset: '5' }],
  [A, { group_by: 'p1,pub', limit: '7', offset: '10000' }],
  [A, { group_by: 'geo,adt,dvt', limit: '1000' }],
  [A, { group_by: 'env,app,node' }],
  [A, { group_by: 'category', limit: '1000' }],
  [A, { group_by: 'category,date', category: 'data_center,activity', limit: '1000' }],
  [A, { group_by: 'pub', category: 'none', geo: 'us', limit: '1000' }],
  [A, { group_by: 'pub', pub: hostileList.join(','), limit: '1000' }],
  [A, { group_by: 'p1', p1: VALUES.join(','), limit: '1000' }],
  [A, { group_by: 'date,p1', p1: "it's,\\,x'); DROP TABLE rollups_hourly; --", geo: 'us,de', limit: '1000' }],
  [A, { group_by: 'hour', adt: '1,2', dvt: '1,3,5,7', env: 'site', limit: '1000' }],
  [A, { pub: 'pub-nope' }],
  [A, { group_by: 'pub', pub: 'pub-nope' }],
  [A, { group_by: 'date', start_date: to }],
  [B, { group_by: 'node' }],
  [B, { group_by: 'pub', pub: hostileList.join(','), limit: '1000' }],
  ['9e9e9e9e-0000-4000-8000-000000000000', { group_by: 'pub' }],
];

t.test('ClickHouse answers every report exactly as DuckDB does', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const server = await startClickHouse();
  t.teardown(() => server.destroy());
  const ch = new ClickHouse(parseClickHouseUrl(server.url('reports')));
  t.teardown(() => ch.close());
  await migrateClickHouse(ch);

  const duckDir = mkdtempSync(join(tmpdir(), 'ivtd-duck-'));
  const spoolDir = mkdtempSync(join(tmpdir(), 'ivtd-spool-'));
  const duck = await Store.open(duckDir);
  const spool = await Store.open(spoolDir);
  t.teardown(() => {
    duck.close();
    spool.close();
    rmSync(duckDir, { recursive: true, force: true });
    rmSync(spoolDir, { recursive: true, force: true });
  });

  const rows = dataset();
  const duckWriter = await RollupWriter.open(duck, { flushIntervalMs: 3_600_000, retentionDays: 400 });
  const fleetWriter = await FleetWriter.open(spool, ch, { flushIntervalMs: 3_600_000 });
  t.teardown(() => duckWriter.close());
  t.teardown(() => fleetWriter.close());
  // Two deliveries of halves: rows of one tuple arrive in two batches on both sides.
  for (const half of [rows.slice(0, rows.length / 2), rows.slice(rows.length / 2), rows.slice(0, 40)]) {
    duckWriter.add(half);
    fleetWriter.add(half);
    await duckWriter.flush();
    await fleetWriter.flush();
  }

  const retention = { retentionDays: 400 };
  const engines = {
    duckdb: new ReportEngine(duck, retention),
    clickhouse: new ReportEngine(new ClickHouseReportSource(ch), retention),
    duckdbHourly: new ReportEngine(duck, { ...retention, useDailyRollups: false }),
    clickhouseHourly: new ReportEngine(new ClickHouseReportSource(ch, false), retention),
  };
  for (const [customer, extra] of REQUESTS) {
    const params = new URLSearchParams({ start_date: from, end_date: to, ...extra });
    const label = `${customer === A ? 'A' : customer === B ? 'B' : 'stranger'} ${params.toString().slice(0, 140)}`;
    const want = await engines.duckdb.run(customer, params);
    const got = await engines.clickhouse.run(customer, params);
    t.same(got, want, label);
    t.same(await engines.clickhouseHourly.run(customer, params), await engines.duckdbHourly.run(customer, params), `${label} (hourly rows)`);
    if (extra.group_by === 'pub' && extra.pub === undefined && customer === A) t.ok(want.rows.length > 1, 'a report with rows, not only empty ones');
    if (extra.group_by === 'category') t.same(want.rows.map((r) => r.category), ['', 'activity', 'data_center', 'declared_crawler', 'none'], 'every category of the rows, unrecorded first');
  }

  t.test('tenancy: a customer never sees another customer’s rows', async (t) => {
    const params = new URLSearchParams({ start_date: from, end_date: to });
    const a = await engines.clickhouse.run(A, params);
    const b = await engines.clickhouse.run(B, params);
    const sum = (c: string) => rows.filter((r) => r.customerId === c).reduce((n, r) => n + r.total, 0);
    t.equal(a.rows[0]!.total_transactions, sum(A) + rows.slice(0, 40).filter((r) => r.customerId === A).reduce((n, r) => n + r.total, 0));
    t.equal(b.rows[0]!.total_transactions, sum(B));
  });

  t.test('the statement carries every hostile filter value as one escaped literal', async (t) => {
    const q = parseReportQuery(new URLSearchParams({ start_date: from, end_date: to, group_by: 'pub', pub: "a'b,c\\d" }), { nowMs: NOW, retentionDays: 400 });
    const sql = reportSql(A, q);
    t.match(sql, /pub IN \('a\\'b', 'c\\\\d'\)/);
    t.notMatch(sql, /;/, 'no statement separator anywhere');
  });

  t.test("ClickHouse's own errors: past its memory limit a 422 that says what to narrow, any other a 503 with its code", async (t) => {
    // An error this ClickHouse really answers (its code read from the answer), and the one a
    // query past max_memory_usage gets (which Debian's ClickHouse here does not enforce on a
    // query's own SETTINGS, so it is made by hand), each given to a report source in turn.
    const missing = await ch.report('SELECT * FROM no_such_table').catch((e: unknown) => e);
    t.match(missing, { name: 'FleetError', chCode: 60 }, 'UNKNOWN_TABLE');
    const oom = new FleetError('ClickHouse: report query failed: Code: 241, DB::Exception: Memory limit (for query) exceeded', 241, false);
    const failing = (e: unknown) => new ReportEngine(new ClickHouseReportSource({ report: () => Promise.reject(e) } as unknown as ClickHouse), retention);
    const params = new URLSearchParams({ start_date: from, end_date: to, group_by: 'pub' });
    await t.rejects(failing(oom).run(A, params), { status: 422, code: 'unprocessable', message: /too many groups .*ClickHouse.*shorter date range.*max_memory_usage/ });
    await t.rejects(failing(missing).run(A, params), { status: 503, code: 'unavailable', message: /refused this report \(its error 60; the server log has it\)/ });
  });

  t.test('ClickHouse unreachable: a 503 that says so', async (t) => {
    const gone = new ReportEngine(new ClickHouseReportSource(new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/ivtd'))), retention);
    await t.rejects(gone.run(A, new URLSearchParams({ start_date: from, end_date: to })), { status: 503, code: 'unavailable' });
  });
});
