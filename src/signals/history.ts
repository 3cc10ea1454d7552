// Recent traffic, once per process: how fast an IP, uid or IFA is being looked up, how
// many distinct UAs/uids/IPs travel with it, and how much of it was judged invalid. Lives
// in three fixed-size shared tables (src/memory/shared-table.ts) that every lookup thread
// reads and updates, so `--threads N` neither multiplies memory nor splits the picture.
// No strings are kept: keys are seeded 64-bit hashes, distinct values 16-bit fingerprints
// or bits. No I/O, no timers.
//
// What is approximated (docs/scoring.md, "History"):
// - A table holds as many keys as the budget allows; a new key takes an empty slot of its
//   bucket or the one with the least decayed evidence. Keys with many lookups survive a
//   flood of one-off keys; a forgotten key starts from zero.
// - Distinct IPs and UAs per uid, and IPs per IFA: exact sets of up to SMALL_SET_SLOTS
//   16-bit fingerprints with their second, so counts are exact within the window up to 8
//   (two values share a fingerprint with probability 2^-16: undercount by one).
// - Distinct UAs and uids per IP: 128-bit bitmaps in two half-window generations,
//   estimated by linear counting, covering the last 30-60 s (window 60 s). Error: about
//   ±7 % (one standard deviation) from 16 to 300 values; below 16 values two of them share
//   a bit with probability n(n-1)/256 (undercount by one); saturates at IP_SET_MAX.
import { SharedTable, type SharedTableMemory } from '../memory/shared-table.ts';
import { HASH, hashString, hashStringLower, hashWords, popcount32, randomSeed } from '../memory/hash.ts';
import { parseIp, type ParsedIp } from './ip-address.ts';

export interface HistoryOptions {
  /** Time constant of the velocity rate and length of the distinct-value window, ms. */
  windowMs?: number;
  /** Time constant of the evidence counts and bot share, ms. */
  evidenceMs?: number;
}

export const HISTORY_DEFAULTS = {
  windowMs: 60_000,
  evidenceMs: 600_000,
} as const satisfies Required<HistoryOptions>;

/** Exact distinct-value slots per uid/IFA set: the count saturates here. */
export const SMALL_SET_SLOTS = 8;
/** Bits of each per-IP distinct bitmap. */
export const IP_SET_BITS = 128;
/** Largest per-IP distinct count reported (a full bitmap). */
export const IP_SET_MAX = 600;

export interface HistoryFacts {
  /** Lookups per minute (exponentially decayed). */
  ipRate: number;
  uidRate: number;
  ifaRate: number;
  /**
   * Bursts: lookups of this uid / IFA within about the last second and the last ten seconds
   * (exponentially decayed counts, time constants BURST_SHORT_MS and BURST_MID_MS).
   */
  uidBurst1s: number;
  uidBurst10s: number;
  ifaBurst1s: number;
  ifaBurst10s: number;
  /** Distinct values seen with this key within the window (see the header for precision). */
  ipDistinctUas: number;
  ipDistinctUids: number;
  uidDistinctIps: number;
  uidDistinctUas: number;
  ifaDistinctIps: number;
  /** Decayed share of recorded outcomes that were invalid, 0..1 (0 with no outcomes). */
  ipBotShare: number;
  uidBotShare: number;
  ifaBotShare: number;
  /** Evidence: decayed count of lookups observed (time constant evidenceMs). */
  ipSeen: number;
  uidSeen: number;
  ifaSeen: number;
}

/** Facts for a lookup with no history at all (all zero). */
export const NO_HISTORY: Readonly<HistoryFacts> = Object.freeze(emptyFacts());

export function emptyFacts(): HistoryFacts {
  return {
    ipRate: 0, uidRate: 0, ifaRate: 0, uidBurst1s: 0, uidBurst10s: 0, ifaBurst1s: 0, ifaBurst10s: 0,
    ipDistinctUas: 0, ipDistinctUids: 0, uidDistinctIps: 0, uidDistinctUas: 0, ifaDistinctIps: 0,
    ipBotShare: 0, uidBotShare: 0, ifaBotShare: 0, ipSeen: 0, uidSeen: 0, ifaSeen: 0,
  };
}

/**
 * The keys of one lookup as history sees them, filled by History.keysOf (reused object).
 * A zero hi word means "not tracked" (empty uid, all-zero IFA).
 */
export interface HistoryKeys {
  ipHi: number; ipLo: number;
  uidHi: number; uidLo: number;
  ifaHi: number; ifaLo: number;
  /** Fingerprint of the exact UA string (distinct-UA counting). */
  uaFp: number;
}

export function emptyKeys(): HistoryKeys {
  return { ipHi: 0, ipLo: 0, uidHi: 0, uidLo: 0, ifaHi: 0, ifaLo: 0, uaFp: 0 };
}

/** Everything a thread needs to open the process's history (posted to lookup threads). */
export interface HistoryMemory {
  readonly ips: SharedTableMemory;
  readonly uids: SharedTableMemory;
  readonly ifas: SharedTableMemory;
  readonly seed: number;
  /** ms; all threads count seconds and generations from this instant. */
  readonly epoch: number;
  readonly windowMs: number;
  readonly evidenceMs: number;
}

// Slot layouts (32-bit words; 0-1 are the key, 2-3 the f64 time of the last update).
const AT = 2, RATE = 4, SEEN = 5, BAD = 6, OUTCOMES = 7;
const IP_GEN = 8, IP_UA_CUR = 10, IP_UA_PREV = 14, IP_UID_CUR = 18, IP_UID_PREV = 22, IP_WORDS = 26;
// Per uid and IFA also the burst counts (f32): lookups decayed over BURST_SHORT_MS and BURST_MID_MS.
// IFA slots keep outcomes too (BAD, OUTCOMES: invalid impressions, feedback and lookups
// are evidence against a device id as against a uid), so their IP set starts at word 8 as
// the uid's does.
const UID_IPS = 8, UID_UAS = 16, UID_SETS_END = 24, UID_BURST = 24, UID_WORDS = 26;
const IFA_IPS = 8, IFA_SETS_END = 16, IFA_BURST = 16, IFA_WORDS = 18;

/** Time constants of the burst counts, ms: lookups within about the last second and ten seconds. */
export const BURST_SHORT_MS = 1_000;
export const BURST_MID_MS = 10_000;
const BITMAP_WORDS = IP_SET_BITS / 32;

/** History's slots are large (72-104 bytes): their keys stand side by side too (shared-table.ts). */
const KEY_LINES = { keyLines: true } as const;

/** Shares of the history bytes: IPs and uids carry the most signal, IFAs only velocity and hopping. */
const SHARES = { ips: 0.4, uids: 0.4, ifas: 0.2 } as const;

/** Allocates the process's history tables within `bytes` (the main thread does this once). */
export function allocateHistory(bytes: number, opts: HistoryOptions & { seed?: number; epoch?: number } = {}): HistoryMemory {
  return {
    ips: SharedTable.allocate(bytes * SHARES.ips, IP_WORDS, undefined, KEY_LINES),
    uids: SharedTable.allocate(bytes * SHARES.uids, UID_WORDS, undefined, KEY_LINES),
    ifas: SharedTable.allocate(bytes * SHARES.ifas, IFA_WORDS, undefined, KEY_LINES),
    seed: opts.seed ?? randomSeed(),
    epoch: opts.epoch ?? Date.now(),
    windowMs: opts.windowMs ?? HISTORY_DEFAULTS.windowMs,
    evidenceMs: opts.evidenceMs ?? HISTORY_DEFAULTS.evidenceMs,
  };
}

/** Empty ids and the all-zero IFA (limited ad tracking) are shared by many users: not keys. */
function trackable(id: string): boolean {
  if (id.length === 0) return false;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c !== 48 /* 0 */ && c !== 45 /* - */) return true;
  }
  return false;
}

/** A nonzero 16-bit fingerprint from a hash word. */
export function fp16(x: number): number {
  const f = (x ^ (x >>> 16)) & 0xffff;
  return f === 0 ? 1 : f;
}

/** Linear-counting estimate of distinct values from the set bits of an m-bit map. */
export function linearCount(ones: number, m: number): number {
  if (ones === 0) return 0;
  if (ones >= m) return IP_SET_MAX;
  return Math.min(IP_SET_MAX, Math.round(-m * Math.log((m - ones) / m)));
}

export class History {
  private readonly ips: SharedTable;
  private readonly uids: SharedTable;
  private readonly ifas: SharedTable;
  private readonly seed: number;
  private readonly epoch: number;
  private readonly windowMs: number;
  private readonly evidenceMs: number;
  private readonly windowSec: number;
  private readonly halfWindowMs: number;
  private readonly perMinute: number;
  /** Reused for every observe()/peek(): valid until the next call. */
  private readonly facts: HistoryFacts = emptyFacts();
  private readonly scratchKeys: HistoryKeys = emptyKeys();
  /** `now` of the call in progress, read by the eviction rule. */
  private now = 0;
  private readonly keepFn = (base: number): number => this.keepScore(base);

  constructor(readonly memory: HistoryMemory) {
    this.ips = new SharedTable(memory.ips);
    this.uids = new SharedTable(memory.uids);
    this.ifas = new SharedTable(memory.ifas);
    this.seed = memory.seed;
    this.epoch = memory.epoch;
    this.windowMs = memory.windowMs;
    this.evidenceMs = memory.evidenceMs;
    this.windowSec = Math.max(1, Math.round(memory.windowMs / 1000));
    this.halfWindowMs = memory.windowMs / 2;
    this.perMinute = 60_000 / memory.windowMs;
  }

  /** A history of its own (tests, tools): `bytes` of tables, default 4 MB. */
  static create(opts: HistoryOptions & { bytes?: number; seed?: number; epoch?: number } = {}): History {
    return new History(allocateHistory(opts.bytes ?? 4 << 20, opts));
  }

  /** Keys held per table (a full scan: tests and metrics only). */
  get sizes(): { ips: number; uids: number; ifas: number } {
    return { ips: this.ips.count(), uids: this.uids.count(), ifas: this.ifas.count() };
  }

  /** Most keys each table can hold. */
  get capacity(): { ips: number; uids: number; ifas: number } {
    return { ips: this.ips.capacity, uids: this.uids.capacity, ifas: this.ifas.capacity };
  }

  /** Share of each table's slots in use (sampled; metrics). */
  occupancy(): { ips: number; uids: number; ifas: number } {
    return { ips: this.ips.occupancy(), uids: this.uids.occupancy(), ifas: this.ifas.occupancy() };
  }

  /** Shared bytes behind the three tables (fixed at allocation). */
  get bytes(): number {
    return this.ips.bytes + this.uids.bytes + this.ifas.bytes;
  }

  /** Lock waits given up on by this thread (see shared-table.ts). */
  get contended(): number {
    return this.ips.contended + this.uids.contended + this.ifas.contended;
  }

  /**
   * Fills `out` for one lookup: IPv4 (and IPv4-mapped IPv6) by address, IPv6 by its /64
   * (one subscriber's network), uid as given, IFA case-insensitively, UA by fingerprint.
   */
  keysOf(ip: ParsedIp, uid: string, ifa: string, uaHashLo: number, out: HistoryKeys): HistoryKeys {
    if ((ip.v as number) === 0) {
      // No client IP (an OpenRTB bid request without one): the IP is not tracked.
      out.ipHi = 0;
      out.ipLo = 0;
    } else {
      if (ip.v === 4) hashWords(4, ip.n, 0, 0, 0, this.seed);
      else hashWords(6, ip.w[0]!, ip.w[1]!, 0, 0, this.seed);
      out.ipHi = HASH[0]!;
      out.ipLo = HASH[1]!;
    }
    if (trackable(uid)) {
      hashString(uid, this.seed);
      out.uidHi = HASH[0]!;
      out.uidLo = HASH[1]!;
    } else {
      out.uidHi = 0;
      out.uidLo = 0;
    }
    if (trackable(ifa)) {
      hashStringLower(ifa, this.seed);
      out.ifaHi = HASH[0]!;
      out.ifaLo = HASH[1]!;
    } else {
      out.ifaHi = 0;
      out.ifaLo = 0;
    }
    out.uaFp = uaHashLo;
    return out;
  }

  /** keysOf from strings (tests, tools); the UA is hashed here. */
  keysFor(o: { ip: string; uid: string; ifa: string; ua: string }): HistoryKeys {
    const ip = parseIp(o.ip) ?? { v: 4 as const, n: 0 };
    hashString(o.ua, this.seed ^ 0x55aa55aa);
    return this.keysOf(ip, o.uid, o.ifa, HASH[1]!, this.scratchKeys);
  }

  /**
   * Counts one lookup and returns the facts about its IP, uid and IFA including it.
   * The returned object is reused: read it before the next observe() or peek().
   */
  observe(k: HistoryKeys, now: number): HistoryFacts {
    return this.visit(k, now, true);
  }

  /**
   * The facts observe() would return for this lookup now, changing nothing: the admin-side
   * explain reads the same state the lookup threads have and leaves it as it was.
   */
  peek(k: HistoryKeys, now: number): HistoryFacts {
    return this.visit(k, now, false);
  }

  /**
   * Records whether the lookup just observed for these keys was invalid. Feed it
   * request-level evidence (see outcomeForHistory in score.ts), not a verdict that already
   * includes p_hist, or history would confirm itself. Unknown keys are ignored.
   */
  recordOutcome(k: HistoryKeys, invalid: boolean): void {
    if (k.ipHi !== 0) this.outcome(this.ips, k.ipHi, k.ipLo, invalid);
    if (k.uidHi !== 0) this.outcome(this.uids, k.uidHi, k.uidLo, invalid);
    if (k.ifaHi !== 0) this.outcome(this.ifas, k.ifaHi, k.ifaLo, invalid);
  }

  private outcome(t: SharedTable, hi: number, lo: number, invalid: boolean): void {
    const b = t.bucketOf(hi);
    const held = t.lock(b);
    const base = t.find(b, hi, lo);
    if (base >= 0) {
      t.f32[base + OUTCOMES]! += 1;
      if (invalid) t.f32[base + BAD]! += 1;
    }
    if (held) t.unlock(b);
  }

  private visit(k: HistoryKeys, now: number, write: boolean): HistoryFacts {
    this.now = now;
    const f = this.facts;
    const rel = now - this.epoch;
    const sec = Math.floor(rel / 1000) & 0xffff;
    const gen = Math.floor(rel / this.halfWindowMs);
    const hasIp = k.ipHi !== 0;
    const ipFp = fp16(k.ipLo);
    const uidFp = k.uidHi !== 0 ? fp16(k.uidLo) : 0;
    const uaFp = fp16(k.uaFp);

    // IP
    if (!hasIp) {
      f.ipRate = 0; f.ipSeen = 0; f.ipBotShare = 0; f.ipDistinctUas = 0; f.ipDistinctUids = 0;
    } else {
      const t = this.ips;
      const b = t.bucketOf(k.ipHi);
      const held = t.lock(b);
      const base = this.slot(t, b, k.ipHi, k.ipLo, write);
      if (base < 0) {
        f.ipRate = this.perMinute; f.ipSeen = 1; f.ipBotShare = 0;
        f.ipDistinctUas = 1; f.ipDistinctUids = uidFp !== 0 ? 1 : 0;
      } else {
        this.bump(t, base, now, write, 0, 0, 0);
        f.ipRate = this.rate * this.perMinute;
        f.ipSeen = this.seen;
        f.ipBotShare = this.botShare;
        const view = this.rotate(t, base, gen, write);
        f.ipDistinctUas = this.bitmapCount(t, base + IP_UA_CUR, base + IP_UA_PREV, view, uaFp, write);
        f.ipDistinctUids = this.bitmapCount(t, base + IP_UID_CUR, base + IP_UID_PREV, view, uidFp, write);
      }
      if (held) t.unlock(b);
    }

    // uid
    if (k.uidHi !== 0) {
      const t = this.uids;
      const b = t.bucketOf(k.uidHi);
      const held = t.lock(b);
      const base = this.slot(t, b, k.uidHi, k.uidLo, write);
      if (base < 0) {
        f.uidRate = this.perMinute; f.uidSeen = 1; f.uidBotShare = 0; f.uidDistinctIps = 1; f.uidDistinctUas = 1;
        f.uidBurst1s = 1; f.uidBurst10s = 1;
      } else {
        this.bump(t, base, now, write, UID_IPS, UID_SETS_END, UID_BURST);
        f.uidRate = this.rate * this.perMinute;
        f.uidBurst1s = this.burst1s;
        f.uidBurst10s = this.burst10s;
        f.uidSeen = this.seen;
        f.uidBotShare = this.botShare;
        // Without an IP, the IPs seen so far (smallSet counts the one it is given).
        f.uidDistinctIps = hasIp ? this.smallSet(t, base + UID_IPS, ipFp, sec, write) : Math.max(0, this.smallSet(t, base + UID_IPS, ipFp, sec, false) - 1);
        f.uidDistinctUas = this.smallSet(t, base + UID_UAS, uaFp, sec, write);
      }
      if (held) t.unlock(b);
    } else {
      f.uidRate = 0; f.uidSeen = 0; f.uidBotShare = 0; f.uidDistinctIps = 0; f.uidDistinctUas = 0; f.uidBurst1s = 0; f.uidBurst10s = 0;
    }

    // IFA
    if (k.ifaHi !== 0) {
      const t = this.ifas;
      const b = t.bucketOf(k.ifaHi);
      const held = t.lock(b);
      const base = this.slot(t, b, k.ifaHi, k.ifaLo, write);
      if (base < 0) {
        f.ifaRate = this.perMinute; f.ifaDistinctIps = 1; f.ifaBurst1s = 1; f.ifaBurst10s = 1; f.ifaSeen = 1; f.ifaBotShare = 0;
      } else {
        this.bump(t, base, now, write, IFA_IPS, IFA_SETS_END, IFA_BURST);
        f.ifaRate = this.rate * this.perMinute;
        f.ifaSeen = this.seen;
        f.ifaBotShare = this.botShare;
        f.ifaBurst1s = this.burst1s;
        f.ifaBurst10s = this.burst10s;
        f.ifaDistinctIps = hasIp ? this.smallSet(t, base + IFA_IPS, ipFp, sec, write) : Math.max(0, this.smallSet(t, base + IFA_IPS, ipFp, sec, false) - 1);
      }
      if (held) t.unlock(b);
    } else {
      f.ifaRate = 0; f.ifaDistinctIps = 0; f.ifaBurst1s = 0; f.ifaBurst10s = 0; f.ifaSeen = 0; f.ifaBotShare = 0;
    }
    return f;
  }

  /** The key's slot; when writing, a claimed one for a new key. -1 for an unknown key when only reading. */
  private slot(t: SharedTable, b: number, hi: number, lo: number, write: boolean): number {
    const base = t.find(b, hi, lo);
    if (base >= 0 || !write) return base;
    this.claiming = t;
    const fresh = t.claim(b, hi, lo, this.keepFn);
    t.f64[(fresh + AT) >> 1] = this.now;
    return fresh;
  }

  /**
   * Eviction rule: the slot's evidence decayed to now (hyperbolically: cheap, and ordered
   * like the exponential). Keys with many recent lookups outlive one-off keys.
   */
  private keepScore(base: number): number {
    const t = this.claiming!;
    const dt = this.now - t.f64[(base + AT) >> 1]!;
    return t.f32[base + SEEN]! / (1 + (dt > 0 ? dt : 0) / this.evidenceMs);
  }

  // Results of bump(), read right after it (saves an object per call).
  private rate = 0;
  private burst1s = 0;
  private burst10s = 0;
  private seen = 0;
  private botShare = 0;

  /**
   * Decays the slot's counters to `now` and counts this lookup (stored when writing).
   * Velocity is an exponentially decayed count: with time constant tau its steady state is
   * the number of lookups in the last tau ms. A key idle for longer than the window has no
   * live set entries: its small-set words [setsFrom, setsTo) are cleared (their 16-bit
   * seconds would otherwise wrap after 18 hours).
   */
  private bump(t: SharedTable, base: number, now: number, write: boolean, setsFrom: number, setsTo: number, burstAt: number): void {
    const f32 = t.f32;
    const atIdx = (base + AT) >> 1;
    const dt = now - t.f64[atIdx]!;
    // The burst counts (uid and IFA slots, burstAt > 0): the same decayed count over 1 s and 10 s.
    if (burstAt > 0) {
      let b1 = f32[base + burstAt]!;
      let b10 = f32[base + burstAt + 1]!;
      if (dt > 0) {
        b1 *= Math.exp(-dt / BURST_SHORT_MS);
        b10 *= Math.exp(-dt / BURST_MID_MS);
      }
      b1 += 1;
      b10 += 1;
      if (write) {
        f32[base + burstAt] = b1;
        f32[base + burstAt + 1] = b10;
      }
      this.burst1s = b1;
      this.burst10s = b10;
    }
    let rate = f32[base + RATE]!;
    let seen = f32[base + SEEN]!;
    let bad = f32[base + BAD]!;
    let outcomes = f32[base + OUTCOMES]!;
    if (dt > 0) {
      rate *= Math.exp(-dt / this.windowMs);
      const k = Math.exp(-dt / this.evidenceMs);
      seen *= k;
      bad *= k;
      outcomes *= k;
    }
    rate += 1;
    seen += 1;
    if (write) {
      f32[base + RATE] = rate;
      f32[base + SEEN] = seen;
      if (dt > 0) {
        f32[base + BAD] = bad;
        f32[base + OUTCOMES] = outcomes;
        t.f64[atIdx] = now;
        if (dt > this.windowMs && setsTo > setsFrom) t.u32.fill(0, base + setsFrom, base + setsTo);
      }
    }
    this.rate = rate;
    this.seen = seen;
    this.botShare = outcomes > 0 ? bad / outcomes : 0;
  }

  /**
   * Moves the per-IP bitmaps to the current half-window generation when writing. Returns
   * how the stored bitmaps read at `gen`: CURRENT (as stored), SHIFTED (one generation old:
   * cur is really prev and cur is empty) or EXPIRED (both empty).
   */
  private rotate(t: SharedTable, base: number, gen: number, write: boolean): number {
    const i32 = t.i32;
    const g0 = i32[base + IP_GEN]!;
    if (g0 === gen) return CURRENT;
    if (!write) return gen === g0 + 1 ? SHIFTED : EXPIRED;
    const u = t.u32;
    for (const [cur, prev] of ROTATIONS) {
      for (let w = 0; w < BITMAP_WORDS; w++) {
        u[base + prev + w] = gen === g0 + 1 ? u[base + cur + w]! : 0;
        u[base + cur + w] = 0;
      }
    }
    i32[base + IP_GEN] = gen;
    return CURRENT;
  }

  /**
   * Adds fingerprint `fp` (0: nothing to add) to the bitmap at `cur` (stored only when
   * writing) and returns the estimated distinct count of cur ∪ prev as `view` reads them.
   */
  private bitmapCount(t: SharedTable, cur: number, prev: number, view: number, fp: number, write: boolean): number {
    const u = t.u32;
    const bit = fp & (IP_SET_BITS - 1);
    const word = bit >>> 5;
    const mask = 1 << (bit & 31);
    if (fp !== 0 && write) u[cur + word] = (u[cur + word]! | mask) >>> 0;
    let ones = 0;
    for (let w = 0; w < BITMAP_WORDS; w++) {
      let bits = view === CURRENT ? u[cur + w]! | u[prev + w]! : view === SHIFTED ? u[cur + w]! : 0;
      if (fp !== 0 && w === word) bits |= mask;
      ones += popcount32(bits);
    }
    return linearCount(ones, IP_SET_BITS);
  }

  /**
   * Notes fingerprint `fp` at second `sec` in the small set at `first` (stored only when
   * writing) and returns how many distinct fingerprints it holds seen within the window,
   * this one included. A stale or empty slot is reused first; when all are live the oldest
   * is replaced, so the count saturates at SMALL_SET_SLOTS. Entries are fp << 16 | second.
   */
  private smallSet(t: SharedTable, first: number, fp: number, sec: number, write: boolean): number {
    const u = t.u32;
    const w = this.windowSec;
    let live = 0, found = -1, free = -1, oldest = -1, oldestAge = -1;
    for (let i = first; i < first + SMALL_SET_SLOTS; i++) {
      const e = u[i]!;
      if (e === 0) {
        if (free < 0) free = i;
        continue;
      }
      if (e >>> 16 === fp) {
        found = i;
        continue;
      }
      const age = (sec - (e & 0xffff)) & 0xffff;
      if (age < w) live++;
      else if (free < 0) free = i;
      if (age > oldestAge) {
        oldestAge = age;
        oldest = i;
      }
    }
    const target = found >= 0 ? found : free >= 0 ? free : oldest;
    if (found < 0 && free < 0) live--;
    if (write) u[target] = ((fp << 16) | sec) >>> 0;
    return live + 1;
  }

  /** The table whose slot is being claimed (read by keepScore). */
  private claiming: SharedTable | null = null;
}

const CURRENT = 0, SHIFTED = 1, EXPIRED = 2;
const ROTATIONS = [[IP_UA_CUR, IP_UA_PREV], [IP_UID_CUR, IP_UID_PREV]] as const;

/** Evidence (decayed lookups) an IP needs before its bot share can mark it. */
export const IP_BOT_MIN_EVIDENCE = 20;
/** Share of invalid outcomes from which an IP with enough evidence counts as bot-used. */
export const IP_BOT_SHARE_MIN = 0.5;
/** Lookups per minute that no single human client produces... */
export const IP_BOT_SINGLE_CLIENT_RATE = 600;
/** ...when the IP shows at most this many UAs and uids (so it is not a NAT of many users). */
export const IP_BOT_SINGLE_CLIENT_MAX_DISTINCT = 2;
/** Distinct UAs from which an IP rotating UAs over few cookies is a bot farm... */
export const IP_BOT_UA_ROTATION_MIN_UAS = 32;
/** ...when it has at least this many UAs per distinct uid (carrier NAT has about one). */
export const IP_BOT_UA_ROTATION_RATIO = 4;

/**
 * ipReputation.ipBotActivity: "the IP has recently been used frequently by bots".
 * True on a high invalid share with enough evidence, or on velocity / UA rotation that
 * no population of real users behind one address (home or carrier NAT) produces.
 */
export function ipBotActivity(f: HistoryFacts): boolean {
  if (f.ipSeen >= IP_BOT_MIN_EVIDENCE && f.ipBotShare >= IP_BOT_SHARE_MIN) return true;
  if (
    f.ipRate >= IP_BOT_SINGLE_CLIENT_RATE &&
    f.ipDistinctUas <= IP_BOT_SINGLE_CLIENT_MAX_DISTINCT &&
    f.ipDistinctUids <= IP_BOT_SINGLE_CLIENT_MAX_DISTINCT
  ) return true;
  return (
    f.ipDistinctUas >= IP_BOT_UA_ROTATION_MIN_UAS &&
    f.ipDistinctUas >= IP_BOT_UA_ROTATION_RATIO * Math.max(1, f.ipDistinctUids)
  );
}
