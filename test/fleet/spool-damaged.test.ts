// A spooled batch whose stored text is not rows (a damaged spool file, a hand edit) can
// never be delivered. The writer drops it, logs it at level 50 and counts it (batches and
// rows), and delivers the batches behind it; an outage's merge leaves it out and sums the
// rest. (A batch torn by kill -9 never reaches the table: DuckDB's WAL drops the torn
// transaction whole; test/fleet/kill.test.ts kills edges for real.)
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { FleetWriter, MERGE_AFTER_BATCHES, spooledRows } from '../../src/fleet/spool.ts';
import { Store } from '../../src/store/db.ts';
import { log } from '../../src/base/log.ts';
import { dims } from './rows.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 11, 6, 10);

/** A ClickHouse that takes every INSERT and has never seen a batch; records the customers' totals. */
function fakeClickHouse(): { ch: ClickHouse; totals: Map<string, number> } {
  const totals = new Map<string, number>();
  const ch = {
    rows: async () => [{ n: '0' }],
    insert: async (table: string, rows: readonly object[]) => {
      if (table !== 'rollups_hourly') return;
      for (const r of rows as Array<{ customer_id: string; total: number }>) totals.set(r.customer_id, (totals.get(r.customer_id) ?? 0) + Number(r.total));
    },
  };
  return { ch: ch as unknown as ClickHouse, totals };
}

/** Lines logged at level error (50) until the test ends. */
function captureErrors(t: Test): () => Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  const saved = log.error;
  (log as unknown as { error: (o: unknown, m?: string) => void }).error = (obj: unknown, msg?: string) => {
    lines.push({ ...(obj as object), msg });
  };
  t.teardown(() => {
    log.error = saved;
  });
  return () => lines;
}

t.test('spooledRows reads rows and refuses anything else', async (t) => {
  const good = [{ customerId: 'c', hour: T0, dims: dims(), total: 2, givt: 1, sivt: 0 }];
  t.same(spooledRows(JSON.stringify(good)), good);
  t.same(spooledRows('[]'), []);
  for (const bad of ['', '[{"customerId":"c","hour":1', 'null', '{}', '[1]', '[{"customerId":"c","hour":1,"dims":[],"total":-1,"givt":0,"sivt":0}]', '[{"customerId":"c","hour":1,"dims":[1],"total":1,"givt":0,"sivt":0}]', '[{"hour":1,"dims":[],"total":1,"givt":0,"sivt":0}]']) {
    t.equal(spooledRows(bad), null, `refused: ${JSON.stringify(bad)}`);
  }
});

t.test('an unreadable batch is dropped, logged and counted; the batches behind it are delivered', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-spool-damaged-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  const { ch, totals } = fakeClickHouse();
  const logs = captureErrors(t);
  const w = await FleetWriter.open(store, ch, { flushIntervalMs: 3_600_000, closeDeliveryMs: 500 });
  t.teardown(() => w.close());
  w.add([{ customerId: 'before', hour: T0, dims: dims(), total: 5, givt: 0, sivt: 0 }]);
  await w.spool();
  // What a damaged page could leave: a batch cut in the middle of its JSON, in the middle of the queue.
  await store.run(`INSERT INTO fleet_spool (batch_id, seq, rows_json, row_count) VALUES ('torn', 2, '[{"customerId":"lost","hour":', 7)`);
  w.add([{ customerId: 'after', hour: T0 + HOUR, dims: dims(), total: 3, givt: 0, sivt: 0 }]);
  (w as unknown as { seq: number }).seq++; // the next batch after the one inserted by hand
  await w.spool();
  await w.flush();
  t.equal(totals.get('before'), 5, 'the batch before it delivered');
  t.equal(totals.get('after'), 3, 'the batch after it delivered');
  t.notOk(totals.has('lost'), 'nothing of it sent');
  const st = w.stats();
  t.equal(st.droppedBatches, 1, 'one batch counted as dropped');
  t.equal(st.droppedRows, 7, 'its 7 rows counted');
  t.equal(st.spoolBatches, 0, 'the spool is empty');
  t.equal((await store.one<{ n: bigint }>('SELECT count(*) AS n FROM fleet_spool'))?.n, 0n, 'nothing left in the table');
  const line = logs().find((l) => /spooled batch is unreadable/.test(String(l.msg)));
  t.ok(line, 'logged at level 50 (error)');
  t.equal(line?.batchId, 'torn', 'with the batch id');
});

t.test('an outage merge leaves an unreadable batch out and sums the rest', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-spool-damaged-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  const { ch, totals } = fakeClickHouse();
  captureErrors(t);
  let ready = false;
  const w = await FleetWriter.open(store, ch, { flushIntervalMs: 3_600_000, closeDeliveryMs: 500, ready: () => ready });
  t.teardown(() => w.close());
  const n = MERGE_AFTER_BATCHES + 4;
  for (let i = 0; i < n; i++) {
    w.add([{ customerId: 'c', hour: T0, dims: dims(), total: 1, givt: 0, sivt: 0 }]);
    await w.spool();
    if (i === 3) await store.run(`INSERT INTO fleet_spool (batch_id, seq, rows_json, row_count) VALUES ('garbled', 4, '{"not":"rows"}', 2)`);
  }
  await t.rejects(w.deliver(), /schema not checked/, 'ClickHouse away: the merge runs, delivery waits');
  t.ok(w.stats().batchesMerged >= n, `${w.stats().batchesMerged} batches merged`);
  t.equal((await store.one<{ n: bigint }>(`SELECT count(*) AS n FROM fleet_spool WHERE batch_id = 'garbled'`))?.n, 1n, 'the unreadable batch left as it was');
  ready = true;
  await w.deliver();
  t.equal(totals.get('c'), n, `all ${n} counts delivered once`);
  t.equal(w.stats().droppedBatches, 1, 'the unreadable one dropped');
  t.equal(w.stats().spoolRows, 0, 'the spool rows gauge back to 0');
});
