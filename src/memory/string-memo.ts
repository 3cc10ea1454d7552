// A per-thread memo keyed by request strings (the lookup's UAs), or by a hash of one made
// elsewhere (then the value holds the string, to tell two of one hash apart), bounded in
// bytes: the lookup threads' share of the budget for small caches (src/memory/budget.ts,
// uaMemoBytes). Full, it is emptied and refills with what traffic repeats; whatever the
// cardinality of the values sent, it never holds more than its bytes.
//
// A probe is not free: V8 hashes every character of a string key it has not hashed before (a
// new request's string), then looks it up. When traffic repeats too little for the memo to hold
// what comes back (a flood of new UAs: a few per cent of hits), get() rests: it answers
// "not held" without probing for REST_WINDOWS windows, then measures a window again. A key
// get() did not look for may be held already, so reserve() then adds nothing: an entry is
// added only after a get() that looked and missed (never twice, so entry indexes stay
// distinct).

/** A memo's bytes without a memory plan (tests, tools). */
export const DEFAULT_MEMO_BYTES = 256 << 10;

/** What an entry costs besides its characters: the map's slot, the string headers, the value. */
export const MEMO_ENTRY_BYTES = 96;

/** Bytes an entry of `chars` characters (keys and string values together) takes at most (UTF-16). */
export function memoEntryBytes(chars: number): number {
  return MEMO_ENTRY_BYTES + 2 * chars;
}

/** Probes per measured window; fewer hits than WORTH_HITS in one make get() rest. */
export const PROBE_WINDOW = 512;
const WORTH_HITS = PROBE_WINDOW / 4;
/** Windows of gets answered without a probe after a window that did not pay. */
export const REST_WINDOWS = 7;

export class StringMemo<V, K extends string | number = string> {
  private readonly map = new Map<K, V>();
  private bytes = 0;
  private windowProbes = 0;
  private windowHits = 0;
  private resting = 0;
  /** Whether the last get() probed the map (reserve() adds nothing after one that did not). */
  private looked = true;
  /** Gets that probed the map (tests). */
  probes = 0;

  constructor(readonly maxBytes: number) {}

  /** Most entries it can hold (each costs at least MEMO_ENTRY_BYTES). */
  get maxEntries(): number {
    return Math.max(1, Math.floor(this.maxBytes / MEMO_ENTRY_BYTES));
  }

  get size(): number {
    return this.map.size;
  }

  /** The key's value, or undefined when not held — or not looked for (resting: see the header). */
  get(key: K): V | undefined {
    if (this.resting > 0) {
      this.resting--;
      this.looked = false;
      return undefined;
    }
    this.looked = true;
    this.probes++;
    const v = this.map.get(key);
    if (v !== undefined) this.windowHits++;
    if (++this.windowProbes === PROBE_WINDOW) {
      if (this.windowHits < WORTH_HITS) this.resting = REST_WINDOWS * PROBE_WINDOW;
      this.windowProbes = 0;
      this.windowHits = 0;
    }
    return v;
  }

  /**
   * Makes room for an entry of `chars` characters (the key's, and a string value's if it is
   * not the key itself), emptying the memo when it would pass its bytes; returns the entry's
   * index since the last emptying, or -1 when one entry alone would pass them or the last
   * get() did not look (the key may be held: not kept). Then `put` the entry. Call it for
   * the key of the last get(), which missed.
   */
  reserve(chars: number): number {
    const cost = memoEntryBytes(chars);
    if (cost > this.maxBytes || !this.looked) return -1;
    if (this.bytes + cost > this.maxBytes || this.map.size >= this.maxEntries) {
      this.map.clear();
      this.bytes = 0;
    }
    this.bytes += cost;
    return this.map.size;
  }

  /** Adds an entry `reserve` made room for. A string key is kept as given: a string of its own, never a slice of a larger one. */
  put(key: K, value: V): void {
    this.map.set(key, value);
  }
}
