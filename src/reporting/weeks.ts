// Weekly rollups: the lookups' daily rows summed per UTC week (Monday to Sunday), kept
// beside the daily ones, so that a month's report that groups by neither date nor hour
// reads about a third of the rows (bench:reporting: a 30-day report over 10 M hourly rows).
//
// A week's rows are built by the rollup writer's compaction pass (writer.ts) from the daily
// rows of its days that are over (of the week under way, the days before today), and its
// mark in `rollups_weeks_built` says which days they hold: week_start up to `through`
// (exclusive). A flush that writes into a day a week's rows already hold (counts of a
// passing day, a spool file's replay) deletes that week's mark in its own transaction; the
// week is then read from the daily rows until the next pass builds it again. A report reads
// the marks and the rows in one transaction (engine.ts), so it sees either the weekly rows
// with exactly the daily rows they sum, or the daily rows: the answer is the daily rows' in
// every case.
import type { DuckDBValue } from '@duckdb/node-api';
import { timestampValue } from '@duckdb/node-api';
import { DAY_MS, dayStart } from '../base/time.ts';
import type { Queryable } from '../store/db.ts';

/**
 * The lookups' weekly rows (same columns as rollups_daily) and their marks (migration 94).
 * A week's rows are written in `order`: a report's GROUP BY then meets a customer's rows of
 * one publisher together, and its hash table's lines stay in the cache (a 30-day report by
 * pub,geo over the weekly rows alone: 40 against 61 ms in hash order).
 */
export const WEEKLY_ROLLUPS = { table: 'rollups_weekly', built: 'rollups_weeks_built', order: '"customer_id", "pub"' } as const;
export type WeeklyTables = { readonly table: string; readonly built: string; readonly order: string };

/** Weeks built by one compaction pass at most (newest first): a first start after an upgrade spreads its backfill. */
export const WEEKS_PER_PASS = 8;

/** Start (ms, UTC Monday 00:00) of the week holding `ms`. 1 January 1970 was a Thursday. */
export function weekStart(ms: number): number {
  const d = dayStart(ms);
  const weekday = (((Math.floor(d / DAY_MS) + 3) % 7) + 7) % 7; // 0 = Monday
  return d - weekday * DAY_MS;
}

/** Days of a week held by its weekly rows: [start, through), both ms. */
export interface WeekSpan {
  start: number;
  through: number;
}

function ts(ms: number): DuckDBValue {
  return timestampValue(BigInt(ms) * 1000n);
}

/** The marks (week start → through), as the writer keeps them in memory. */
export async function readBuiltWeeks(q: Queryable, t: WeeklyTables = WEEKLY_ROLLUPS): Promise<Map<number, number>> {
  const rows = await q.all<{ s: Date; e: Date }>(`SELECT week_start AS s, through AS e FROM ${t.built}`);
  return new Map(rows.map((r) => [r.s.getTime(), r.e.getTime()]));
}

/** The built weeks whose days all lie in [fromMs, toMs) (a report's range), oldest first. */
export async function builtWeeksWithin(q: Queryable, fromMs: number, toMs: number, t: WeeklyTables = WEEKLY_ROLLUPS): Promise<WeekSpan[]> {
  const rows = await q.all<{ s: Date; e: Date }>(
    `SELECT week_start AS s, through AS e FROM ${t.built} WHERE week_start >= $1 AND through <= $2 AND through > week_start ORDER BY week_start`,
    [ts(fromMs), ts(toMs)],
  );
  return rows.map((r) => ({ start: r.s.getTime(), through: r.e.getTime() }));
}

/** Whether [fromMs, toMs) can hold a built week: a Monday in it with its day whole (else a report needs no look at the marks). */
export function mayHoldWeek(fromMs: number, toMs: number): boolean {
  const w = weekStart(fromMs);
  const monday = w >= fromMs ? w : w + 7 * DAY_MS;
  return monday + DAY_MS <= toMs;
}

/** [fromMs, toMs) less the weeks' spans (sorted, disjoint, inside it): the day ranges left to the daily rows. */
export function daysOutside(fromMs: number, toMs: number, weeks: readonly WeekSpan[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let at = fromMs;
  for (const w of weeks) {
    if (w.start > at) out.push([at, w.start]);
    at = Math.max(at, w.through);
  }
  if (at < toMs) out.push([at, toMs]);
  return out;
}

/** What buildWeek() needs of a writer's schema: its daily table and column lists (quoted). */
export interface WeekBuildSql {
  daily: string;
  weeks: WeeklyTables;
  /** Every key column, period_start included. */
  keyColumns: string;
  /** The counters' sums, named as the columns. */
  sums: string;
  allColumns: string;
}

/**
 * (Re)builds one week's rows from the daily rows of [start, through) and marks it, on `q`
 * inside a transaction the caller holds; its GROUP BY in `parts` statements (1: one), each
 * over the tuples whose keys hash to it (past DuckDB's memory limit, as compaction does).
 */
export async function buildWeek(q: Queryable, s: WeekBuildSql, start: number, through: number, parts: number): Promise<void> {
  const params = [ts(start), ts(through)];
  await q.run(`DELETE FROM ${s.weeks.built} WHERE week_start = $1`, [params[0]!]);
  await q.run(`DELETE FROM ${s.weeks.table} WHERE period_start = $1`, [params[0]!]);
  const keys = s.keyColumns.replace('"period_start"', '$1::TIMESTAMP AS "period_start"');
  const tupleKeys = s.keyColumns.replace('"period_start", ', '');
  const select = `INSERT INTO ${s.weeks.table} (${s.allColumns}) SELECT ${keys}, ${s.sums} FROM ${s.daily} WHERE period_start >= $1 AND period_start < $2`;
  for (let i = 0; i < parts; i++) {
    const order = `GROUP BY ALL ORDER BY ${s.weeks.order}`;
    await q.run(parts === 1 ? `${select} ${order}` : `${select} AND hash(${tupleKeys}) % ${parts} = ${i} ${order}`, params);
  }
  await q.run(`INSERT INTO ${s.weeks.built} (week_start, through) VALUES ($1, $2)`, params);
}

/**
 * The weeks a compaction pass at `nowMs` should (re)build, newest first, at most `max`: each
 * week from the oldest kept day's to the current one, its days before today, unless its mark
 * already says so.
 */
export function weeksToBuild(nowMs: number, oldestKeptMs: number, built: ReadonlyMap<number, number>, max = WEEKS_PER_PASS): WeekSpan[] {
  const today = dayStart(nowMs);
  const out: WeekSpan[] = [];
  for (let w = weekStart(today); w >= oldestKeptMs && out.length < max; w -= 7 * DAY_MS) {
    const through = Math.min(w + 7 * DAY_MS, today);
    if (through > w && built.get(w) !== through) out.push({ start: w, through });
  }
  return out;
}
