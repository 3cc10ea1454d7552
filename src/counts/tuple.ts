// A transaction tuple: (customer, hour, one value per TUPLE_DIMENSIONS entry), the unit
// reporting counts by. One module for what the lookup threads, the main thread's pending
// counts and the writers share: the key, the fold rule, the value cap, and TupleCounts,
// the byte-bounded map both sides count into.
//
// Memory is bounded in bytes, whatever the cardinality: past its byte budget a map folds
// each new tuple's free-text dimensions into OVERFLOW, so hostile cardinality is counted,
// never dropped (folded tuples are few: customers × hours × the bounded dimensions).
import { TUPLE_DIMENSIONS, type TransactionClass, type TupleDimension } from '../base/enums.ts';
import { HASH, hashAdd, hashAddIndexed, hashAddNumber, hashBegin, hashEnd, hashId, hashResume, hashSave } from '../memory/hash.ts';
import { ownString } from '../memory/own-string.ts';

export const OVERFLOW = '__overflow__';
/** Joins a tuple's values wherever they travel as one string (joinDims, tupleKey, the writer's batch). */
export const SEP = '\u001f';

/** Longest dimension value kept, in characters; longer values are cut (docs/reporting-api.md). */
export const DIM_VALUE_MAX = 256;

/** Position of each dimension in a tuple's `dims` array. */
export const DIM_INDEX: Readonly<Record<TupleDimension, number>> = Object.fromEntries(
  TUPLE_DIMENSIONS.map((d, i) => [d, i]),
) as Record<TupleDimension, number>;

/** One delta row: customer, hour start (ms UTC), dims in TUPLE_DIMENSIONS order, counts. */
export interface CountRow {
  /** The tuple's id (hashId of tupleHash), so maps key on a number, not a joined string. Computed when absent. */
  id?: number;
  customerId: string;
  hour: number;
  dims: string[];
  total: number;
  givt: number;
  sivt: number;
}

/** Dimensions whose values are bounded enumerations; everything else folds on overflow. */
const BOUNDED: ReadonlySet<TupleDimension> = new Set(['adt', 'dvt', 'env', 'category']);
/** Per TUPLE_DIMENSIONS position: true where the value becomes OVERFLOW when a tuple folds. */
export const FOLD_MASK: readonly boolean[] = TUPLE_DIMENSIONS.map((d) => !BOUNDED.has(d));

/** The tuple with its free-text dimensions folded into OVERFLOW. */
export function foldDims(dims: readonly string[]): string[] {
  return dims.map((v, i) => (FOLD_MASK[i] ? OVERFLOW : v));
}

/** foldDims into a reused array. */
export function foldInto(dims: readonly string[], out: string[]): string[] {
  for (let i = 0; i < dims.length; i++) out[i] = FOLD_MASK[i] ? OVERFLOW : dims[i]!;
  return out;
}

/** The values as one string (one allocation to send or keep instead of one per value). */
export function joinDims(dims: readonly string[]): string {
  return dims.join(SEP);
}

export function splitDims(joined: string): string[] {
  return joined.split(SEP);
}

/** A tuple as one string (customer, hour, values): a map key where a hash id is not wanted. */
export function tupleKey(customerId: string, hour: number, dims: readonly string[]): string {
  return customerId + SEP + hour + SEP + dims.join(SEP);
}

/**
 * Hashes a tuple into HASH with the process's seed; its id is hashId(HASH). Two distinct
 * tuples share an id with probability 2^-53: their counts would merge.
 */
export function tupleHash(customerId: string, hour: number, dims: readonly string[], seed: number): void {
  hashPrefix(customerId, hour, seed);
  hashDims(dims);
}

/** A tuple's hash up to its values: the seed, the customer, the hour. */
function hashPrefix(customerId: string, hour: number, seed: number): void {
  hashBegin(seed);
  hashAdd(customerId);
  hashAddNumber(hour);
}

/** Each value and its position (hashAddIndexed), then the end. */
function hashDims(dims: readonly string[]): void {
  hashAddIndexed(dims);
  hashEnd();
}

/**
 * tupleHash for a stream of tuples that mostly share their customer and hour (a lookup
 * thread's): the (seed, customer, hour) prefix is hashed once and resumed from while the
 * next tuple has the same (the customer id is the key table's own string, so the usual test
 * is one pointer compare). Same result as tupleHash.
 */
export class TupleHasher {
  private customerId = '';
  private hour = NaN;
  private readonly prefix = new Int32Array(3);

  constructor(private readonly seed: number) {}

  hash(customerId: string, hour: number, dims: readonly string[]): void {
    if (customerId !== this.customerId || hour !== this.hour) {
      hashPrefix(customerId, hour, this.seed);
      hashSave(this.prefix);
      this.customerId = customerId;
      this.hour = hour;
    } else hashResume(this.prefix);
    hashDims(dims);
  }
}

/**
 * A value cut to DIM_VALUE_MAX characters, never inside a surrogate pair (half an emoji is
 * not UTF-16 any store accepts: one such value made every flush fail). A lone surrogate
 * already in the value becomes U+FFFD for the same reason, and so does SEP: a tuple's values
 * travel joined by it (announcements, the tuple archive, the impression dictionary, the
 * fleet's keys), and a value holding one (a GET's %1F, a bid request's "\u001f") shifted
 * every later value of its row by one column.
 */
export function clipDim(v: string): string {
  if (v === '') return v; // (most of a lookup's 19 values)
  let out = v;
  if (out.length > DIM_VALUE_MAX) {
    const last = out.charCodeAt(DIM_VALUE_MAX - 1);
    out = out.slice(0, last >= 0xd800 && last <= 0xdbff ? DIM_VALUE_MAX - 1 : DIM_VALUE_MAX);
  }
  return withoutSep(out.isWellFormed() ? out : out.toWellFormed());
}

/** `v` with any SEP in it as U+FFFD, so joined values split back into the same columns. */
export function withoutSep(v: string): string {
  return v.indexOf(SEP) === -1 ? v : v.replaceAll(SEP, '\ufffd');
}


/** Bytes a stored tuple takes, estimated from above: map entry, row, dims array, key and values (UTF-16). */
export function tupleBytes(dims: readonly string[], customerId: string): number {
  let chars = customerId.length + 16;
  for (let i = 0; i < dims.length; i++) chars += dims[i]!.length + 1;
  return 320 + 4 * chars;
}

export interface TupleCountsOptions {
  /** The process's hash seed (the same in every thread, so ids agree). */
  seed: number;
}

/**
 * Counts per tuple in a JS map within a byte budget; `take()` hands them over and starts
 * empty. A new tuple folds into its hour's overflow tuple when the budget is full. Used
 * where the shared table (shared-counts.ts) is not: rows waiting to be written again after
 * a failed flush, and a lookup thread's counts when the shared table is full.
 */
export class TupleCounts {
  private cells = new Map<number, CountRow>();
  private usedBytes = 0;
  /** Additions that went to an overflow tuple (budget full or not admitted), cumulative. */
  folded = 0;
  private readonly seed: number;

  constructor(
    readonly maxBytes: number,
    opts: TupleCountsOptions,
  ) {
    this.seed = opts.seed;
  }

  get size(): number {
    return this.cells.size;
  }

  /** Estimated bytes held now (never above maxBytes plus the overflow tuples). */
  get bytes(): number {
    return this.usedBytes;
  }

  /**
   * Adds counts to a tuple. `dims` is not kept: a new tuple stores its own copies. `id` is
   * the tuple's id when the caller has it.
   */
  add(customerId: string, hour: number, dims: readonly string[], total: number, givt: number, sivt: number, id = -1): void {
    if (id < 0) {
      tupleHash(customerId, hour, dims, this.seed);
      id = hashId(HASH[0]!, HASH[1]!);
    }
    let cell = this.cells.get(id);
    if (cell === undefined) {
      let size = tupleBytes(dims, customerId);
      let kept = dims;
      if (this.usedBytes + size > this.maxBytes) {
        this.folded++;
        kept = foldDims(dims);
        tupleHash(customerId, hour, kept, this.seed);
        id = hashId(HASH[0]!, HASH[1]!);
        cell = this.cells.get(id);
        size = tupleBytes(kept, customerId);
      }
      if (cell === undefined) {
        cell = { id, customerId: ownString(customerId), hour, dims: kept.map(ownString), total: 0, givt: 0, sivt: 0 };
        this.cells.set(id, cell);
        this.usedBytes += size;
      }
    }
    cell.total += total;
    cell.givt += givt;
    cell.sivt += sivt;
  }

  /** One transaction of class `cls`. */
  count(customerId: string, hour: number, dims: readonly string[], cls: TransactionClass): void {
    this.add(customerId, hour, dims, 1, cls === 'givt' ? 1 : 0, cls === 'sivt' ? 1 : 0);
  }

  /**
   * Merges rows (deltas from lookup threads, or a batch put back after a failure). A row
   * for a tuple not held yet is adopted as it is, when it fits: these rows are the caller's
   * to give (fresh copies from a thread message, or rows this map handed out).
   */
  addRows(rows: CountRow[]): void {
    for (const r of rows) {
      const id = r.id;
      if (id !== undefined && !this.cells.has(id)) {
        const size = tupleBytes(r.dims, r.customerId);
        if (this.usedBytes + size <= this.maxBytes) {
          this.cells.set(id, r);
          this.usedBytes += size;
          continue;
        }
      }
      this.add(r.customerId, r.hour, r.dims, r.total, r.givt, r.sivt, id ?? -1);
    }
  }

  /** Takes every row and starts empty. */
  take(): CountRow[] {
    if (this.cells.size === 0) return [];
    const rows = [...this.cells.values()];
    this.cells = new Map();
    this.usedBytes = 0;
    return rows;
  }
}
