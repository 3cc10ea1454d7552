// Report rows grouped by date (or date,hour) turned into the chart's columns: one point per
// day or hour of the range (gaps are zero, not skipped, so the x axis is honest), up to
// the current hour, with the IVT rate per point.
import { DAY_MS, HOUR_MS } from '../../base/time.ts';
import { daysInRange, dateMs, type DateRange } from './dates.ts';

export type Granularity = 'hour' | 'day';

/** Hourly charts past this many days would be too many points to read (and to fetch). */
export const MAX_HOURLY_DAYS = 31;

export interface MetricRow {
  total_transactions: number;
  valid_transactions: number;
  invalid_transactions: number;
  sivt_transactions: number;
  givt_transactions: number;
}

export interface TimeRow extends MetricRow {
  date: string;
  hour?: number;
}

export interface Series {
  /** Unix seconds (UTC) of each point's start. */
  x: number[];
  total: number[];
  valid: number[];
  invalid: number[];
  givt: number[];
  sivt: number[];
  /** Invalid share in percent; null where there were no transactions. */
  rate: Array<number | null>;
}

/** Hourly for a week or less, daily beyond. */
export function defaultGranularity(range: DateRange): Granularity {
  return daysInRange(range.start, range.end) <= 7 ? 'hour' : 'day';
}

export function groupByFor(g: Granularity): string {
  return g === 'hour' ? 'date,hour' : 'date';
}

export function buildSeries(rows: readonly TimeRow[], range: DateRange, g: Granularity, nowMs: number): Series {
  const step = g === 'hour' ? HOUR_MS : DAY_MS;
  const first = dateMs(range.start);
  const endOfRange = dateMs(range.end) + DAY_MS; // exclusive
  const last = Math.min(endOfRange, Math.floor(nowMs / step) * step + step);
  const n = Math.max(0, Math.ceil((last - first) / step));
  const s: Series = { x: [], total: [], valid: [], invalid: [], givt: [], sivt: [], rate: [] };
  for (let i = 0; i < n; i++) {
    s.x.push((first + i * step) / 1000);
    s.total.push(0);
    s.valid.push(0);
    s.invalid.push(0);
    s.givt.push(0);
    s.sivt.push(0);
  }
  for (const r of rows) {
    const at = dateMs(r.date) + (g === 'hour' ? (r.hour ?? 0) * HOUR_MS : 0);
    const i = Math.floor((at - first) / step);
    if (!(i >= 0 && i < n)) continue;
    s.total[i]! += r.total_transactions;
    s.valid[i]! += r.valid_transactions;
    s.invalid[i]! += r.invalid_transactions;
    s.givt[i]! += r.givt_transactions;
    s.sivt[i]! += r.sivt_transactions;
  }
  for (let i = 0; i < n; i++) {
    const t = s.total[i]!;
    s.rate.push(t > 0 ? (s.invalid[i]! / t) * 100 : null);
  }
  return s;
}

/** Sums over the whole series (the headline figures above the chart). */
export function seriesTotals(s: Series): MetricRow {
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  return {
    total_transactions: sum(s.total),
    valid_transactions: sum(s.valid),
    invalid_transactions: sum(s.invalid),
    givt_transactions: sum(s.givt),
    sivt_transactions: sum(s.sivt),
  };
}

/**
 * The chart's x extent in Unix seconds: the whole range, whatever the data. By hour, the
 * last day is a whole day wide like the others (the hours still to come stay empty), so
 * today is not squeezed against the right edge; by day, half a day either side, so the
 * first and last days' points are not drawn on the frame.
 */
export function xExtent(range: DateRange, g: Granularity): [number, number] {
  const first = dateMs(range.start) / 1000;
  const endExclusive = (dateMs(range.end) + DAY_MS) / 1000;
  if (g === 'hour') return [first, endExclusive];
  const half = DAY_MS / 2000;
  return [first - half, endExclusive - DAY_MS / 1000 + half];
}

const DAY_S = DAY_MS / 1000;
const HOUR_S = HOUR_MS / 1000;
/**
 * Tick spacings uPlot may choose from (seconds): whole days by day, so a date is never
 * ticked twice; whole hours that divide a day by hour.
 */
export function timeIncrs(g: Granularity): number[] {
  const days = [1, 2, 3, 4, 7, 14, 28, 56, 91, 182, 364].map((d) => d * DAY_S);
  return g === 'day' ? days : [1, 2, 3, 4, 6, 12].map((h) => h * HOUR_S).concat(days);
}

/** Whole-number tick spacings for counts (1, 2, 5, 10, 20, 50, …): no "2.5 transactions" rounded to 3. */
export const COUNT_INCRS: readonly number[] = Array.from({ length: 13 }, (_, e) => [1, 2, 5].map((m) => m * 10 ** e)).flat();

/** 24-hour UTC ticks: the date at midnight, else the hour; the first tick carries the year. */
export function axisLabel(ts: number, g: Granularity, first: boolean): string {
  const iso = new Date(ts * 1000).toISOString();
  const date = first ? iso.slice(0, 10) : iso.slice(5, 10);
  if (g === 'day' || iso.slice(11, 13) === '00') return date;
  return `${iso.slice(11, 13)}:00`;
}
