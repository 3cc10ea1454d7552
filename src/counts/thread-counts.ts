// How a lookup thread counts one transaction: into its tuple's slot of the shared table
// (shared-counts.ts), announcing the tuple's values to the main thread when it adds a new
// one; into the hour's overflow tuple when the customer's tuples for the hour are used up;
// and, only when the shared table has no room at all, into a small map of its own whose
// rows go to the main thread with the next report. Counted, never dropped.
import { HASH, hashId } from '../memory/hash.ts';
import { FULL, NEW, REFUSED, SharedCounts, type SharedCountsMemory } from './shared-counts.ts';
import type { NewTuple } from './tuple-dictionary.ts';
import { ownString } from '../memory/own-string.ts';
import { TupleCounts, TupleHasher, foldInto, joinDims, type CountRow } from './tuple.ts';
import type { TransactionClass } from '../base/enums.ts';

export class ThreadCounts {
  readonly shared: SharedCounts;
  /** Only when the shared table is full. */
  readonly local: TupleCounts;
  /** Transactions counted in an overflow tuple (cumulative). */
  folded = 0;
  private announced: NewTuple[] = [];
  private readonly foldBuf: string[] = [];
  private readonly hasher: TupleHasher;
  /** The tuple the last count() went to (its hash): the lookup id names it for the impression reports. */
  lastHi = 0;
  lastLo = 0;

  constructor(memory: SharedCountsMemory, localBytes: number) {
    this.shared = new SharedCounts(memory);
    this.hasher = new TupleHasher(memory.seed);
    this.local = new TupleCounts(localBytes, { seed: memory.seed });
  }

  count(customerId: string, hour: number, dims: readonly string[], cls: TransactionClass, now: number): void {
    const g = cls === 'givt' ? 1 : 0;
    const s = cls === 'sivt' ? 1 : 0;
    this.hasher.hash(customerId, hour, dims);
    let hi = HASH[0]!, lo = HASH[1]!;
    let r = this.shared.count(hi, lo, customerId, hour, now, 1, g, s, false);
    let kept = dims;
    if (r === REFUSED) {
      this.folded++;
      kept = foldInto(dims, this.foldBuf);
      this.hasher.hash(customerId, hour, kept);
      hi = HASH[0]!;
      lo = HASH[1]!;
      r = this.shared.count(hi, lo, customerId, hour, now, 1, g, s, true);
    }
    this.lastHi = hi;
    this.lastLo = lo;
    if (r === NEW) {
      this.announced.push({ hi, lo, customerId: ownString(customerId), hour, dims: joinDims(kept) });
    } else if (r === FULL) {
      this.local.add(customerId, hour, kept, 1, g, s, hashId(hi, lo));
    }
  }

  /** What goes to the main thread with the next report: new tuples, and the fallback rows. */
  take(): { announced: NewTuple[]; rows: CountRow[] } {
    const announced = this.announced;
    this.announced = [];
    return { announced, rows: this.local.take() };
  }
}
