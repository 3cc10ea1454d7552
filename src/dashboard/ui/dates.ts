// Calendar dates as the reporting API takes them: `YYYY-MM-DD`, always UTC.
import { DAY_MS } from '../../base/time.ts';

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The UTC calendar date of an instant. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Epoch ms of a date's UTC midnight, or NaN when it is not a real `YYYY-MM-DD` date. */
export function dateMs(date: string): number {
  const m = DATE_RE.exec(date);
  if (!m) return NaN;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return utcDate(ms) === date ? ms : NaN; // rejects 2024-02-30 and friends
}

export function isDate(date: string): boolean {
  return !Number.isNaN(dateMs(date));
}

export function addDays(date: string, days: number): string {
  return utcDate(dateMs(date) + days * DAY_MS);
}

/** Days from start to end inclusive (1 for a single day); 0 when end is before start. */
export function daysInRange(start: string, end: string): number {
  const n = Math.round((dateMs(end) - dateMs(start)) / DAY_MS) + 1;
  return n > 0 ? n : 0;
}

export interface DateRange {
  start: string;
  end: string;
}

/** The last `days` UTC days up to and including today: the analytics page's default (7). */
export function lastDays(nowMs: number, days = 7): DateRange {
  const end = utcDate(nowMs);
  return { start: addDays(end, -(days - 1)), end };
}

/** Why a range cannot be queried, or undefined when it can. */
export function rangeProblem(r: DateRange): string | undefined {
  if (!isDate(r.start)) return 'Start date must be a date (YYYY-MM-DD).';
  if (!isDate(r.end)) return 'End date must be a date (YYYY-MM-DD).';
  if (dateMs(r.end) < dateMs(r.start)) return 'End date must not be before the start date.';
  return undefined;
}
