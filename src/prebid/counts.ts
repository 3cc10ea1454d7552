// Per-thread transaction counters for reporting. The lookup thread adds one count per
// lookup into a Map keyed by (customer, hour, dimension tuple); every second the worker
// drains it and posts the deltas to the main thread as one message. Memory is bounded:
// past `maxTuples` distinct keys in one interval, new tuples fold their free-text
// dimensions into OVERFLOW so hostile cardinality is counted, never dropped.
import { TUPLE_DIMENSIONS, type TransactionClass } from '../enums.ts';

export const OVERFLOW = '__overflow__';
const SEP = '\u001f';

/** Dimension values of one transaction, in TUPLE_DIMENSIONS order. */
export type DimValues = string[];

/** One delta row: customer, hour start (ms UTC), dims in TUPLE_DIMENSIONS order, counts. */
export interface CountRow {
  customerId: string;
  hour: number;
  dims: string[];
  total: number;
  givt: number;
  sivt: number;
}

/** Dimensions whose values are bounded enumerations; everything else folds on overflow. */
const BOUNDED: ReadonlySet<string> = new Set(['adt', 'dvt', 'env']);
/** Per TUPLE_DIMENSIONS position: true where the value becomes OVERFLOW when a tuple folds. */
export const FOLD_MASK: readonly boolean[] = TUPLE_DIMENSIONS.map((d) => !BOUNDED.has(d));

/** The tuple with its free-text dimensions folded into OVERFLOW. */
export function foldDims(dims: readonly string[]): string[] {
  return dims.map((v, i) => (FOLD_MASK[i] ? OVERFLOW : v));
}

interface Cell {
  row: CountRow;
}

export class TransactionCounter {
  private cells = new Map<string, Cell>();
  /** Transactions folded into overflow tuples since start (for metrics). */
  overflowed = 0;

  constructor(private readonly maxTuples = 50_000) {}

  add(customerId: string, hour: number, dims: DimValues, cls: TransactionClass): void {
    let key = customerId + SEP + hour;
    for (let i = 0; i < dims.length; i++) key += SEP + dims[i];
    let cell = this.cells.get(key);
    if (cell === undefined) {
      if (this.cells.size >= this.maxTuples) {
        this.overflowed++;
        const folded = foldDims(dims);
        key = customerId + SEP + hour + SEP + folded.join(SEP);
        cell = this.cells.get(key);
        if (cell === undefined) {
          cell = { row: { customerId, hour, dims: folded, total: 0, givt: 0, sivt: 0 } };
          this.cells.set(key, cell);
        }
      } else {
        cell = { row: { customerId, hour, dims: dims.slice(), total: 0, givt: 0, sivt: 0 } };
        this.cells.set(key, cell);
      }
    }
    const r = cell.row;
    r.total++;
    if (cls === 'givt') r.givt++;
    else if (cls === 'sivt') r.sivt++;
  }

  get size(): number {
    return this.cells.size;
  }

  /** Takes the accumulated deltas and starts a new interval. */
  drain(): CountRow[] {
    if (this.cells.size === 0) return [];
    const rows: CountRow[] = [];
    for (const c of this.cells.values()) rows.push(c.row);
    this.cells = new Map();
    return rows;
  }
}
