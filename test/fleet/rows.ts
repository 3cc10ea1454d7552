// Count rows for the fleet tests, and what ClickHouse should hold after delivering them.
import { TUPLE_DIMENSIONS, type TupleDimension } from '../../src/base/enums.ts';
import type { ClickHouse } from '../../src/fleet/clickhouse.ts';
import { MARKER_CUSTOMER } from '../../src/reporting/batches.ts';
import type { CountRow } from '../../src/counts/tuple.ts';

export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** Two customers of the report tests (reports.test.ts, impressions.test.ts). */
export const CUSTOMER_A = '7d1c2f1e-aaaa-4b7e-8f00-00000000000a';
export const CUSTOMER_B = '7d1c2f1e-bbbb-4b7e-8f00-00000000000b';
/** A report date (YYYY-MM-DD) of a time in ms. */
export const reportDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function dims(v: Partial<Record<TupleDimension, string>> = {}): string[] {
  const base: Partial<Record<TupleDimension, string>> = { pub: 'pub-1', adt: '1', dvt: '2', env: 'site', geo: 'US' };
  return TUPLE_DIMENSIONS.map((d) => v[d] ?? base[d] ?? '');
}

/** `n` distinct rows for `customers`, spread over hours from `fromHour`, counts varying by index. */
export function manyRows(n: number, customers: string[], fromHour: number, hours = 24): CountRow[] {
  const out: CountRow[] = [];
  for (let i = 0; i < n; i++) {
    const total = 1 + (i % 7);
    out.push({
      customerId: customers[i % customers.length]!,
      hour: fromHour + (i % hours) * HOUR,
      dims: dims({ pub: `pub-${i % 50}`, p1: `v${i}`, geo: i % 3 ? 'US' : 'DE' }),
      total,
      givt: i % 3 === 0 ? 1 : 0,
      sivt: i % 5 === 0 ? 1 : 0,
    });
  }
  return out;
}

export interface Sums {
  total: number;
  givt: number;
  sivt: number;
}

export function sums(rows: readonly CountRow[]): Sums {
  const s = { total: 0, givt: 0, sivt: 0 };
  for (const r of rows) {
    s.total += r.total;
    s.givt += r.givt;
    s.sivt += r.sivt;
  }
  return s;
}

/** Sums of customer rows in a ClickHouse rollup table (markers excluded). */
export async function chSums(ch: ClickHouse, table: 'rollups_hourly' | 'rollups_daily'): Promise<Sums> {
  const [r] = await ch.rows<Record<string, string>>(
    `SELECT sum(total) AS total, sum(givt) AS givt, sum(sivt) AS sivt FROM ${table} WHERE customer_id != '${MARKER_CUSTOMER}'`,
  );
  return { total: Number(r!.total), givt: Number(r!.givt), sivt: Number(r!.sivt) };
}

/** How many times each batch's marker is in a table: every value must be 1. */
export async function markerCounts(ch: ClickHouse, table: 'rollups_hourly' | 'rollups_daily'): Promise<number[]> {
  const rows = await ch.rows<{ n: string }>(`SELECT sum(total) AS n FROM ${table} WHERE customer_id = '${MARKER_CUSTOMER}' GROUP BY pub`);
  return rows.map((r) => Number(r.n));
}

/** Values a report filter or a dimension may carry, chosen to break naive quoting. */
export const HOSTILE = [
  "it's",
  "'",
  "''",
  '\\',
  "\\'",
  "\\' OR 1=1 --",
  "x'); DROP TABLE rollups_hourly; --",
  'a\u0000b',
  'line\nbreak\r\ttab',
  '\u0007\u0008\u000b\u000c\u001b\u007f',
  '\\x41',
  '\\0',
  '%s %d {x:String} $1 ?',
  '"double" `back`',
  'é ß ü 中文 עברית',
  '😀 \u{1F680}',
  '\u200b\ufeff',
  'lone \ud800 surrogate',
  'trail \udc00',
  '',
  ' ',
  'x'.repeat(256),
];

/**
 * Every hostile value but '' (not a filter value) and lone surrogates: the DuckDB writer
 * refuses those (its JSON staging rejects them), while the fleet path stores U+FFFD
 * (clickhouse.test.ts checks that side).
 */
export const REPORT_VALUES = HOSTILE.filter((v) => v !== '' && !/[\ud800-\udfff]/.test(v.replace(/[\ud800-\udbff][\udc00-\udfff]/g, '')));
