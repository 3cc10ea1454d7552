// Impressions in a fleet: the beacon's count rows go through the fleet's spool into
// ClickHouse (imp_rollups_*) exactly once, and GET /v1/report/impressions and
// /v1/report/calibration answer from ClickHouse exactly as they do from one host's DuckDB.
// One ClickHouse for the whole file.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timestampValue } from '@duckdb/node-api';
import { BANDS, IMP_STATUSES } from '../../src/base/enums.ts';
import { IMPRESSION_FLEET_ROLLUPS, MARKER_CUSTOMER, toBatches } from '../../src/reporting/batches.ts';
import { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { BatchDelivery, deliveryQueryId } from '../../src/fleet/delivery.ts';
import { ClickHouseBeaconLabels, ClickHouseReportSource, reportSql } from '../../src/fleet/reports.ts';
import { migrateClickHouse } from '../../src/fleet/schema.ts';
import { FleetWriter } from '../../src/fleet/spool.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { log } from '../../src/base/log.ts';
import { CalibrationReport } from '../../src/reporting/calibration.ts';
import { ReportEngine, type ImpressionRow } from '../../src/reporting/engine.ts';
import { parseReportQuery } from '../../src/reporting/params.ts';
import { IMPRESSION_ROLLUPS } from '../../src/reporting/service.ts';
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

/** Impression rows as the impression dictionary drains them: the lookup's dims, band, imp_status; total, invalid, labelled. */
function dataset(): CountRow[] {
  const rows: CountRow[] = [];
  let i = 0;
  for (const customer of [A, B]) {
    for (let d = 0; d < 3; d++) {
      for (const h of [0, 7, 23]) {
        for (const [k, v] of VALUES.entries()) {
          i++;
          const status = IMP_STATUSES[i % IMP_STATUSES.length]!;
          const n = 1 + (i % 5);
          rows.push({
            customerId: customer,
            hour: TODAY - d * DAY + h * HOUR,
            dims: [
              ...dims({ pub: k % 3 === 0 ? v : `pub-${k % 4}`, p1: v, geo: ['US', 'DE'][k % 2]!, adt: String(1 + (k % 3)), node: `bidder-${k % 2}`, category: k % 4 ? 'none' : '__overflow__' }),
              BANDS[(i >> 2) % 3]!,
              status,
            ],
            total: n,
            givt: status === 'valid' ? 0 : n,
            sivt: status === 'expired' ? 0 : Math.min(n, 1 + (i % 2)),
          });
        }
      }
    }
  }
  return rows;
}

const from = date(TODAY - 2 * DAY);
const to = date(TODAY);

const REQUESTS: Array<[string, Record<string, string>]> = [
  [A, {}],
  [A, { offset: '1' }],
  [A, { group_by: 'band' }],
  [A, { group_by: 'imp_status' }],
  [A, { group_by: 'band,imp_status', limit: '1000' }],
  [A, { group_by: 'date,imp_status', limit: '1000' }],
  [A, { group_by: 'hour,band', limit: '1000' }],
  [A, { group_by: 'pub,imp_status', limit: '5', offset: '3' }],
  [A, { group_by: 'pub', limit: '5', offset: '10000' }],
  [A, { group_by: 'p1', p1: VALUES.join(','), imp_status: 'replay,mismatch', limit: '1000' }],
  [A, { group_by: 'band', band: 'low', geo: 'us' }],
  [A, { group_by: 'category,imp_status', limit: '1000' }],
  [A, { group_by: 'node', imp_status: 'valid' }],
  [A, { imp_status: 'expired', band: 'high,medium' }],
  [A, { group_by: 'pub', pub: 'pub-nope' }],
  [B, { group_by: 'band,imp_status' }],
  ['9e9e9e9e-0000-4000-8000-000000000000', { group_by: 'imp_status' }],
];

/** Requests both must refuse the same way (parameters are checked before any store is asked). */
const BAD: Array<Record<string, string>> = [
  { group_by: 'bogus' },
  { imp_status: 'fine' },
  { band: 'purple' },
  { limit: '0' },
  { start_date: '2001-01-01' },
  { gadget: '1' },
];

t.test('impressions in a fleet', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const server = await startClickHouse();
  const ch = new ClickHouse(parseClickHouseUrl(server.url('imps')));
  // One teardown, in the order things depend on each other: the writers (their last
  // delivery needs ClickHouse and their spool), then the stores, the client, the server.
  const closing: Array<() => unknown> = [];
  t.teardown(async () => {
    for (const close of closing.reverse()) await close();
  });
  closing.push(() => server.destroy(), () => ch.close());
  await migrateClickHouse(ch);

  const dirs: string[] = [];
  const store = async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ivtd-imp-'));
    dirs.push(dir);
    return Store.open(dir);
  };
  const duck = await store();
  const spool = await store();
  closing.push(() => {
    duck.close();
    spool.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const rows = dataset();
  const duckWriter = await RollupWriter.open(duck, { flushIntervalMs: 3_600_000, retentionDays: 400, schema: IMPRESSION_ROLLUPS });
  const fleetWriter = await FleetWriter.open(spool, ch, { flushIntervalMs: 3_600_000, rollups: IMPRESSION_FLEET_ROLLUPS });
  closing.push(() => duckWriter.close(), () => fleetWriter.settled(), () => fleetWriter.close());
  for (const part of [rows.slice(0, rows.length / 2), rows.slice(rows.length / 2), rows.slice(0, 30)]) {
    duckWriter.add(part.map((r) => ({ ...r, dims: [...r.dims] })));
    fleetWriter.add(part.map((r) => ({ ...r, dims: [...r.dims] })));
    await duckWriter.flush();
    await fleetWriter.flush();
  }
  t.equal(fleetWriter.stats().spoolBatches, 0, 'the spool is empty: every batch delivered');
  t.equal(Number((await spool.one<{ n: bigint }>('SELECT count(*) AS n FROM fleet_imp_spool'))!.n), 0, "the impressions' own spool table is empty");
  t.equal(Number((await spool.one<{ n: bigint }>('SELECT count(*) AS n FROM fleet_spool'))!.n), 0, "the lookups' spool was never used");
  t.equal((await server.sql('SELECT count() FROM imps.rollups_hourly')).trim(), '0', 'nothing went into the lookups\' rollups');

  const retention = { retentionDays: 400, kind: 'impressions' as const };
  const engines = {
    duckdb: new ReportEngine<ImpressionRow>(duck, retention),
    clickhouse: new ReportEngine<ImpressionRow>(new ClickHouseReportSource(ch, true, 'impressions'), retention),
    duckdbHourly: new ReportEngine<ImpressionRow>(duck, { ...retention, useDailyRollups: false }),
    clickhouseHourly: new ReportEngine<ImpressionRow>(new ClickHouseReportSource(ch, false, 'impressions'), retention),
  };

  await t.test('every impressions report is the same from ClickHouse as from DuckDB', async (t) => {
    for (const [customer, extra] of REQUESTS) {
      const params = new URLSearchParams({ start_date: from, end_date: to, ...extra });
      const label = `${customer === A ? 'A' : customer === B ? 'B' : 'stranger'} ${params.toString().slice(0, 120)}`;
      const want = await engines.duckdb.run(customer, params);
      t.same(await engines.clickhouse.run(customer, params), want, label);
      t.same(await engines.clickhouseHourly.run(customer, params), await engines.duckdbHourly.run(customer, params), `${label} (hourly rows)`);
      if (extra.group_by === 'band,imp_status' && customer === A) t.ok(want.rows.length >= 9, 'a report with many rows, not only empty ones');
    }
    for (const extra of BAD) {
      const params = new URLSearchParams({ start_date: from, end_date: to, ...extra });
      const want = await engines.duckdb.run(A, params).then(() => null, (e: Error & { status: number; code: string }) => ({ status: e.status, code: e.code, message: e.message }));
      t.ok(want, `DuckDB refuses ${params}`);
      await t.rejects(engines.clickhouse.run(A, params), want!, `ClickHouse refuses ${params} the same way`);
    }
  });

  await t.test('the sums are the rows sent, once (the replayed first part counted twice, as sent twice)', async (t) => {
    const r = await engines.clickhouse.run(A, new URLSearchParams({ start_date: from, end_date: to }));
    const sent = [...rows, ...rows.slice(0, 30)].filter((x) => x.customerId === A);
    t.equal(r.rows[0]!.impressions, sent.reduce((n, x) => n + x.total, 0));
    t.equal(r.rows[0]!.invalid_impressions, sent.reduce((n, x) => n + x.givt, 0));
  });

  await t.test('calibration: the beacons from ClickHouse, the feedback from the reporting host, the same answer', async (t) => {
    // Feedback labels live where POST /v1/feedback is served (the full instance's DuckDB):
    // the same labels in both stores.
    for (const s of [duck, spool]) {
      for (const [i, band] of ['low', 'high', 'high', 'medium'].entries()) {
        await s.run(
          'INSERT INTO feedback_labels (customer_id, lid_tag, lookup_at, band, label, source, received_at) VALUES ($1, $2, $3, $4, $5, $6, current_timestamp)',
          [A, `tag${i}`, timestampValue(BigInt(TODAY - DAY + 3 * HOUR) * 1000n), band, i % 2 ? 'invalid' : 'valid', 'audit'],
        );
      }
    }
    const single = new CalibrationReport(duck, { retentionDays: 400 });
    const fleet = new CalibrationReport(spool, { retentionDays: 400, beacons: new ClickHouseBeaconLabels(ch) });
    for (const [customer, extra] of [[A, {}], [A, { start_date: to }], [B, {}]] as const) {
      const params = new URLSearchParams({ start_date: from, end_date: to, ...extra });
      const want = await single.run(customer, params);
      t.same(await fleet.run(customer, params), want, `${customer === A ? 'A' : 'B'} ${params}`);
      if (customer === A && !('start_date' in extra)) {
        t.ok(want.rows.every((r) => r.by_beacon.labelled > 0), 'every band has beacon labels');
        t.equal(want.rows.find((r) => r.band === 'high')!.by_feedback.labelled, 2, 'feedback counted');
      }
    }
    for (const bad of [{ group_by: 'band' }, { end_date: 'tomorrow' }] as Array<Record<string, string>>) {
      const params = new URLSearchParams({ start_date: from, end_date: to, ...bad });
      const want = await single.run(A, params).then(() => null, (e: Error & { status: number; code: string }) => ({ status: e.status, code: e.code }));
      t.ok(want, `refused: ${params}`);
      await t.rejects(fleet.run(A, params), want!);
    }
    const gone = new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/imps'));
    t.teardown(() => gone.close());
    await t.rejects(new CalibrationReport(spool, { retentionDays: 400, beacons: new ClickHouseBeaconLabels(gone) }).run(A, new URLSearchParams({ start_date: from, end_date: to })), {
      status: 503,
      code: 'unavailable',
    });
    await t.rejects(new ReportEngine(new ClickHouseReportSource(gone, true, 'impressions'), retention).run(A, new URLSearchParams({ start_date: from, end_date: to })), {
      status: 503,
      code: 'unavailable',
    });
  });

  await t.test('exactly once: a batch whose acknowledgement was lost is found by its marker, never sent twice', async (t) => {
    const one: CountRow[] = [{ customerId: A, hour: TODAY - 2 * DAY + 5 * HOUR, dims: [...dims({ pub: 'lost-ack' }), 'medium', 'replay'], total: 4, givt: 4, sivt: 1 }];
    const [batch] = toBatches(one, () => 'b0000000-0000-4000-8000-00000000ac01');
    const delivery = new BatchDelivery(ch, IMPRESSION_FLEET_ROLLUPS);
    t.equal(await delivery.deliver('hour', batch!, false), 'sent');
    t.equal(await delivery.deliver('day', batch!, false), 'sent');
    // The retry after an uncertain attempt asks first.
    t.equal(await delivery.deliver('hour', batch!, true), 'found');
    t.equal(await delivery.deliver('day', batch!, true), 'found');
    t.equal(deliveryQueryId(batch!.batchId, 'hour', IMPRESSION_FLEET_ROLLUPS), `ivtd-${batch!.batchId}-imp-hour`, "the impressions' query ids are their own");
    const got = await engines.clickhouse.run(A, new URLSearchParams({ start_date: from, end_date: from, pub: 'lost-ack', group_by: 'band,imp_status' }));
    t.same(got.rows, [{ band: 'medium', imp_status: 'replay', impressions: 4, valid_impressions: 0, invalid_impressions: 4 }]);
    const markers = await server.sql(`SELECT count() FROM imps.imp_rollups_daily WHERE customer_id = '${MARKER_CUSTOMER}' AND pub = '${batch!.batchId}'`);
    t.equal(markers.trim(), '1', 'one marker row per table');
  });

  await t.test('ClickHouse away: impressions wait in their spool and are delivered once it is back', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ivtd-imp-'));
    dirs.push(dir);
    let s = await Store.open(dir);
    const gone = new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/imps'));
    const w = await FleetWriter.open(s, gone, { flushIntervalMs: 3_600_000, rollups: IMPRESSION_FLEET_ROLLUPS, closeDeliveryMs: 50 });
    const out: CountRow[] = [{ customerId: B, hour: TODAY - DAY + 2 * HOUR, dims: [...dims({ pub: 'outage' }), 'low', 'mismatch'], total: 3, givt: 3, sivt: 3 }];
    for (let i = 0; i < 3; i++) {
      w.add(out.map((r) => ({ ...r, dims: [...r.dims] })));
      await t.rejects(w.flush(), 'delivery fails while ClickHouse is away');
    }
    t.equal(w.stats().spoolBatches, 3, 'each flush spooled its batch');
    await w.close();
    await gone.close();
    // close() stops waiting for delivery after closeDeliveryMs; the run it left (ended by
    // closing the client) still reads the spool, so the store closes only once it has
    // settled (closing DuckDB under a query in flight crashed or hung this file on a busy host).
    await w.settled();
    await s.close();
    // The next start, with ClickHouse there: the spool is delivered first.
    s = await Store.open(dir);
    t.teardown(() => s.close());
    const back = await FleetWriter.open(s, ch, { flushIntervalMs: 3_600_000, rollups: IMPRESSION_FLEET_ROLLUPS });
    await back.flush();
    await back.close();
    t.equal(back.stats().spoolBatches, 0);
    const got = await engines.clickhouse.run(B, new URLSearchParams({ start_date: from, end_date: to, pub: 'outage', group_by: 'imp_status' }));
    t.same(got.rows, [{ imp_status: 'mismatch', impressions: 9, valid_impressions: 0, invalid_impressions: 9 }], 'three flushes, nine impressions, once each');
  });

  t.test('the statement reads the impressions tables and escapes filter values', async (t) => {
    const q = parseReportQuery(new URLSearchParams({ start_date: from, end_date: to, group_by: 'imp_status', pub: "a'b" }), { nowMs: NOW, retentionDays: 400, kind: 'impressions' });
    const sql = reportSql(A, q, true, 'impressions');
    t.match(sql, /FROM imp_rollups_daily/);
    t.match(sql, /pub IN \('a\\'b'\)/);
    t.end();
  });
});
