// Count deltas waiting to be written: rows from every lookup thread merged per
// (customer, hour, tuple). Bounded like the threads' own counters: past `maxTuples`
// distinct keys, new tuples fold their free-text dimensions into OVERFLOW, so a store
// that stays down (flushes failing, rows kept) cannot grow memory without limit.
import { foldDims, type CountRow } from '../prebid/counts.ts';

const SEP = '\u001f';


function keyOf(customerId: string, hour: number, dims: readonly string[]): string {
  return customerId + SEP + hour + SEP + dims.join(SEP);
}

export class PendingCounts {
  private cells = new Map<string, CountRow>();
  /** Rows folded into overflow tuples here (not counting the threads' own folding). */
  folded = 0;

  constructor(private readonly maxTuples = 200_000) {}

  get size(): number {
    return this.cells.size;
  }

  /** Merges delta rows; the rows passed in are not kept (a copy is stored). */
  add(rows: readonly CountRow[]): void {
    for (const r of rows) {
      let dims = r.dims;
      let key = keyOf(r.customerId, r.hour, dims);
      let cell = this.cells.get(key);
      if (cell === undefined && this.cells.size >= this.maxTuples) {
        this.folded++;
        dims = foldDims(dims);
        key = keyOf(r.customerId, r.hour, dims);
        cell = this.cells.get(key);
      }
      if (cell === undefined) {
        this.cells.set(key, { customerId: r.customerId, hour: r.hour, dims: dims.slice(), total: r.total, givt: r.givt, sivt: r.sivt });
      } else {
        cell.total += r.total;
        cell.givt += r.givt;
        cell.sivt += r.sivt;
      }
    }
  }

  /** Takes every pending row and starts empty. */
  take(): CountRow[] {
    if (this.cells.size === 0) return [];
    const rows = [...this.cells.values()];
    this.cells = new Map();
    return rows;
  }
}
