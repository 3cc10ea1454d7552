// Rollup batches: the unit that travels from a host to ClickHouse exactly once. A batch is
// a list of count rows that all fall in one ClickHouse partition (one UTC month) and is
// small enough to be one INSERT block, so ClickHouse writes it as one part: all of it or
// none. Each table's INSERT of a batch also carries the batch's marker row, which is how a
// retry learns whether the batch is already in (src/fleet/delivery.ts).
import { TUPLE_DIMENSIONS } from '../base/enums.ts';
import { IMPRESSION_COUNTERS, IMPRESSION_TABLES, INTEGER_DIMENSIONS, ROLLUP_TABLES, type Granularity } from './columns.ts';
import { tupleKey, type CountRow } from '../counts/tuple.ts';
import { dayStart } from '../base/time.ts';
import { toStoredString } from '../base/text.ts';

/**
 * Rows per batch. Far below ClickHouse's max_insert_block_size (1,048,576 rows) and its
 * squashing thresholds on current releases, so one batch is always one block.
 */
export const BATCH_ROWS = 10_000;

/** customer_id of marker rows: not a UUID, so no report (always one customer) counts one. */
export const MARKER_CUSTOMER = '#batch';

/**
 * What a fleet writer carries to ClickHouse: the lookups' rollups, or the impressions'
 * (the lookup's dimensions, then band and imp_status; counters impressions, invalid
 * impressions, labelled lookups). A CountRow's dims follow `dims`; its total, givt, sivt
 * are the three `counters` in order. Each kind has its own spool table in DuckDB and its
 * own query-id tag, so the two never share a batch or a query id.
 */
export interface FleetRollups {
  readonly name: 'lookups' | 'impressions';
  readonly tables: { readonly hour: string; readonly day: string };
  readonly dims: readonly string[];
  readonly counters: readonly [string, string, string];
  /** The DuckDB spool table (same columns as fleet_spool). */
  readonly spoolTable: string;
  /** Inserted into the query id after the batch id ('' for the lookups: ids of older releases stay valid). */
  readonly queryTag: string;
}

export const LOOKUP_FLEET_ROLLUPS: FleetRollups = {
  name: 'lookups',
  tables: ROLLUP_TABLES,
  dims: TUPLE_DIMENSIONS,
  counters: ['total', 'givt', 'sivt'],
  spoolTable: 'fleet_spool',
  queryTag: '',
};

export const IMPRESSION_FLEET_ROLLUPS: FleetRollups = {
  name: 'impressions',
  tables: IMPRESSION_TABLES,
  dims: [...TUPLE_DIMENSIONS, 'band', 'imp_status'],
  counters: IMPRESSION_COUNTERS,
  spoolTable: 'fleet_imp_spool',
  queryTag: 'imp-',
};

export interface Batch {
  batchId: string;
  rows: CountRow[];
}

/** The UTC month (YYYYMM) holding `ms`: the ClickHouse partition of a row (toYYYYMM). */
export function monthOf(ms: number): number {
  const d = new Date(ms);
  return d.getUTCFullYear() * 100 + d.getUTCMonth() + 1;
}

/** Splits rows into batches of at most `maxRows`, each within one UTC month. */
export function toBatches(rows: readonly CountRow[], newId: () => string, maxRows = BATCH_ROWS): Batch[] {
  const byMonth = new Map<number, CountRow[]>();
  for (const r of rows) {
    const m = monthOf(r.hour);
    let list = byMonth.get(m);
    if (!list) byMonth.set(m, (list = []));
    list.push(r);
  }
  const out: Batch[] = [];
  for (const m of [...byMonth.keys()].sort((a, b) => a - b)) {
    const list = byMonth.get(m)!;
    for (let i = 0; i < list.length; i += maxRows) out.push({ batchId: newId(), rows: list.slice(i, i + maxRows) });
  }
  return out;
}

/** The batch's rows at a granularity: as they are for hours, summed per UTC day for days. */
export function rowsAt(g: Granularity, rows: readonly CountRow[]): CountRow[] {
  if (g === 'hour') return rows.slice();
  const days = new Map<string, CountRow>();
  for (const r of rows) {
    const day = dayStart(r.hour);
    const key = tupleKey(r.customerId, day, r.dims);
    const d = days.get(key);
    if (d) {
      d.total += r.total;
      d.givt += r.givt;
      d.sivt += r.sivt;
    } else {
      days.set(key, { customerId: r.customerId, hour: day, dims: r.dims, total: r.total, givt: r.givt, sivt: r.sivt });
    }
  }
  return [...days.values()];
}

/** period_start (epoch seconds) of the batch's marker in a table: its first row's period there. */
export function markerPeriodSeconds(g: Granularity, batch: Batch): number {
  const first = batch.rows[0];
  if (!first) throw new Error(`batch ${batch.batchId} has no rows`);
  return Math.floor((g === 'hour' ? first.hour : dayStart(first.hour)) / 1000);
}

const INTEGER_COLUMNS = INTEGER_DIMENSIONS as ReadonlySet<string>;

/** One ClickHouse row object (JSONEachRow) of a count row. */
function chRow(kind: FleetRollups, customerId: string, periodSeconds: number, dims: readonly string[], total: number, givt: number, sivt: number): Record<string, string | number> {
  const o: Record<string, string | number> = { customer_id: toStoredString(customerId), period_start: periodSeconds };
  for (let i = 0; i < kind.dims.length; i++) {
    const v = dims[i] ?? '';
    const d = kind.dims[i]!;
    o[d] = INTEGER_COLUMNS.has(d) ? Number(v) || 0 : toStoredString(v);
  }
  const [c1, c2, c3] = kind.counters;
  o[c1] = total;
  o[c2] = givt;
  o[c3] = sivt;
  return o;
}

/** The marker row of a batch in a table: pub = batch id, first counter 1 (a zero row would be merged away). */
export function markerRow(g: Granularity, batch: Batch, kind: FleetRollups = LOOKUP_FLEET_ROLLUPS): Record<string, string | number> {
  const dims = kind.dims.map((d) => (d === 'pub' ? batch.batchId : ''));
  return chRow(kind, MARKER_CUSTOMER, markerPeriodSeconds(g, batch), dims, 1, 0, 0);
}

/** The INSERT body of a batch for one table: its rows at that granularity, then its marker. */
export function insertRows(g: Granularity, batch: Batch, kind: FleetRollups = LOOKUP_FLEET_ROLLUPS): Array<Record<string, string | number>> {
  const out = rowsAt(g, batch.rows).map((r) => chRow(kind, r.customerId, Math.floor(r.hour / 1000), r.dims, r.total, r.givt, r.sivt));
  out.push(markerRow(g, batch, kind));
  return out;
}

export const GRANULARITIES: readonly Granularity[] = ['hour', 'day'];
