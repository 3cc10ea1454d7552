// Reporting counts in shared memory. Every (customer, hour, dimensions) tuple that is
// counted has a slot here holding its totals; lookup threads add to the slot in place
// (under its bucket lock), so a busy tuple costs no message and no allocation per lookup.
// A thread tells the main thread a tuple's dimension values once, when it adds the tuple
// (`NEW`); at each flush the main thread drains the slots with counts (tuple-dictionary.ts).
//
// Admission: each customer may add at most `perCustomerHour` tuples per hour. Past that a
// new tuple is counted in its hour's overflow tuple instead (free-text dimensions become
// __overflow__; tuple.ts), which is always admitted: counted, never dropped. Slots of hours
// other than the current and the previous one (late counts) are reused; when a bucket has
// no such slot the table is `FULL` and the caller counts elsewhere (a thread-local map).
// The table is part of the memory budget and exists once, whatever --threads is.
import { SharedTable, type SharedTableMemory } from '../memory/shared-table.ts';
import { HASH, hashString } from '../memory/hash.ts';
import { HOUR_MS } from '../base/time.ts';

// Tuple slots: 0-1 key (tuple hash, its hour included), 2 hour number, 3-5 total/givt/sivt.
const T_HOUR = 2, T_TOTAL = 3, T_GIVT = 4, T_SIVT = 5, T_WORDS = 6;
// Counter slots: 0-1 key (customer and hour), 2 hour number, 3 tuples admitted.
const C_HOUR = 2, C_COUNT = 3, C_WORDS = 4;
/** takeOne: admitted, no room left for the customer this hour, or the counter's lock stayed taken. */
const ADMITTED = 0, NO_ROOM = 1, BUSY = 2;
/** Counter slots per tuple slot: one customer-hour counter per this many tuples is plenty. */
const COUNTERS_PER_TUPLES = 64;

/** What count() did. */
export const COUNTED = 0, NEW = 1, REFUSED = 2, FULL = 3;
export type CountResult = typeof COUNTED | typeof NEW | typeof REFUSED | typeof FULL;

export interface SharedCountsMemory {
  readonly tuples: SharedTableMemory;
  readonly counters: SharedTableMemory;
  readonly seed: number;
  readonly perCustomerHour: number;
}

/** Bytes of shared memory per tuple slot (with its share of the bucket lock). */
export const TUPLE_SLOT_BYTES = T_WORDS * 4 + 1;

export function allocateSharedCounts(bytes: number, seed: number, perCustomerHour: number): SharedCountsMemory {
  const counterBytes = Math.max(4096, Math.floor(bytes / COUNTERS_PER_TUPLES));
  return {
    tuples: SharedTable.allocate(bytes - counterBytes, T_WORDS),
    counters: SharedTable.allocate(counterBytes, C_WORDS),
    seed,
    perCustomerHour,
  };
}

export class SharedCounts {
  private readonly tuples: SharedTable;
  private readonly counters: SharedTable;
  readonly perCustomerHour: number;
  private readonly seed: number;
  private hourNow = 0;
  /** Tuples of a live hour are never evicted: their counts go on under them. */
  private readonly keepTuple = (base: number): number => (this.isLive(this.tuples.u32[base + T_HOUR]!) ? Infinity : 0);
  private readonly keepCounter = (base: number): number => (this.isLive(this.counters.u32[base + C_HOUR]!) ? 1 : 0);

  constructor(readonly memory: SharedCountsMemory) {
    this.tuples = new SharedTable(memory.tuples);
    this.counters = new SharedTable(memory.counters);
    this.perCustomerHour = memory.perCustomerHour;
    this.seed = memory.seed;
  }

  static create(bytes = 1 << 20, perCustomerHour = 100_000, seed = 0xad317): SharedCounts {
    return new SharedCounts(allocateSharedCounts(bytes, seed, perCustomerHour));
  }

  get capacity(): number {
    return this.tuples.capacity;
  }

  get bytes(): number {
    return this.tuples.bytes + this.counters.bytes;
  }

  occupancy(): number {
    return this.tuples.occupancy();
  }

  /** Lock waits given up on by this thread (see shared-table.ts). */
  get contended(): number {
    return this.tuples.contended + this.counters.contended;
  }

  /** An entry of hour h still matters: the current or the previous hour. */
  private isLive(h: number): boolean {
    return h === this.hourNow || h + 1 === this.hourNow;
  }

  /**
   * Adds (total, givt, sivt) to tuple (hi, lo) of `customerId` in the hour starting at
   * `hour` (ms). `overflow`: the tuple is an overflow tuple, admitted whatever the limit.
   */
  count(hi: number, lo: number, customerId: string, hour: number, now: number, total: number, givt: number, sivt: number, overflow: boolean): CountResult {
    const h = Math.floor(hour / HOUR_MS) >>> 0;
    this.hourNow = Math.floor(now / HOUR_MS) >>> 0;
    if (!this.isLive(h)) return FULL; // far from now: not for this table
    const t = this.tuples;
    const u = t.u32;
    const b = t.bucketOf(hi);
    // A lock that stays taken (its holder preempted): the thread keeps this count itself.
    if (!t.lock(b)) return FULL;
    try {
      let base = t.find(b, hi, lo);
      let result: CountResult = COUNTED;
      if (base < 0 || u[base + T_HOUR] !== h) {
        // The slot it takes: its own stale one, an empty one, or one of an hour that no
        // longer matters. None: full for now.
        const slot = base >= 0 ? base : t.pick(b, this.keepTuple);
        if (slot < 0) return FULL;
        if (!overflow) {
          const admitted = this.takeOne(customerId, h);
          if (admitted === BUSY) return FULL;
          if (admitted === NO_ROOM) return REFUSED;
        }
        base = t.assign(slot, hi, lo);
        u[base + T_HOUR] = h;
        result = NEW;
      }
      u[base + T_TOTAL] = u[base + T_TOTAL]! + total;
      u[base + T_GIVT] = u[base + T_GIVT]! + givt;
      u[base + T_SIVT] = u[base + T_SIVT]! + sivt;
      return result;
    } finally {
      t.unlock(b);
    }
  }

  /** Counts one admission for (customer, hour) if the customer has room left. */
  private takeOne(customerId: string, h: number): typeof ADMITTED | typeof NO_ROOM | typeof BUSY {
    hashString(customerId, this.seed ^ h);
    const hi = HASH[0]!, lo = HASH[1]!;
    const c = this.counters;
    const b = c.bucketOf(hi);
    if (!c.lock(b)) return BUSY;
    try {
      let base = c.find(b, hi, lo);
      if (base < 0 || c.u32[base + C_HOUR] !== h) {
        if (base < 0) base = c.claim(b, hi, lo, this.keepCounter);
        c.u32[base + C_HOUR] = h;
        c.u32[base + C_COUNT] = 0;
      }
      const n = c.u32[base + C_COUNT]!;
      if (n >= this.perCustomerHour) return NO_ROOM;
      c.u32[base + C_COUNT] = n + 1;
      return ADMITTED;
    } finally {
      c.unlock(b);
    }
  }

  /**
   * Main thread, at each flush: hands every slot with counts to `take(hi, lo, total, givt,
   * sivt)` and zeroes it when `take` returns true (false: keep them for the next flush,
   * e.g. when the tuple's values have not arrived yet). Slots stay, so the tuple keeps its
   * place for the rest of its hour.
   */
  drain(take: (hi: number, lo: number, total: number, givt: number, sivt: number) => boolean): number {
    const t = this.tuples;
    const u = t.u32;
    const w = t.slotWords;
    const perBucket = t.bucketSlots * w;
    let drained = 0;
    for (let b = 0; b < t.buckets; b++) {
      const first = b * perBucket;
      // Cheap unlocked look first: most buckets have nothing to drain.
      let any = false;
      for (let base = first; base < first + perBucket; base += w) if (u[base + T_TOTAL] !== 0) any = true;
      // A lock that stays taken: this bucket waits for the next flush.
      if (!any || !t.lock(b)) continue;
      try {
        for (let base = first; base < first + perBucket; base += w) {
          const total = u[base + T_TOTAL]!;
          if (total === 0) continue;
          if (take(u[base]!, u[base + 1]!, total, u[base + T_GIVT]!, u[base + T_SIVT]!)) {
            u[base + T_TOTAL] = 0;
            u[base + T_GIVT] = 0;
            u[base + T_SIVT] = 0;
            drained++;
          }
        }
      } finally {
        t.unlock(b);
      }
    }
    return drained;
  }
}
