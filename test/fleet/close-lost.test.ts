// A fleet host's stop whose final spool write fails loses counts: it must say so (a fatal
// line) and fail (CountsLostError: `ivtd serve` then exits 1), never end as a clean stop.
import t from 'tap';
import { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { FleetWriter } from '../../src/fleet/spool.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { log } from '../../src/base/log.ts';
import { CountsLostError } from '../../src/reporting/writer.ts';
import { Store } from '../../src/store/db.ts';
import { dims } from './rows.ts';

t.test('the spool cannot be written on close: a fatal line and CountsLostError', async (t) => {
  const store = await Store.open(t.testdir());
  t.teardown(() => store.close());
  // Nothing listens there: delivery fails at connect, which close() survives.
  const down = new ClickHouse(parseClickHouseUrl('http://127.0.0.1:1/nowhere'));
  t.teardown(() => down.close());
  const w = await FleetWriter.open(store, down, { flushIntervalMs: 3_600_000, closeDeliveryMs: 100 });
  w.add([{ customerId: '0b6f6f55-1111-4c1e-9a52-000000000001', hour: Date.UTC(2031, 0, 1), dims: dims(), total: 3, givt: 0, sivt: 0 }]);
  await store.run('ALTER TABLE fleet_spool RENAME TO fleet_spool_away');
  const fatal: unknown[] = [];
  const level = log.level;
  log.level = 'info';
  const saved = log.fatal;
  log.fatal = ((obj: unknown, msg?: string) => {
    fatal.push({ ...(obj as object), msg });
  }) as typeof log.fatal;
  const e = await w.close().then(
    () => null,
    (err: unknown) => err,
  );
  log.fatal = saved;
  log.level = level;
  // The delivery close() stopped waiting for may still read the store: let it end first.
  await down.close();
  await w.settled();
  t.ok(e instanceof CountsLostError, 'close() rejects with CountsLostError');
  t.match(fatal, [{ tuples: 1, msg: 'fleet: final spool write failed; these counts are lost' }], 'one fatal line with the count');
});
