// Rollup delivery to a real ClickHouse, exactly once: through lost acknowledgements, a
// host restart with a spool left behind, and ClickHouse killed or stopped in the middle
// of a delivery. "Exactly once" is checked two ways each time: the sums equal what was
// counted, and every batch's marker is in each table once.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BATCH_ROWS, MARKER_CUSTOMER, insertRows, markerPeriodSeconds, monthOf, rowsAt, toBatches } from '../../src/reporting/batches.ts';
import { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { migrateClickHouse } from '../../src/fleet/schema.ts';
import { FleetWriter, MERGE_AFTER_BATCHES, type FleetWriterOptions } from '../../src/fleet/spool.ts';
import type { CountRow } from '../../src/counts/tuple.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { Store } from '../../src/store/db.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { log } from '../../src/base/log.ts';
import { DAY, HOUR, chSums, dims, manyRows, markerCounts, sums } from './rows.ts';

log.level = 'silent';
const CUSTOMERS = ['0b6f6f55-1111-4c1e-9a52-000000000001', '0b6f6f55-2222-4c1e-9a52-000000000002'];
// Two UTC months: the last day of one and the first of the next.
const MONTH_EDGE = Date.UTC(2031, 0, 31, 20);

t.test('batches: one month each, bounded, daily rows summed, marker last', async (t) => {
  let n = 0;
  const rows = manyRows(25, CUSTOMERS, MONTH_EDGE, 10); // hours 20:00 Jan 31 … 05:00 Feb 1
  const batches = toBatches(rows, () => `b${++n}`, 4);
  for (const b of batches) {
    t.ok(b.rows.length <= 4, 'at most maxRows');
    t.equal(new Set(b.rows.map((r) => monthOf(r.hour))).size, 1, 'one month per batch');
  }
  t.equal(batches.reduce((a, b) => a + b.rows.length, 0), 25, 'every row in one batch');
  t.same(new Set(batches.map((b) => b.batchId)).size, batches.length, 'distinct ids');
  const days = rowsAt('day', [
    { customerId: 'c', hour: MONTH_EDGE, dims: dims(), total: 2, givt: 1, sivt: 0 },
    { customerId: 'c', hour: MONTH_EDGE + HOUR, dims: dims(), total: 3, givt: 0, sivt: 1 },
    { customerId: 'c', hour: MONTH_EDGE + 5 * HOUR, dims: dims(), total: 1, givt: 0, sivt: 0 },
  ]);
  t.same(
    days.map((d) => [d.hour, d.total, d.givt, d.sivt]),
    [
      [MONTH_EDGE - (MONTH_EDGE % DAY), 5, 1, 1],
      [MONTH_EDGE - (MONTH_EDGE % DAY) + DAY, 1, 0, 0],
    ],
  );
  const b = batches[0]!;
  const body = insertRows('hour', b);
  t.equal(body.length, b.rows.length + 1);
  t.match(body.at(-1), { customer_id: MARKER_CUSTOMER, pub: b.batchId, total: 1, givt: 0, sivt: 0, period_start: markerPeriodSeconds('hour', b) });
  t.equal(BATCH_ROWS, 10_000);
});

const skip = clickhouseAvailable() ? false : 'clickhouse-server is not installed';

t.test('delivery against a real ClickHouse', { skip }, async (t) => {
  const server = await startClickHouse();
  t.teardown(() => server.destroy());
  let dbN = 0;

  /** A fresh database, a client (direct or through a port), a temp DuckDB store. */
  async function setup(t: Test, port?: number) {
    const db = `deliver_${++dbN}`;
    const admin = new ClickHouse(parseClickHouseUrl(server.url(db)));
    await migrateClickHouse(admin);
    const ch = port === undefined ? admin : new ClickHouse(parseClickHouseUrl(`http://127.0.0.1:${port}/${db}`), { requestTimeoutMs: 5000 });
    const dir = mkdtempSync(join(tmpdir(), 'ivtd-spool-'));
    const store = await Store.open(dir);
    t.teardown(async () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
      await admin.close();
      if (ch !== admin) await ch.close();
    });
    return { admin, ch, store, dir };
  }

  async function writer(t: Test, store: Store, ch: ClickHouse, extra: Partial<FleetWriterOptions> = {}) {
    const w = await FleetWriter.open(store, ch, { flushIntervalMs: 3_600_000, closeDeliveryMs: 500, ...extra });
    t.teardown(() => w.close());
    return w;
  }

  async function spooled(store: Store): Promise<number> {
    return Number((await store.one<{ n: bigint }>('SELECT count(*) AS n FROM fleet_spool'))!.n);
  }

  async function exactlyOnce(t: Test, admin: ClickHouse, rows: Parameters<typeof sums>[0], batches?: number) {
    const want = sums(rows);
    t.same(await chSums(admin, 'rollups_hourly'), want, 'hourly sums equal the counts');
    t.same(await chSums(admin, 'rollups_daily'), want, 'daily sums equal the counts');
    for (const table of ['rollups_hourly', 'rollups_daily'] as const) {
      const markers = await markerCounts(admin, table);
      t.ok(markers.every((m) => m === 1), `every batch once in ${table}`);
      if (batches !== undefined) t.equal(markers.length, batches, `${batches} batches in ${table}`);
    }
  }

  t.test('a flush delivers both tables; the spool empties', async (t) => {
    const { admin, ch, store } = await setup(t);
    const w = await writer(t, store, ch, { batchRows: 50 });
    const rows = manyRows(230, CUSTOMERS, MONTH_EDGE, 8);
    w.add(rows);
    await w.flush();
    await exactlyOnce(t, admin, rows);
    t.equal(await spooled(store), 0);
    const s = w.stats();
    t.equal(s.rowsWritten, 230);
    t.equal(s.spoolBatches, 0);
    t.ok(s.batchesDelivered >= 5, 'split into batches of 50 within a month');
    const hourly = await admin.rows<{ n: string }>(`SELECT count() AS n FROM rollups_hourly WHERE customer_id = '${CUSTOMERS[0]}'`);
    t.equal(Number(hourly[0]!.n), 115, 'one row per distinct tuple');
  });

  t.test('a value cut inside a surrogate pair (a lone half) is spooled and delivered as U+FFFD', async (t) => {
    const { admin, ch, store } = await setup(t);
    const w = await writer(t, store, ch);
    const pub = 'a'.repeat(255) + '\ud83d'; // what cutting "…😀" at 256 UTF-16 units leaves
    w.add([{ customerId: CUSTOMERS[0]!, hour: MONTH_EDGE, dims: dims({ pub }), total: 3, givt: 0, sivt: 1 }]);
    await w.flush();
    const rows = await admin.rows<{ pub: string; total: string }>(`SELECT pub, sum(total) AS total FROM rollups_hourly WHERE customer_id = '${CUSTOMERS[0]}' GROUP BY pub`);
    t.same(rows, [{ pub: 'a'.repeat(255) + '\ufffd', total: '3' }]);
  });

  t.test('an acknowledgement lost after the insert landed: the retry finds the batch and does not resend', async (t) => {
    const proxy = await startTcpProxy(server.httpPort);
    t.teardown(() => proxy.close());
    const { admin, ch, store } = await setup(t, proxy.port);
    const w = await writer(t, store, ch);
    const rows = manyRows(40, CUSTOMERS, MONTH_EDGE - 3 * DAY);
    w.add(rows);
    proxy.mode = 'drop-responses';
    await t.rejects(w.flush(), /no clear answer|socket hang up|ECONNRESET/i, 'the writer cannot know');
    t.ok(proxy.dropped >= 1);
    t.equal(await spooled(store), 1, 'the batch stays spooled');
    t.same(await chSums(admin, 'rollups_hourly'), sums(rows), 'yet ClickHouse has it');
    proxy.mode = 'pass';
    await w.flush();
    t.equal(w.stats().foundOnRetry, 1, 'the retry asked and found it');
    t.equal(await spooled(store), 0);
    await exactlyOnce(t, admin, rows, 1);
  });

  t.test('a host restarted with an unacknowledged batch in its spool does not count it twice', async (t) => {
    const proxy = await startTcpProxy(server.httpPort);
    t.teardown(() => proxy.close());
    const { admin, ch, store } = await setup(t, proxy.port);
    const first = await FleetWriter.open(store, ch, { flushIntervalMs: 3_600_000, closeDeliveryMs: 1000 });
    const rows = manyRows(60, CUSTOMERS, MONTH_EDGE - 10 * DAY);
    first.add(rows);
    proxy.mode = 'drop-responses';
    await t.rejects(first.flush());
    await first.close();
    await first.settled();
    t.equal(await spooled(store), 1, 'left in the spool at shutdown');
    proxy.mode = 'pass';
    const second = await writer(t, store, ch);
    t.equal(second.stats().spoolBatches, 1, 'the new run sees the spool');
    await second.flush();
    t.ok(second.stats().foundOnRetry >= 1, 'resolved by its marker');
    await exactlyOnce(t, admin, rows, 1);
  });

  t.test('a long outage: batches never attempted are merged, the one in doubt is not; counts exact', async (t) => {
    const proxy = await startTcpProxy(server.httpPort);
    t.teardown(() => proxy.close());
    const { admin, ch, store } = await setup(t, proxy.port);
    const w = await writer(t, store, ch);
    const sent: CountRow[] = [];
    const interval = (i: number) => manyRows(30, CUSTOMERS, MONTH_EDGE - 4 * DAY).map((r) => ({ ...r, total: r.total + i }));
    // First the batch in doubt: it lands, its acknowledgement is lost.
    proxy.mode = 'drop-responses';
    sent.push(...interval(0));
    w.add(interval(0));
    await t.rejects(w.flush());
    // Then 40 flush intervals while every answer is lost.
    for (let i = 1; i <= 40; i++) {
      sent.push(...interval(i));
      w.add(interval(i));
      await w.flush().catch(() => undefined);
    }
    const st = w.stats();
    t.ok(st.batchesMerged >= 30, `${st.batchesMerged} batches merged`);
    t.ok(st.spoolBatches <= MERGE_AFTER_BATCHES + 2, `${st.spoolBatches} batches spooled after 41 intervals`);
    const attempted = await store.one<{ n: bigint }>('SELECT count(*) AS n FROM fleet_spool WHERE attempted');
    t.equal(Number(attempted!.n), 1, 'only the batch in doubt is marked attempted (and never merged)');
    proxy.mode = 'pass';
    await w.flush();
    await exactlyOnce(t, admin, sent);
  });

  t.test('refused at connect: the batch is known not sent and stays mergeable', async (t) => {
    const { admin, store } = await setup(t);
    const down = new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/nowhere'));
    t.teardown(() => down.close());
    const first = await FleetWriter.open(store, down, { flushIntervalMs: 3_600_000, closeDeliveryMs: 100 });
    const rows = manyRows(200, CUSTOMERS, MONTH_EDGE - 6 * DAY);
    for (let i = 0; i < 20; i++) {
      first.add(rows.slice(i * 10, i * 10 + 10));
      await t.rejects(first.flush(), /unreachable/);
    }
    await first.close();
    // close() stops waiting after closeDeliveryMs; the refused delivery it started then clears
    // its marker (on a busy host after close has returned).
    await first.settled();
    const n = await store.one<{ n: bigint; a: bigint }>('SELECT count(*) AS n, count(*) FILTER (WHERE attempted) AS a FROM fleet_spool');
    t.equal(Number(n!.a), 0, 'no batch marked attempted');
    t.ok(Number(n!.n) <= MERGE_AFTER_BATCHES + 1, `${n!.n} batches after 20 intervals`);
    const ch = new ClickHouse(parseClickHouseUrl(server.url(admin.database)));
    t.teardown(() => ch.close());
    const second = await writer(t, store, ch);
    await second.flush();
    t.equal(second.stats().foundOnRetry, 0, 'nothing to ask about');
    await exactlyOnce(t, admin, rows);
  });

  for (const how of ['kill', 'stop'] as const) {
    t.test(`ClickHouse ${how === 'kill' ? 'killed (SIGKILL)' : 'stopped (SIGTERM)'} in the middle of a delivery, then back: nothing lost or doubled`, async (t) => {
      const { admin, ch, store } = await setup(t);
      const w = await writer(t, store, ch, { batchRows: 50 });
      const rows = manyRows(3_000, CUSTOMERS, MONTH_EDGE - 2 * DAY, 72);
      w.add(rows);
      await w.spool();
      const total = w.stats().spoolBatches;
      t.ok(total >= 60, `${total} batches spooled`);
      const run = w.deliver().then(
        () => null,
        (e: Error) => e,
      );
      while (w.stats().batchesDelivered < 2) await new Promise((r) => setTimeout(r, 5));
      if (how === 'kill') {
        await server.kill();
        t.match(await run, { name: 'FleetError' }, 'delivery stops with ClickHouse');
        const left = await spooled(store);
        t.ok(left > 0 && left < total, `${total - left} delivered before, ${left} still spooled`);
        await t.rejects(w.flush(), /unreachable/, 'further flushes spool and fail fast while it is down');
      } else {
        // A graceful stop lets running statements finish: delivery goes on until it refuses.
        await Promise.all([server.stop(), run]);
        t.comment(`${total - (await spooled(store))} of ${total} batches delivered before the stop`);
      }
      await server.start();
      await w.flush();
      t.equal(await spooled(store), 0, 'spool empty after ClickHouse is back');
      await exactlyOnce(t, admin, rows, total);
    });
  }

  t.test('ClickHouse down the whole time: the spool survives a host restart and is delivered later', async (t) => {
    const db = `deliver_${++dbN}`;
    const admin = new ClickHouse(parseClickHouseUrl(server.url(db)));
    t.teardown(() => admin.close());
    await migrateClickHouse(admin);
    const dir = mkdtempSync(join(tmpdir(), 'ivtd-spool-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const rows = manyRows(300, CUSTOMERS, MONTH_EDGE - 5 * DAY);
    await server.stop();
    t.teardown(() => (server.running ? undefined : server.start()));
    {
      const store = await Store.open(dir);
      const ch = new ClickHouse(parseClickHouseUrl(server.url(db)));
      const w = await FleetWriter.open(store, ch, { flushIntervalMs: 3_600_000, closeDeliveryMs: 200 });
      w.add(rows.slice(0, 100));
      await t.rejects(w.flush(), /unreachable/);
      w.add(rows.slice(100));
      await w.close(); // SIGTERM path: spools the rest
      await w.settled();
      await ch.close();
      store.close();
    }
    await server.start();
    {
      const store = await Store.open(dir);
      t.teardown(() => store.close());
      const ch = new ClickHouse(parseClickHouseUrl(server.url(db)));
      t.teardown(() => ch.close());
      const w = await writer(t, store, ch);
      t.equal(w.stats().spoolBatches, 2, 'two flushes spooled while down');
      await w.flush();
      await exactlyOnce(t, admin, rows, 2);
    }
  });
});
