// The one query engine behind the reporting API and the dashboard: a checked ReportQuery
// becomes one GROUP BY over the customer's rollups, run by a ReportSource: the embedded
// DuckDB here (parameterised; identifiers only from the dimension enums), or ClickHouse
// for a fleet (src/fleet/reports.ts). Queueing, timing and the response shape are shared.
import { timestampValue, type DuckDBValue } from '@duckdb/node-api';
import type { Dimension } from '../base/enums.ts';
import { HttpError } from '../base/errors.ts';
import { log } from '../base/log.ts';
import { inTransaction, isOutOfMemory, memoryLimit, withHashParts, type Queryable, type Store } from '../store/db.ts';
import { IMPRESSION_COUNTERS, IMPRESSION_TABLES, REPORT_SUMS_SQL, ROLLUP_TABLES, groupExpression, tableFor } from './columns.ts';
import { ConcurrencyGate } from './gate.ts';
import { formatDate, parseReportQuery, type ReportDimension, type ReportKind, type ReportQuery } from './params.ts';
import { WEEKLY_ROLLUPS, builtWeeksWithin, daysOutside, mayHoldWeek, type WeekSpan, type WeeklyTables } from './weeks.ts';

export interface ReportMeta {
  start_date: string;
  end_date: string;
  group_by: ReportDimension[];
  total_rows: number;
  returned_rows: number;
  offset: number;
}

export interface ReportMetrics {
  total_transactions: number;
  valid_transactions: number;
  invalid_transactions: number;
  sivt_transactions: number;
  givt_transactions: number;
  /** Decided by the customer's own deny list: neither valid nor GIVT nor SIVT. */
  policy_transactions: number;
}

export type ReportRow = Partial<Record<ReportDimension, string | number>> & ReportMetrics;

/** The impressions report's measures (GET /v1/report/impressions). */
export interface ImpressionMetrics {
  impressions: number;
  valid_impressions: number;
  invalid_impressions: number;
}

export type ImpressionRow = Partial<Record<ReportDimension, string | number>> & ImpressionMetrics;

/** A report: its rows are ReportRow (lookups) or ImpressionRow (an engine of kind 'impressions'). */
export interface Report<R = ReportRow> {
  meta: ReportMeta;
  rows: R[];
}

export interface ReportEngineOptions {
  retentionDays: number;
  now?: () => number;
  /** false: read hourly rows even without `hour` (benchmarks compare the two). */
  useDailyRollups?: boolean;
  /** false: never read the weekly rows (./weeks.ts), only daily ones (tests and benchmarks compare the two). */
  useWeeklyRollups?: boolean;
  /** Reports running at once (default 1); more wait in line, up to `maxQueued` (default 64). */
  maxConcurrent?: number;
  maxQueued?: number;
  /** Which rollups: the lookups' (default) or the impressions'. */
  kind?: ReportKind;
}

/** Observers of each report's execution time in seconds (queueing excluded), e.g. /metrics. */
export type QueryObserver = (seconds: number) => void;

/**
 * Rows of one report as a store returns them: each grouped dimension under its name (date
 * as a Date or 'YYYY-MM-DD'), the sums as `total`, `givt`, `sivt`; and the number of
 * groups before limit/offset.
 */
export interface SourceRows {
  rows: Record<string, unknown>[];
  totalRows: number;
}

/** Where reports are computed: one method, one customer, one checked query. */
export interface ReportSource {
  fetch(customerId: string, q: ReportQuery): Promise<SourceRows>;
}

interface Built {
  sql: string;
  params: DuckDBValue[];
}

/** Output value of a grouped dimension: date as YYYY-MM-DD, numbers for hour/adt/dvt. */
function dimensionValue(d: ReportDimension, v: unknown): string | number {
  if (d === 'date') return v instanceof Date ? formatDate(v.getTime()) : String(v);
  if (typeof v === 'bigint') return Number(v);
  return v as string | number;
}

export class ReportEngine<R = ReportRow> {
  private readonly now: () => number;
  private readonly gate: ConcurrencyGate;
  private readonly source: ReportSource;

  /** `from`: the DuckDB store (rollup tables of migration 20) or another ReportSource. */
  constructor(
    from: Store | ReportSource,
    private readonly opts: ReportEngineOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.gate = new ConcurrencyGate(opts.maxConcurrent ?? 1, opts.maxQueued ?? 64);
    this.kind = opts.kind ?? 'lookups';
    this.source = 'fetch' in from ? from : new DuckDbReportSource(from, opts.useDailyRollups, this.kind, opts.useWeeklyRollups);
  }

  readonly kind: ReportKind;

  /** Checks the parameters (HttpError 400/422) and runs the report for one customer. */
  async run(customerId: string, params: URLSearchParams): Promise<Report<R>> {
    const q = parseReportQuery(params, { nowMs: this.now(), retentionDays: this.opts.retentionDays, kind: this.kind });
    return this.query(customerId, q);
  }

  query(customerId: string, q: ReportQuery): Promise<Report<R>> {
    return this.gate.run(() => this.execute(customerId, q));
  }

  readonly observers: QueryObserver[] = [];

  private async execute(customerId: string, q: ReportQuery): Promise<Report<R>> {
    const t0 = performance.now();
    try {
      return await this.executeTimed(customerId, q);
    } finally {
      const seconds = (performance.now() - t0) / 1000;
      for (const o of this.observers) o(seconds);
    }
  }

  private async executeTimed(customerId: string, q: ReportQuery): Promise<Report<R>> {
    const { rows: raw, totalRows } = await this.source.fetch(customerId, q);
    const rows = raw.map((r) => this.toRow(q.groupBy, r));
    return {
      meta: {
        start_date: q.startDate,
        end_date: q.endDate,
        group_by: q.groupBy,
        total_rows: totalRows,
        returned_rows: rows.length,
        offset: q.offset,
      },
      rows,
    };
  }

  private toRow(groupBy: readonly ReportDimension[], r: Record<string, unknown>): R {
    const dims: Partial<Record<ReportDimension, string | number>> = {};
    for (const d of groupBy) dims[d] = dimensionValue(d, r[d]);
    if (this.kind === 'impressions') {
      const impressions = Number(r.impressions ?? 0);
      const invalid = Number(r.invalid_impressions ?? 0);
      const row: ImpressionRow = { ...dims, impressions, valid_impressions: impressions - invalid, invalid_impressions: invalid };
      return row as R;
    }
    const total = Number(r.total ?? 0);
    const givt = Number(r.givt ?? 0);
    const sivt = Number(r.sivt ?? 0);
    const policy = Number(r.policy ?? 0);
    const row: ReportRow = {
      ...dims,
      total_transactions: total,
      valid_transactions: total - givt - sivt - policy,
      invalid_transactions: givt + sivt,
      sivt_transactions: sivt,
      givt_transactions: givt,
      policy_transactions: policy,
    };
    return row as R;
  }
}

/**
 * The 422 of a report too large for its store's memory (`memory`: whose, `limit`: what the
 * operator raises), from DuckDB here or ClickHouse (src/fleet/reports.ts).
 */
export function tooManyGroups(memory: string, limit: string): HttpError {
  return new HttpError(
    'unprocessable',
    `This report has too many groups for the memory ${memory}: ask for a shorter date range, fewer group_by dimensions or filters, or ask the operator to raise ${limit}.`,
  );
}

/** A grouped report's SQL: the keys as named columns, their names (the order), their expressions. */
function grouping(q: ReportQuery): { keys: string; order: string; exprs: string } {
  return {
    keys: q.groupBy.map((d) => `${groupExpression(d)} AS "${d}"`).join(', '),
    order: q.groupBy.map((d) => `"${d}"`).join(', '),
    exprs: q.groupBy.map((d) => groupExpression(d)).join(', '),
  };
}

/** Reports from the embedded DuckDB: one parameterised statement per report (in parts past its memory limit). */
export class DuckDbReportSource implements ReportSource {
  private readonly tables: { hour: string; day: string };
  private readonly sums: string;
  /** The weekly rows a report that groups by neither date nor hour may read (lookups only). */
  private readonly weeks: WeeklyTables | null;

  constructor(
    private readonly store: Store,
    private readonly useDailyRollups = true,
    kind: ReportKind = 'lookups',
    useWeeklyRollups = true,
  ) {
    this.tables = kind === 'impressions' ? IMPRESSION_TABLES : ROLLUP_TABLES;
    this.weeks = kind === 'lookups' && useDailyRollups && useWeeklyRollups ? WEEKLY_ROLLUPS : null;
    this.sums = kind === 'impressions' ? IMPRESSION_COUNTERS.map((c) => `sum("${c}")::BIGINT AS "${c}"`).join(', ') : REPORT_SUMS_SQL;
  }

  async fetch(customerId: string, q: ReportQuery): Promise<SourceRows> {
    // A connection of its own: a report never queues behind the writer's transaction.
    const conn = await this.store.connection();
    try {
      if (q.groupBy.length === 0) return await this.fetchWhole(conn, customerId, q);
      // Past DuckDB's memory_limit (a report of many groups at a small --memory-budget),
      // where DuckDB should spill and at some limits fails instead (see isOutOfMemory): the
      // same report in hash parts, each a fraction of the groups.
      return await withHashParts(
        (parts) => (parts === 1 ? this.fetchWhole(conn, customerId, q) : this.fetchInParts(conn, customerId, q, parts)),
        async (parts, r) =>
          log.warn(
            { groupBy: q.groupBy, startDate: q.startDate, endDate: q.endDate, groups: r.totalRows, parts, memoryLimit: await memoryLimit(conn) },
            'reporting: a report passed DuckDB\'s memory limit and was answered in parts, more slowly: a larger --memory-budget gives reports more memory',
          ),
      );
    } catch (e) {
      if (!isOutOfMemory(e)) throw e;
      throw tooManyGroups(`the server gives reports (DuckDB's ${await memoryLimit(conn)})`, '--memory-budget');
    } finally {
      conn.close();
    }
  }

  /** The report in `parts` pieces from the start, as fetch() answers it past DuckDB's memory limit (tests compare the two). */
  async fetchParts(customerId: string, q: ReportQuery, parts: number): Promise<SourceRows> {
    const conn = await this.store.connection();
    try {
      return await this.fetchInParts(conn, customerId, q, parts);
    } finally {
      conn.close();
    }
  }

  /** The report in one statement (its groups' count beside each row). */
  private fetchWhole(conn: Queryable, customerId: string, q: ReportQuery): Promise<SourceRows> {
    return this.withWeeks(conn, q, async (weeks) => {
      const { sql, params } = this.build(customerId, q, weeks);
      const rows = await conn.all(sql, params);
      let totalRows: number;
      if (q.groupBy.length === 0) totalRows = 1;
      else if (rows.length > 0) totalRows = Number(rows[0]!.total_rows);
      else if (q.offset === 0) totalRows = 0;
      else totalRows = await this.countGroups(conn, customerId, q, weeks);
      return { rows, totalRows };
    });
  }

  /**
   * Runs `fn` with the built weeks the report may read (./weeks.ts): for a report grouped by
   * neither date nor hour, those wholly inside its dates, read in one transaction with the
   * rows (so the marks and the rows agree); otherwise none.
   */
  private withWeeks<T>(conn: Queryable, q: ReportQuery, fn: (weeks: WeekSpan[]) => Promise<T>): Promise<T> {
    const weekly = this.weeks;
    if (!weekly || q.groupBy.includes('date') || q.groupBy.includes('hour') || !mayHoldWeek(q.fromMs, q.toMs)) return fn([]);
    return inTransaction(conn, async () => fn(await builtWeeksWithin(conn, q.fromMs, q.toMs, weekly)));
  }

  /**
   * A grouped report in `parts` statements, each over the groups whose keys hash to it: each
   * keeps its first offset + limit groups in key order (and counts its groups) in a temporary
   * table, whose own first page is the report's page. The same rows as fetchWhole(), each
   * part's hash table a `parts`-th of the whole; the rows are read `parts` times.
   */
  private fetchInParts(conn: Queryable, customerId: string, q: ReportQuery, parts: number): Promise<SourceRows> {
    return this.withWeeks(conn, q, (weeks) => this.fetchInPartsOf(conn, customerId, q, parts, weeks));
  }

  private async fetchInPartsOf(conn: Queryable, customerId: string, q: ReportQuery, parts: number, weeks: readonly WeekSpan[]): Promise<SourceRows> {
    const params: DuckDBValue[] = [];
    const scan = this.scan(customerId, q, params, weeks);
    const table = tableFor(q.groupBy, this.useDailyRollups, this.tables);
    const { keys, order, exprs } = grouping(q);
    const part = `hash(${exprs}) % ${parts}`;
    await conn.run(`CREATE OR REPLACE TEMP TABLE report_parts AS SELECT ${keys}, ${this.sums}, 0::BIGINT AS part_groups, 0 AS part FROM ${table} WHERE false GROUP BY ${order}`);
    try {
      for (let i = 0; i < parts; i++) {
        await conn.run(
          `INSERT INTO report_parts SELECT ${keys}, ${this.sums}, count(*) OVER (), ${i} FROM ${scan} AND ${part} = ${i} ` +
            `GROUP BY ${order} ORDER BY ${order} LIMIT ${q.offset + q.limit}`,
          params,
        );
      }
      const rows = await conn.all(`SELECT * EXCLUDE (part_groups, part) FROM report_parts ORDER BY ${order} LIMIT ${q.limit} OFFSET ${q.offset}`);
      const n = await conn.one<{ n: bigint | null }>('SELECT sum(part_groups)::BIGINT AS n FROM (SELECT DISTINCT part, part_groups FROM report_parts)');
      return { rows, totalRows: Number(n?.n ?? 0) };
    } finally {
      await conn.run('DROP TABLE report_parts').catch(() => undefined);
    }
  }

  /**
   * What follows FROM in a report: its rows of the customer, dates and filters, as
   * `<rows> WHERE <conditions>` (more may be ANDed on). With built weeks (./weeks.ts): their
   * weekly rows and the daily rows of the other days, one UNION ALL.
   */
  private scan(customerId: string, q: ReportQuery, params: DuckDBValue[], weeks: readonly WeekSpan[] = []): string {
    const bind = (v: DuckDBValue) => {
      params.push(v);
      return `$${params.length}`;
    };
    const at = (ms: number) => bind(timestampValue(BigInt(ms) * 1000n));
    const customer = `customer_id = ${bind(customerId)}`;
    const filtersSql = () => q.filters.map((f) => ` AND "${f.dimension}" IN (${f.values.map((v) => bind(v)).join(', ')})`).join('');
    if (!this.weeks || weeks.length === 0) {
      const table = tableFor(q.groupBy, this.useDailyRollups, this.tables);
      const range = `period_start >= ${at(q.fromMs)} AND period_start < ${at(q.toMs)}`;
      return `${table} WHERE ${customer} AND ${range}${filtersSql()}`;
    }
    const filters = filtersSql();
    // Only the columns the report reads (SELECT * would read every column of both tables).
    const columns = [...new Set([...q.groupBy, 'total', 'givt', 'sivt', 'category'])].map((c) => `"${c}"`).join(', ');
    const branches = [`SELECT ${columns} FROM ${this.weeks.table} WHERE ${customer} AND period_start IN (${weeks.map((w) => at(w.start)).join(', ')})${filters}`];
    const days = daysOutside(q.fromMs, q.toMs, weeks);
    if (days.length > 0) {
      const ranges = days.map(([from, to]) => `(period_start >= ${at(from)} AND period_start < ${at(to)})`).join(' OR ');
      branches.push(`SELECT ${columns} FROM ${this.tables.day} WHERE ${customer} AND (${ranges})${filters}`);
    }
    return `(${branches.join(' UNION ALL ')}) AS rollups WHERE true`;
  }

  private build(customerId: string, q: ReportQuery, weeks: readonly WeekSpan[] = []): Built {
    const params: DuckDBValue[] = [];
    const scan = this.scan(customerId, q, params, weeks);
    if (q.groupBy.length === 0) {
      // One total row (zeros when nothing matched); offset ≥ 1 pages past it.
      params.push(q.limit, q.offset);
      return {
        sql: `SELECT ${this.sums} FROM ${scan} LIMIT $${params.length - 1} OFFSET $${params.length}`,
        params,
      };
    }
    const { keys, order } = grouping(q);
    params.push(q.limit, q.offset);
    return {
      sql:
        `SELECT ${keys}, ${this.sums}, count(*) OVER () AS total_rows FROM ${scan} ` +
        `GROUP BY ${order} ORDER BY ${order} LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    };
  }

  private async countGroups(conn: Queryable, customerId: string, q: ReportQuery, weeks: readonly WeekSpan[]): Promise<number> {
    const params: DuckDBValue[] = [];
    const scan = this.scan(customerId, q, params, weeks);
    const r = await conn.one<{ n: bigint }>(`SELECT count(*) AS n FROM (SELECT 1 FROM ${scan} GROUP BY ${grouping(q).exprs})`, params);
    return Number(r?.n ?? 0);
  }
}
