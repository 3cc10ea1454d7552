// The retention window, shared by the writer (what it deletes) and the query engine
// (what it refuses to be asked for): today (UTC) and the `retentionDays` days before it.

export const DAY_MS = 86_400_000;

/** Start (ms, UTC midnight) of the oldest day still kept. */
export function oldestKeptDayMs(nowMs: number, retentionDays: number): number {
  return nowMs - (nowMs % DAY_MS) - retentionDays * DAY_MS;
}
