// The lids the impression beacon has seen, once per process in shared memory (every lookup
// thread answers beacons), so a lid fired twice is a replay whichever thread takes it.
// Keyed by the lid's tag (a keyed 64-bit MAC: unpredictable, unique per lookup); a slot
// holds the lookup's second and how many beacons came for it. Entries matter only while
// their lid is on time (--imp-ttl): past it a beacon is `expired` anyway, so a full bucket
// gives up an entry past its time first, else the oldest lookup (`evictedLive` counts those:
// a replay of such a lid would pass as a first sight).
import { SharedTable, type SharedTableMemory } from '../memory/shared-table.ts';

// Slot words: 0-1 key (tag), 2 lookup time (s), 3 beacons seen (bit 31: the first was a mismatch).
const AT = 2, HITS = 3, WORDS = 4;
const FIRST_MISMATCH = 0x80000000;

export function allocateSeenLids(bytes: number): SharedTableMemory {
  return SharedTable.allocate(Math.max(bytes, 4096), WORDS);
}

export class SeenLids {
  private readonly table: SharedTable;
  /** Entries of lids still on time given up for room (cumulative, this thread). */
  evictedLive = 0;
  /** After a note() that found the lid: its first beacon was a mismatch. */
  firstWasMismatch = false;
  private nowSec = 0;
  private ttlSec = 0;
  private readonly keep = (base: number): number => {
    const at = this.table.u32[base + AT]!;
    // Past its time: worth nothing; else the newer, the more worth keeping.
    return this.ttlSec > 0 && at + this.ttlSec < this.nowSec ? -1 : at;
  };

  constructor(memory: SharedTableMemory) {
    this.table = new SharedTable(memory);
  }

  get capacity(): number {
    return this.table.capacity;
  }

  occupancy(): number {
    return this.table.occupancy();
  }

  get contended(): number {
    return this.table.contended;
  }

  /**
   * Takes a first sight another host had (src/fleet/seen-lid-exchange.ts; main thread): the lid
   * with tag (hi, lo) counts as seen once here, its first beacon a mismatch or not, so its
   * next beacon on this host is a `replay`. Changes nothing when the lid is known here
   * already. Returns true when it was added.
   */
  remember(hi: number, lo: number, atSec: number, nowSec: number, ttlSec: number, mismatch: boolean): boolean {
    const t = this.table;
    if (hi === 0 && lo === 0) hi = 1;
    const b = t.bucketOf(hi);
    const held = t.lock(b);
    try {
      if (t.find(b, hi, lo) >= 0) return false;
      this.insert(b, hi, lo, atSec, nowSec, ttlSec, mismatch);
      return true;
    } finally {
      if (held) t.unlock(b);
    }
  }

  /**
   * Notes a beacon for the lid with tag (hi, lo), made at `atSec`; returns how many beacons
   * came for it before this one (0: first sight; then `mismatch` is kept with it, and read
   * back in firstWasMismatch by later notes). `ttlSec` 0: lids never expire.
   */
  note(hi: number, lo: number, atSec: number, nowSec: number, ttlSec: number, mismatch = false): number {
    const t = this.table;
    const u = t.u32;
    if (hi === 0 && lo === 0) hi = 1; // (0, 0) marks an empty slot
    const b = t.bucketOf(hi);
    // A lock that stays taken (its holder preempted): go ahead without it, like history; the
    // worst case is one replay taken for a first sight.
    const held = t.lock(b);
    try {
      const found = t.find(b, hi, lo);
      if (found >= 0) {
        const word = u[found + HITS]!;
        const before = word & ~FIRST_MISMATCH;
        this.firstWasMismatch = (word & FIRST_MISMATCH) !== 0;
        if (before < 0x7fffffff) u[found + HITS] = (word + 1) >>> 0;
        return before;
      }
      this.insert(b, hi, lo, atSec, nowSec, ttlSec, mismatch);
      return 0;
    } finally {
      if (held) t.unlock(b);
    }
  }

  /** Puts a lid not in bucket `b` into it (the bucket locked, or its lock given up on). */
  private insert(b: number, hi: number, lo: number, atSec: number, nowSec: number, ttlSec: number, mismatch: boolean): void {
    const t = this.table;
    const u = t.u32;
    this.nowSec = nowSec;
    this.ttlSec = ttlSec;
    const slot = t.pick(b, this.keep);
    if (u[slot] !== 0 || u[slot + 1] !== 0) {
      const at = u[slot + AT]!;
      if (!(ttlSec > 0 && at + ttlSec < nowSec)) this.evictedLive++;
    }
    t.assign(slot, hi, lo);
    u[slot + AT] = atSec;
    u[slot + HITS] = (mismatch ? FIRST_MISMATCH | 1 : 1) >>> 0;
  }
}
