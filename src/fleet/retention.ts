// Rollup retention on ClickHouse, run by the full instance once a day: a monthly partition
// goes when its whole month is older than the oldest day kept (--retention-days). Rows of a
// partly expired month stay until the month is out, and are never reported: the reporting
// API refuses start dates beyond the retention (src/reporting/params.ts).
import { ROLLUP_TABLES } from '../reporting/columns.ts';
import { oldestKeptDayMs } from '../reporting/retention.ts';
import { monthOf } from './batches.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

/** Drops rollup partitions (YYYYMM) wholly before the retention window; returns how many went. */
export async function dropExpiredRollups(ch: ClickHouse, retentionDays: number, now = Date.now()): Promise<number> {
  const firstKeptMonth = monthOf(oldestKeptDayMs(now, retentionDays));
  let dropped = 0;
  for (const table of Object.values(ROLLUP_TABLES)) {
    const parts = await ch.rows<{ partition: string }>(
      `SELECT DISTINCT partition FROM system.parts WHERE database = ${sqlString(ch.database)} AND table = ${sqlString(table)} AND active`,
      'rollup partitions',
    );
    for (const p of parts) {
      const month = Number(p.partition);
      if (!Number.isSafeInteger(month) || month >= firstKeptMonth) continue;
      await ch.command(`ALTER TABLE ${table} DROP PARTITION ${sqlInt(month)}`, 'rollup retention');
      dropped++;
    }
  }
  return dropped;
}
