// The child of test/fleet/spool-torn.test.ts: a fleet writer spooling as fast as it can into
// the DuckDB at argv[2] (ClickHouse never ready, so nothing leaves the spool), until killed.
// Each spool() is one transaction of SPOOL_ROWS rows in batches of BATCH_ROWS.
import type { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { FleetWriter } from '../../src/fleet/spool.ts';
import { Store } from '../../src/store/db.ts';
import { dims } from './rows.ts';

export const SPOOL_ROWS = 6;
export const BATCH_ROWS = 2;

if (process.argv[2]) {
  const store = await Store.open(process.argv[2]);
  const w = await FleetWriter.open(store, {} as ClickHouse, { flushIntervalMs: 3_600_000, batchRows: BATCH_ROWS, ready: () => false });
  const hour = Date.UTC(2026, 11, 6, 10);
  let i = 0;
  process.stdout.write('spooling\n');
  for (;;) {
    w.add(Array.from({ length: SPOOL_ROWS }, () => ({ customerId: 'c', hour, dims: dims({ pub: `p${i++}` }), total: 1, givt: 0, sivt: 0 })));
    await w.spool();
  }
}
