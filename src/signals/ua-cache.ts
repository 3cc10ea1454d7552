// The lookup path's user-agent verdicts, shared by every lookup thread: one fixed-size
// table of packed traits (ua-analysis.ts UaTraits) keyed by a hash of the UA with its
// version digits normalised, so `Chrome/142.0.7444.59` and `Chrome/142.0.7444.60` share
// one parse. Only digits after the first dot of a `/<digits>.<digits>…` version token are
// normalised (to 0, keeping the length): majors stay, and no rule reads the rest (a test
// compares every trait of the raw and the normalised string over a UA corpus). The clock-
// dependent verdict (version ceilings) is judged per lookup from the cached majors, and an
// entry older than UA_CACHE_MAX_AGE_HOURS is examined again.
import { HASH, hashFinish, hashSeed1, hashSeed2 } from '../memory/hash.ts';
import { SharedTable, type SharedTableMemory } from '../memory/shared-table.ts';
import { DEFAULT_MEMO_BYTES, StringMemo } from '../memory/string-memo.ts';
import { HOUR_MS } from '../base/time.ts';
import {
  AUTOMATION_REASONS,
  BROWSER_CODES,
  DEVICE_CODES,
  MALFORMED_REASONS,
  OS_CODES,
  UaAnalyzer,
  emptyVerdict,
  judge,
  unparsedVerdict,
  type MalformedReason,
  type UaTraits,
  type UaVerdict,
} from './ua-analysis.ts';

/** Hours a cached verdict is trusted before the UA is examined again. */
export const UA_CACHE_MAX_AGE_HOURS = 24;

// Slot: 0-1 key (normalised-UA hash), 2 flags and codes, 3 majors, 4 OS major and flags, 5 stamp.
const A = 2, B = 3, C = 4, STAMP = 5, SLOT_WORDS = 6;
const NO_MAJOR = 0xffff;
const REF = 0x80000000;

export interface UaCacheMemory {
  readonly table: SharedTableMemory;
  readonly seed: number;
  readonly epoch: number;
}

export function allocateUaCache(bytes: number, seed: number, epoch: number): UaCacheMemory {
  return { table: SharedTable.allocate(bytes, SLOT_WORDS), seed, epoch };
}

// ---- version normalisation ----------------------------------------------------------

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isTerminator(c: number): boolean {
  return c === 0x20 || c === 0x3b || c === 0x29 || c === 0x28 || c === 0x2c; // space ; ) ( ,
}

/**
 * When ua[slash] is the '/' of a version token `<digits>(.<digits>)+` ending the token,
 * returns the index of its first dot and sets TAIL_END to the token's last index; else -1.
 */
let TAIL_END = -1;
function versionTail(ua: string, slash: number): number {
  const len = ua.length;
  let j = slash + 1;
  if (j >= len || !isDigit(ua.charCodeAt(j))) return -1;
  let firstDot = -1;
  let prevDot = false;
  for (; j < len; j++) {
    const d = ua.charCodeAt(j);
    if (isDigit(d)) prevDot = false;
    else if (d === 0x2e && !prevDot) {
      if (firstDot < 0) firstDot = j;
      prevDot = true;
    } else break;
  }
  if (firstDot < 0 || prevDot || (j < len && !isTerminator(ua.charCodeAt(j)))) return -1;
  TAIL_END = j - 1;
  return firstDot;
}

/** The UA with the digits after the first dot of each version token replaced by 0. */
export function normalizeUa(ua: string): string {
  let out = '';
  let from = 0;
  for (let i = ua.indexOf('/'); i >= 0; i = ua.indexOf('/', i + 1)) {
    const dot = versionTail(ua, i);
    if (dot < 0) continue;
    out += ua.slice(from, dot);
    for (let k = dot; k <= TAIL_END; k++) out += isDigit(ua.charCodeAt(k)) ? '0' : '.';
    from = TAIL_END + 1;
    i = TAIL_END;
  }
  return from === 0 ? ua : out + ua.slice(from);
}

/**
 * Hashes the UA as sent (distinct-UA counting, policies' exact UAs) and as normalised (the
 * cache key) in one pass: the first into HASH[0], HASH[1], the second into HASH[2], HASH[3]
 * (src/memory/hash.ts's convention). Equal to hashString(ua) and hashString(normalizeUa(ua)).
 */
export function hashUa(ua: string, seed: number): void {
  let e1 = hashSeed1(seed), e2 = hashSeed2(seed);
  let n1 = e1, n2 = e2;
  let zeroFrom = 0, zeroTo = -1;
  for (let i = 0; i < ua.length; i++) {
    const c = ua.charCodeAt(i);
    if (c === 0x2f && i > zeroTo) {
      const dot = versionTail(ua, i);
      if (dot >= 0) {
        zeroFrom = dot;
        zeroTo = TAIL_END;
      }
    }
    e1 = Math.imul(e1 ^ c, 0x01000193);
    e2 = Math.imul(e2 + c, 0x5bd1e995);
    e2 ^= e2 >>> 15;
    const n = i >= zeroFrom && i <= zeroTo && isDigit(c) ? 0x30 : c;
    n1 = Math.imul(n1 ^ n, 0x01000193);
    n2 = Math.imul(n2 + n, 0x5bd1e995);
    n2 ^= n2 >>> 15;
  }
  hashFinish(e1, e2, ua.length, 0);
  hashFinish(n1, n2, ua.length, 2);
}

// ---- packing --------------------------------------------------------------------------

const osIndex = new Map(OS_CODES.map((c, i) => [c, i]));
const browserIndex = new Map(BROWSER_CODES.map((c, i) => [c, i]));
const deviceIndex = new Map(DEVICE_CODES.map((c, i) => [c, i]));

function packMajor(m: number): number {
  return Number.isNaN(m) ? NO_MAJOR : m;
}
function unpackMajor(m: number): number {
  return m === NO_MAJOR ? NaN : m;
}

function pack(t: UaTraits, u: Uint32Array, base: number): void {
  const pre = t.preReason === '' ? 0 : MALFORMED_REASONS.indexOf(t.preReason) + 1;
  const auto = t.automationReason === '' ? 0 : AUTOMATION_REASONS.indexOf(t.automationReason) + 1;
  u[base + A] =
    (pre |
      (t.unparseable ? 1 << 4 : 0) |
      (t.declaredBot ? 1 << 5 : 0) |
      (t.automation ? 1 << 6 : 0) |
      (auto << 7) |
      (t.appClient ? 1 << 12 : 0) |
      (t.webview ? 1 << 13 : 0) |
      (deviceIndex.get(t.device)! << 14) |
      (osIndex.get(t.os)! << 17) |
      (browserIndex.get(t.browser)! << 23)) >>>
    0;
  u[base + B] = ((packMajor(t.browserMajor) << 16) | packMajor(t.blinkMajor)) >>> 0;
  u[base + C] = ((packMajor(t.osMajor) << 16) | (t.chromeNumbered ? 1 : 0) | (t.neverShipped ? 2 : 0)) >>> 0;
}

function unpack(u: Uint32Array, base: number, out: UaTraits): void {
  const a = u[base + A]!;
  const pre = a & 15;
  const auto = (a >>> 7) & 31;
  out.preReason = pre === 0 ? '' : (MALFORMED_REASONS[pre - 1] as MalformedReason);
  out.unparseable = (a & (1 << 4)) !== 0;
  out.declaredBot = (a & (1 << 5)) !== 0;
  out.automation = (a & (1 << 6)) !== 0;
  out.automationReason = auto === 0 ? '' : AUTOMATION_REASONS[auto - 1]!;
  out.appClient = (a & (1 << 12)) !== 0;
  out.webview = (a & (1 << 13)) !== 0;
  out.device = DEVICE_CODES[(a >>> 14) & 7]!;
  out.os = OS_CODES[(a >>> 17) & 63]!;
  out.browser = BROWSER_CODES[(a >>> 23) & 63]!;
  const b = u[base + B]!;
  out.browserMajor = unpackMajor(b >>> 16);
  out.blinkMajor = unpackMajor(b & 0xffff);
  const c = u[base + C]!;
  out.osMajor = unpackMajor(c >>> 16);
  out.chromeNumbered = (c & 1) !== 0;
  out.neverShipped = (c & 2) !== 0;
}

if (OS_CODES.length > 64 || BROWSER_CODES.length > 64 || MALFORMED_REASONS.length > 15 || AUTOMATION_REASONS.length > 31) {
  throw new Error('ua-cache.ts: a code list outgrew its bits in the packed slot');
}

// ---- the cache ----------------------------------------------------------------------

/** First sights of UAs not yet remembered, by hash (a power of two). */
const UA_HASH_DOOR = 4096;

export class UaCache {
  private readonly table: SharedTable;
  private readonly seed: number;
  private readonly epoch: number;
  /** Exact-UA hash (low word) of the last verdict(): the history's distinct-UA fingerprint. */
  exactLo = 0;
  /** The other half of that hash (a customer's exact-UA policy entries are keyed by both). */
  exactHi = 0;
  /** Hits and misses of this thread (metrics). */
  hits = 0;
  misses = 0;
  private nowHour = 0;
  private readonly keepFn = (base: number): number => this.keepScore(base);
  /**
   * The hashes of recent UAs by the string itself (slot -> HASH's four words): a lookup
   * thread's scanner hands the same string object for a UA it read before, whose hash V8
   * keeps, so a repeated UA costs a map probe instead of a pass over its characters.
   * Bounded by its share of the budget. The strings are kept as given: callers hand strings
   * of their own, never slices of a larger one (the scanner's, a header's, a parsed body's
   * values), so the characters counted are the memory kept.
   */
  private readonly hashMemo: StringMemo<number>;
  private readonly hashDoor = new Uint32Array(UA_HASH_DOOR);
  /**
   * Whether the last verdict()'s UA is remembered (hashMemo): the scanner then remembers its
   * decoding too. False also for a UA held while the memo rests (it did not look: StringMemo).
   */
  remembered = false;
  private readonly hashWords: Uint32Array;
  /** A UA whose hashUa words (under this cache's seed) were made elsewhere (presetHashes), and the words. */
  private presetUa: string | null = null;
  private readonly presetWords = new Uint32Array(4);

  constructor(
    readonly memory: UaCacheMemory,
    private readonly analyzer: UaAnalyzer,
    hashMemoBytes = DEFAULT_MEMO_BYTES,
  ) {
    this.hashMemo = new StringMemo(hashMemoBytes);
    this.hashWords = new Uint32Array(4 * this.hashMemo.maxEntries);
    this.table = new SharedTable(memory.table);
    this.seed = memory.seed;
    this.epoch = memory.epoch;
  }

  /** A cache of its own (tests, tools). */
  static create(bytes = 1 << 20, analyzer = new UaAnalyzer()): UaCache {
    return new UaCache(allocateUaCache(bytes, 0x5eed, Date.now()), analyzer);
  }

  get capacity(): number {
    return this.table.capacity;
  }

  get bytes(): number {
    return this.table.bytes;
  }

  /** Entries held (a full scan: tests and metrics only). */
  count(): number {
    return this.table.count();
  }

  /** Share of slots in use (sampled; metrics). */
  occupancy(): number {
    return this.table.occupancy();
  }

  /**
   * The verdict on `ua` at `now` into `out` (the hot path). A hit costs one hash pass over
   * the string and one bucket probe; a miss examines the normalised UA once for the whole
   * process.
   */
  verdict(ua: string, now: number, out: UaVerdict): UaVerdict {
    this.hash(ua);
    this.exactHi = HASH[0]!;
    this.exactLo = HASH[1]!;
    if (unparsedVerdict(ua, out) !== null) return out;
    const hi = HASH[2]!, lo = HASH[3]!;
    this.nowHour = Math.floor((now - this.epoch) / HOUR_MS) & 0xffffff;
    const t = this.table;
    const u = t.u32;
    const b = t.bucketOf(hi);
    // A bucket whose lock stays taken (its holder preempted) counts as a miss and stores nothing.
    if (t.lock(b)) {
      const base = t.find(b, hi, lo);
      if (base >= 0 && ((this.nowHour - (u[base + STAMP]! & 0xffffff)) & 0xffffff) < UA_CACHE_MAX_AGE_HOURS) {
        unpack(u, base, out);
        const s = u[base + STAMP]!;
        if ((s & REF) === 0) u[base + STAMP] = (s | REF) >>> 0;
        t.unlock(b);
        this.hits++;
        return judge(out, this.analyzer.ceilingsAt(now));
      }
      t.unlock(b);
    }
    // Examined outside the lock (tens of µs): another thread may examine the same UA at the
    // same moment; both store the same traits.
    this.misses++;
    this.analyzer.examine(normalizeUa(ua), out);
    if (t.lock(b)) {
      let base = t.find(b, hi, lo);
      if (base < 0) base = t.claim(b, hi, lo, this.keepFn);
      pack(out, u, base);
      u[base + STAMP] = this.nowHour;
      t.unlock(b);
    }
    return judge(out, this.analyzer.ceilingsAt(now));
  }

  /**
   * The verdict a miss computes, without reading or storing anything in the shared table
   * (the explain tool: a peek changes no shared state). Sets exactHi/exactLo like verdict().
   */
  uncachedVerdict(ua: string, now: number, out: UaVerdict): UaVerdict {
    hashUa(ua, this.seed);
    this.exactHi = HASH[0]!;
    this.exactLo = HASH[1]!;
    if (unparsedVerdict(ua, out) !== null) return out;
    this.analyzer.examine(normalizeUa(ua), out);
    return judge(out, this.analyzer.ceilingsAt(now));
  }

  /**
   * Hands over hashUa(ua, seed) made elsewhere (`words`, HASH's four; the lookup's query pass
   * makes them from the UA's bytes as it decodes them): the next verdict() of a UA equal to
   * `ua` takes them instead of a pass over its characters. Good for that one call.
   */
  presetHashes(ua: string, words: Uint32Array): void {
    this.presetUa = ua;
    this.presetWords.set(words);
  }

  /** hashUa(ua, seed) into HASH, remembered (hashMemo), or handed over (presetHashes). */
  private hash(ua: string): void {
    const preset = this.presetUa;
    this.presetUa = null;
    const w = this.hashWords;
    const at = this.hashMemo.get(ua);
    if (at !== undefined) {
      this.remembered = true;
      HASH[0] = w[at]!;
      HASH[1] = w[at + 1]!;
      HASH[2] = w[at + 2]!;
      HASH[3] = w[at + 3]!;
      return;
    }
    if (preset === ua) HASH.set(this.presetWords);
    else hashUa(ua, this.seed);
    // Remembered from its second sight on (a direct-mapped table of first sights), so a
    // stream of one-off UAs does not churn the map.
    const door = HASH[1]! & (UA_HASH_DOOR - 1);
    if (this.hashDoor[door] !== HASH[0]) {
      this.hashDoor[door] = HASH[0]!;
      this.remembered = false;
      return;
    }
    const index = this.hashMemo.reserve(ua.length);
    this.remembered = index >= 0;
    if (index < 0) return;
    const slot = index * 4;
    w[slot] = HASH[0]!;
    w[slot + 1] = HASH[1]!;
    w[slot + 2] = HASH[2]!;
    w[slot + 3] = HASH[3]!;
    this.hashMemo.put(ua, slot);
  }

  /** CLOCK-style second chance: a slot read since the last claim in its bucket is kept once more. */
  private keepScore(base: number): number {
    const u = this.table.u32;
    const s = u[base + STAMP]!;
    if (((this.nowHour - (s & 0xffffff)) & 0xffffff) >= UA_CACHE_MAX_AGE_HOURS) return 0;
    if ((s & REF) === 0) return 1;
    u[base + STAMP] = (s & ~REF) >>> 0;
    return 2;
  }
}

/** A UaVerdict for a thread to reuse. */
export { emptyVerdict };
