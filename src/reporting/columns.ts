// How the reporting dimensions map onto the rollup tables (migration 20). Column names
// are the dimension names themselves, so SQL only ever names columns taken from
// TUPLE_DIMENSIONS / DIMENSIONS, never from a request.
import { TUPLE_DIMENSIONS, type Dimension, type TupleDimension } from '../base/enums.ts';

/**
 * The two granularities, same columns: `period_start` is the start of the UTC hour or
 * day. Daily rows answer every report that does not group by hour (dates are whole days).
 */
export const ROLLUP_TABLES = { hour: 'rollups_hourly', day: 'rollups_daily' } as const;
export type Granularity = keyof typeof ROLLUP_TABLES;

/** Tuple dimensions stored as SMALLINT (enumerations of spec 2.4); the rest are VARCHAR. */
export const INTEGER_DIMENSIONS: ReadonlySet<TupleDimension> = new Set<TupleDimension>(['adt', 'dvt']);

/** Every rollup column: key columns, then the three counters (the writer names them; in the
 * table, columns added by later migrations, such as category, follow the counters). */
export const ROLLUP_COLUMNS: readonly string[] = ['customer_id', 'period_start', ...TUPLE_DIMENSIONS, 'total', 'givt', 'sivt'];
/** The columns that identify a row (everything but the counters), quoted for SQL. */
export const KEY_COLUMNS_SQL = ROLLUP_COLUMNS.slice(0, -3)
  .map((c) => `"${c}"`)
  .join(', ');

/** The three counters summed over a group, as BIGINT (DuckDB's sum widens to HUGEINT). */
export const SUMS_SQL = 'sum(total)::BIGINT AS total, sum(givt)::BIGINT AS givt, sum(sivt)::BIGINT AS sivt';

/**
 * A report's sums: the counters, and the transactions a customer's deny list decided
 * (`policy`): those of category `denylisted` counted as neither GIVT nor SIVT (rows counted
 * before they were their own class carry them as GIVT or SIVT, and stay so).
 */
export const REPORT_SUMS_SQL = `${SUMS_SQL}, sum(CASE WHEN category = 'denylisted' THEN total - givt - sivt ELSE 0 END)::BIGINT AS policy`;

/** SQL type of a tuple dimension's column. */
export function columnType(d: TupleDimension): 'SMALLINT' | 'VARCHAR' {
  return INTEGER_DIMENSIONS.has(d) ? 'SMALLINT' : 'VARCHAR';
}

/**
 * The grouping expression of a dimension: date and hour come from the period start
 * (UTC; DuckDB TIMESTAMP has no zone), everything else is its own column.
 */
export function groupExpression(d: Dimension | 'band' | 'imp_status'): string {
  if (d === 'date') return "date_trunc('day', period_start)";
  if (d === 'hour') return 'CAST(hour(period_start) AS INTEGER)';
  return `"${d}"`;
}

/** The table a report reads: daily unless it groups by hour (or daily rows are not to be used). */
export function tableFor(groupBy: readonly string[], useDaily = true, tables: { hour: string; day: string } = ROLLUP_TABLES): string {
  return useDaily && !groupBy.includes('hour') ? tables.day : tables.hour;
}

/**
 * The impressions' rollups (src/reporting/impressions.ts): the lookup's dimensions, the
 * band it answered and what the beacon found; counters: impressions, the invalid ones
 * (replay, mismatch, expired), and the beacons that labelled their lookup for calibration
 * (its first beacon, valid or mismatch; the first replay of one first seen valid).
 */
export const IMPRESSION_TABLES = { hour: 'imp_rollups_hourly', day: 'imp_rollups_daily' } as const;
export const IMPRESSION_COUNTERS = ['impressions', 'invalid_impressions', 'labelled_lookups'] as const;
