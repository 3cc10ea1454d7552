// A fixed-size hash table in shared memory, used by every lookup thread at once (history,
// the UA and IP verdict caches). Its size is set once from the memory budget and never
// changes, whatever the traffic.
//
// Layout: `buckets` buckets of `bucketSlots` slots, each slot `slotWords` 32-bit words;
// words 0-1 of a slot are the key (a seeded 64-bit hash, see hash.ts; 0,0 = empty) and
// the rest belong to the table's owner. A table of large slots (`keyLines`: history's, 72
// and 104 bytes) also keeps each bucket's keys side by side, a bucket's eight in one 64-byte
// line, where find() and claim() look for a key: a lookup then reads that line and the slot
// it finds, not a line for every slot it passes (a history bucket spans 832 bytes; on a busy
// host those lines are out of the caches by the next request). Tables of small slots (24
// bytes) scan their three lines, and keep their capacity. Each bucket has one lock word. A thread locks the
// bucket, finds or claims the slot, reads and updates it, and unlocks: a few hundred
// nanoseconds. A lock that stays taken longer (its holder preempted by the OS, or a thread
// that died inside the section) is not waited for beyond SPIN_LIMIT checks (a few µs):
// lock() then returns false, the lock stays its holder's (never released by a thread that
// did not take it), and the caller does without: caches treat it as a miss and store
// nothing, history goes ahead on its approximate counters unlocked (worst case one lost or
// mixed update), reporting counts fall back to the thread's own table (never lost).

export interface SharedTableMemory {
  readonly slots: SharedArrayBuffer;
  /** With `keyLines`: each slot's key words again, slot by slot, so a bucket's keys stand together; else null. */
  readonly keys: SharedArrayBuffer | null;
  readonly locks: SharedArrayBuffer;
  readonly slotWords: number;
  readonly bucketSlots: number;
}

/** Lock checks before going ahead without the lock (~2-5 µs). */
export const SPIN_LIMIT = 2000;

export class SharedTable {
  readonly u32: Uint32Array;
  readonly i32: Int32Array;
  readonly f32: Float32Array;
  readonly f64: Float64Array;
  /** Slot i's key at words 2i, 2i + 1 (null: keys only in the slots). */
  private readonly keyWords: Uint32Array | null;
  readonly locks: Int32Array;
  readonly buckets: number;
  readonly slotWords: number;
  readonly bucketSlots: number;
  /** Times this thread went ahead without a lock (exported as a metric). */
  contended = 0;
  /** Where claim() starts reading a bucket (see pick). */
  private hand = 0;

  /** Shared memory for a table of at most `bytes` (slots, key lines and locks together). */
  static allocate(bytes: number, slotWords: number, bucketSlots = 8, opts: { keyLines?: boolean } = {}): SharedTableMemory {
    if (slotWords < 2 || slotWords % 2 !== 0) throw new Error('slotWords must be even and at least 2 (key words, 8-byte alignment)');
    const keyLines = opts.keyLines === true;
    const perBucket = bucketSlots * slotWords * 4 + (keyLines ? bucketSlots * 8 : 0) + 4;
    const buckets = Math.max(1, Math.floor(bytes / perBucket));
    return {
      slots: new SharedArrayBuffer(buckets * bucketSlots * slotWords * 4),
      keys: keyLines ? new SharedArrayBuffer(buckets * bucketSlots * 8) : null,
      locks: new SharedArrayBuffer(buckets * 4),
      slotWords,
      bucketSlots,
    };
  }

  constructor(mem: SharedTableMemory) {
    this.u32 = new Uint32Array(mem.slots);
    this.i32 = new Int32Array(mem.slots);
    this.f32 = new Float32Array(mem.slots);
    this.f64 = new Float64Array(mem.slots);
    this.keyWords = mem.keys === null ? null : new Uint32Array(mem.keys);
    this.locks = new Int32Array(mem.locks);
    this.buckets = this.locks.length;
    this.slotWords = mem.slotWords;
    this.bucketSlots = mem.bucketSlots;
  }

  /** Slots in the table (the most keys it can hold). */
  get capacity(): number {
    return this.buckets * this.bucketSlots;
  }

  /** Bytes of shared memory behind the table (fixed at creation). */
  get bytes(): number {
    return this.u32.byteLength + (this.keyWords?.byteLength ?? 0) + this.locks.byteLength;
  }

  /** Bucket of a key, from its high word (multiply-shift: any bucket count, no modulo). */
  bucketOf(hi: number): number {
    return Math.floor((hi / 4294967296) * this.buckets);
  }

  /**
   * Takes bucket b's lock: true when taken (call unlock(b) after), false when it stayed taken
   * past SPIN_LIMIT checks (not taken: never call unlock(b) then).
   */
  lock(b: number): boolean {
    const L = this.locks;
    if (Atomics.compareExchange(L, b, 0, 1) === 0) return true;
    for (let i = 0; i < SPIN_LIMIT; i++) {
      if (Atomics.load(L, b) === 0 && Atomics.compareExchange(L, b, 0, 1) === 0) return true;
    }
    this.contended++;
    return false;
  }

  /** Releases a lock this thread took (lock(b) returned true). */
  unlock(b: number): void {
    Atomics.store(this.locks, b, 0);
  }

  /** First word of the slot holding key (hi, lo) in bucket b, or -1. Call with b locked. */
  find(b: number, hi: number, lo: number): number {
    const k = this.keyWords;
    const n = this.bucketSlots;
    const w = this.slotWords;
    const first = b * n;
    if (k !== null) {
      for (let s = 0, at = first * 2; s < n; s++, at += 2) {
        if (k[at] === hi && k[at + 1] === lo) return (first + s) * w;
      }
      return -1;
    }
    const u = this.u32;
    for (let s = 0, base = first * w; s < n; s++, base += w) {
      if (u[base] === hi && u[base + 1] === lo) return base;
    }
    return -1;
  }

  /**
   * A slot of bucket b for a new key: an empty one, else the one whose `keep(base)` is
   * lowest (the least worth keeping); -1 when every slot's keep() is Infinity (none may go).
   * The slots are read from slot `from` on, wrapping (claim() starts one slot further at each
   * claim, a CLOCK's hand): ties on keep() then fall on different slots claim after claim, so
   * live keys of a bucket full of stale ones evict the stale ones rather than each other (a
   * CLOCK table whose new entries start unreferenced would otherwise give up its first
   * unreferenced slot every time: two new keys taking turns in it, each a miss, for ever).
   * Call with b locked, after find() missed.
   */
  pick(b: number, keep: (base: number) => number, from = 0): number {
    const keys = this.keyWords;
    const w = this.slotWords;
    const n = this.bucketSlots;
    const firstSlot = b * n;
    const first = firstSlot * w;
    let s = (from >>> 0) % n;
    let victim = -1;
    let victimKeep = Infinity;
    const u = this.u32;
    for (let i = 0; i < n; i++) {
      const base = first + s * w;
      const at = (firstSlot + s) * 2;
      if (keys !== null ? keys[at] === 0 && keys[at + 1] === 0 : u[base] === 0 && u[base + 1] === 0) return base;
      const k = keep(base);
      if (k < victimKeep) {
        victimKeep = k;
        victim = base;
      }
      if (++s === n) s = 0;
    }
    return victim;
  }

  /** Gives slot `base` to key (hi, lo), the rest of the slot zeroed; returns base. */
  assign(base: number, hi: number, lo: number): number {
    const u = this.u32;
    u.fill(0, base + 2, base + this.slotWords);
    u[base] = hi;
    u[base + 1] = lo;
    const k = this.keyWords;
    if (k !== null) {
      const at = (base / this.slotWords) * 2;
      k[at] = hi;
      k[at + 1] = lo;
    }
    return base;
  }

  /** pick() then assign(): for tables whose keep() never refuses. */
  claim(b: number, hi: number, lo: number, keep: (base: number) => number): number {
    this.hand = (this.hand + 1) % this.bucketSlots;
    return this.assign(this.pick(b, keep, this.hand), hi, lo);
  }

  /** Share of slots in use, estimated from the first `sampleBuckets` buckets (metrics: cheap at any size). */
  occupancy(sampleBuckets = 4096): number {
    const u = this.u32;
    const slots = Math.min(this.buckets, sampleBuckets) * this.bucketSlots;
    let used = 0;
    for (let s = 0, base = 0; s < slots; s++, base += this.slotWords) if (u[base] !== 0 || u[base + 1] !== 0) used++;
    return slots === 0 ? 0 : used / slots;
  }

  /** Keys currently held (a full scan: tests, never per lookup). */
  count(): number {
    const u = this.u32;
    let n = 0;
    for (let base = 0; base < u.length; base += this.slotWords) if (u[base] !== 0 || u[base + 1] !== 0) n++;
    return n;
  }
}
