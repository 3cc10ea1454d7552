// Retention on ClickHouse, run by the full instance once a day. Rollups: a monthly partition
// goes when its whole month is older than the oldest day kept (--retention-days). Rows of a
// partly expired month stay until the month is out, and are never reported: the reporting
// API refuses start dates beyond the retention (src/reporting/params.ts).
import { log } from '../base/log.ts';
import { IMPRESSION_TABLES, ROLLUP_TABLES } from '../reporting/columns.ts';
import { oldestKeptDayMs } from '../reporting/retention-window.ts';
import { monthOf } from '../reporting/batches.ts';
import { dropOldBotIps } from './bot-ips.ts';
import { dropOldSeenLids } from './seen-lid-exchange.ts';
import type { ClickHouse } from './clickhouse.ts';
import { sqlInt, sqlString } from './sql.ts';

/** Drops rollup partitions (YYYYMM, the lookups' and the impressions') wholly before the retention window; returns how many went. */
export async function dropExpiredRollups(ch: ClickHouse, retentionDays: number, now = Date.now()): Promise<number> {
  const firstKeptMonth = monthOf(oldestKeptDayMs(now, retentionDays));
  let dropped = 0;
  for (const table of [...Object.values(ROLLUP_TABLES), ...Object.values(IMPRESSION_TABLES)]) {
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

/**
 * The full instance's retention pass on ClickHouse (rollups and bot IPs): a minute after
 * the start, then daily, once the schema is ready. Returns its stop.
 */
export function scheduleRetention(ch: ClickHouse, retentionDays: number, schemaReady: () => boolean): () => void {
  const maintain = async () => {
    if (!schemaReady()) return;
    try {
      const rollups = await dropExpiredRollups(ch, retentionDays);
      const bots = await dropOldBotIps(ch);
      const lids = await dropOldSeenLids(ch);
      if (rollups + bots + lids > 0) log.info({ rollupPartitions: rollups, botIpPartitions: bots, seenLidPartitions: lids }, 'fleet: ClickHouse retention dropped old partitions');
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'fleet: ClickHouse retention pass failed; will retry');
    }
  };
  const daily = setInterval(() => void maintain(), 86_400_000);
  daily.unref();
  const first = setTimeout(() => void maintain(), 60_000);
  first.unref();
  return () => {
    clearInterval(daily);
    clearInterval(first);
  };
}
