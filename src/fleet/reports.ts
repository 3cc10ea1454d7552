// Reports computed by ClickHouse: the fleet's ReportSource. Same tables, columns and
// semantics as the DuckDB source (src/reporting/engine.ts), so the API, the dashboard and
// their tests do not know which store answered. Values reach the SQL only through
// ./sql.ts; names only from the dimension enums.
import type { Dimension } from '../base/enums.ts';
import { HttpError } from '../base/errors.ts';
import { log } from '../base/log.ts';
import { IMPRESSION_TABLES, ROLLUP_TABLES, tableFor } from '../reporting/columns.ts';
import type { BeaconLabels, LabelCounts } from '../reporting/calibration.ts';
import { tooManyGroups, type ReportSource, type SourceRows } from '../reporting/engine.ts';
import type { ReportKind, ReportQuery } from '../reporting/params.ts';
import { FleetError, type ClickHouse } from './clickhouse.ts';
import { sqlIdentifier, sqlInt, sqlList, sqlString } from './sql.ts';

/** The grouping expression of a dimension; hours and dates are UTC (the column's zone). */
function groupExpression(d: ReportQuery['groupBy'][number]): string {
  if (d === 'date') return 'toDate(period_start)';
  if (d === 'hour') return 'toHour(period_start)';
  return sqlIdentifier(d);
}

// Aliases that name no column: ClickHouse resolves aliases before columns, and
// `sum(total) AS total` would be read as a cyclic alias by older releases.
const SUMS = "sum(total) AS sum_total, sum(givt) AS sum_givt, sum(sivt) AS sum_sivt, sumIf(total - givt - sivt, category = 'denylisted') AS sum_policy";
/** The impressions' sums (their rollups of schema 5): impressions and the invalid ones. */
const IMPRESSION_SUMS = 'sum(impressions) AS sum_impressions, sum(invalid_impressions) AS sum_invalid_impressions';

/** The WHERE clause of a report: one customer, the date window, the filters. */
export function reportWhere(customerId: string, q: ReportQuery): string {
  const parts = [
    `customer_id = ${sqlString(customerId)}`,
    `period_start >= toDateTime(${sqlInt(Math.floor(q.fromMs / 1000))})`,
    `period_start < toDateTime(${sqlInt(Math.floor(q.toMs / 1000))})`,
  ];
  for (const f of q.filters) parts.push(`${sqlIdentifier(f.dimension)} IN ${sqlList(f.values)}`);
  return parts.join(' AND ');
}

/** The whole statement of a report (exported for tests that read it). */
export function reportSql(customerId: string, q: ReportQuery, useDailyRollups = true, kind: ReportKind = 'lookups'): string {
  const table = tableFor(q.groupBy, useDailyRollups, kind === 'impressions' ? IMPRESSION_TABLES : ROLLUP_TABLES);
  const where = reportWhere(customerId, q);
  const page = `LIMIT ${sqlInt(q.limit)} OFFSET ${sqlInt(q.offset)}`;
  const sums = kind === 'impressions' ? IMPRESSION_SUMS : SUMS;
  if (q.groupBy.length === 0) return `SELECT ${sums} FROM ${table} WHERE ${where} ${page}`;
  const aliases = q.groupBy.map((d) => `g_${d}`);
  const keys = q.groupBy.map((d, i) => `${groupExpression(d)} AS ${aliases[i]}`).join(', ');
  const order = aliases.join(', ');
  return `SELECT ${keys}, ${sums} FROM ${table} WHERE ${where} GROUP BY ${order} ORDER BY ${order} ${page}`;
}

/** ClickHouse's MEMORY_LIMIT_EXCEEDED: the query would pass its max_memory_usage. */
const MEMORY_LIMIT_EXCEEDED = 241;

/**
 * What a customer is told when ClickHouse fails a report or calibration query: a query past
 * its memory limit is the report's size (422: narrow it); any other error ClickHouse
 * answered is its own (503, the code in the log); no answer, a 503 to retry.
 */
function refusal(e: FleetError): HttpError {
  if (e.chCode === MEMORY_LIMIT_EXCEEDED) return tooManyGroups('the fleet store (ClickHouse) gives one query', "ClickHouse's max_memory_usage");
  if (e.chCode !== null) {
    return new HttpError('unavailable', `The fleet store (ClickHouse) refused this report (its error ${e.chCode}; the server log has it): retry later, and tell the operator if it lasts.`, 503, { 'Retry-After': '30' });
  }
  return new HttpError('unavailable', 'Reports come from the fleet store (ClickHouse), which did not answer; retry in a minute.', 503, { 'Retry-After': '30' });
}

export class ClickHouseReportSource implements ReportSource {
  constructor(
    private readonly ch: ClickHouse,
    private readonly useDailyRollups = true,
    /** The lookups' rollups (default) or the impressions' (GET /v1/report/impressions). */
    private readonly kind: ReportKind = 'lookups',
  ) {}

  async fetch(customerId: string, q: ReportQuery): Promise<SourceRows> {
    let data: Record<string, unknown>[];
    let before: number | undefined;
    try {
      ({ data, rowsBeforeLimit: before } = await this.ch.report<Record<string, unknown>>(reportSql(customerId, q, this.useDailyRollups, this.kind)));
    } catch (e) {
      if (!(e instanceof FleetError)) throw e;
      log.error({ err: e.message, chCode: e.chCode }, 'report query on ClickHouse failed');
      throw refusal(e);
    }
    const rows = data.map((r) => {
      const out: Record<string, unknown> =
        this.kind === 'impressions'
          ? { impressions: r.sum_impressions, invalid_impressions: r.sum_invalid_impressions }
          : { total: r.sum_total, givt: r.sum_givt, sivt: r.sum_sivt, policy: r.sum_policy };
      for (const d of q.groupBy) out[d] = r[`g_${d}`];
      return out;
    });
    // With GROUP BY, rows_before_limit_at_least is the exact number of groups.
    const totalRows = q.groupBy.length === 0 ? 1 : (before ?? rows.length + q.offset);
    return { rows, totalRows };
  }
}

/**
 * The calibration report's beacon side from ClickHouse (the impressions' daily rollups):
 * per band, lookups labelled by their beacons and of them invalid, by the same rule as
 * DuckDB's (src/reporting/calibration.ts). Feedback labels stay in the full instance's
 * DuckDB, where POST /v1/feedback (account port, full instance only) keeps them.
 */
export class ClickHouseBeaconLabels implements BeaconLabels {
  constructor(private readonly ch: ClickHouse) {}

  async byBand(customerId: string, fromMs: number, toMs: number): Promise<Array<{ band: string } & LabelCounts>> {
    const sql =
      `SELECT band, sumIf(labelled_lookups, imp_status IN ('valid', 'mismatch')) AS labelled, ` +
      `sumIf(labelled_lookups, imp_status IN ('mismatch', 'replay')) AS invalid FROM ${IMPRESSION_TABLES.day} ` +
      `WHERE customer_id = ${sqlString(customerId)} AND period_start >= toDateTime(${sqlInt(Math.floor(fromMs / 1000))}) ` +
      `AND period_start < toDateTime(${sqlInt(Math.floor(toMs / 1000))}) GROUP BY band`;
    try {
      const rows = await this.ch.rows<{ band: string; labelled: string; invalid: string }>(sql, 'calibration query');
      return rows.map((r) => ({ band: r.band, labelled: Number(r.labelled), invalid: Number(r.invalid) }));
    } catch (e) {
      if (!(e instanceof FleetError)) throw e;
      log.error({ err: e.message, chCode: e.chCode }, 'calibration query on ClickHouse failed');
      throw refusal(e);
    }
  }
}
