// The retention window, shared by the writer (what it deletes) and the query engine
// (what it refuses to be asked for): today (UTC) and the `retentionDays` days before it.
import { DAY_MS, dayStart } from '../base/time.ts';

/** Start (ms, UTC midnight) of the oldest day still kept. */
export function oldestKeptDayMs(nowMs: number, retentionDays: number): number {
  return dayStart(nowMs) - retentionDays * DAY_MS;
}
