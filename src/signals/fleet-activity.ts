// Fleet-wide activity, the lookup threads' side (issue 55; the ClickHouse side is
// src/fleet/activity.ts). A fleet host sees 1/N of a key's traffic: each host reports what
// its lookups did per key (IP, uid, IFA) every interval, and completes its own history's
// facts with what the rest of the fleet saw. Two fixed-size shared tables, both in fleet
// mode only (a single host has neither and scores exactly as before):
//
//   ActivityDeltas  written by every lookup thread (one bucket-locked probe per key of a
//                   lookup, in recordOutcome): lookups, outcomes, invalid outcomes and two
//                   128-bit maps of the values seen with the key in the current interval.
//                   Two halves: the main thread switches halves and drains the old one.
//   FleetActivity   written by the main thread from each pull, read by the lookup threads:
//                   per key, the other hosts' decayed counts and the whole fleet's maps.
//                   Double-buffered like the fleet's bot-IP set (fleet-bot-ips.ts).
//
// The maps use the bits history uses for an IP's distinct UAs and uids (fp16 & 127 of the
// value's history hash, which every host of a fleet computes alike: the history seed and,
// in a fleet, the UA hash seed come from the fleet's lid secret), so ORing them over hosts
// is the union a single host would have seen.
import { SharedTable, type SharedTableMemory } from '../memory/shared-table.ts';
import { popcount32 } from '../memory/hash.ts';
import { IP_SET_BITS, fp16, linearCount, type HistoryFacts, type HistoryKeys } from './history.ts';

/** The kinds of keys, as stored in ClickHouse (column `kind`). */
export const KIND_IP = 0;
export const KIND_UID = 1;
export const KIND_IFA = 2;
export type ActivityKind = typeof KIND_IP | typeof KIND_UID | typeof KIND_IFA;
export const KIND_NAMES = ['ip', 'uid', 'ifa'] as const;

/** Mixed into a key's low word so one table holds the three kinds apart. */
const KIND_SALT = [0, 0x5bd1e995, 0x9e3779b9] as const;

const MAP_WORDS = IP_SET_BITS / 32;

// ---- deltas (lookup threads → main thread)

/** Slots of each half of the delta table: the most keys a host reports per interval. */
export const DELTA_SLOTS = 16_384;
// Words: 0-1 key (lo salted by kind), 2 kind, 3 lookups, 4 invalid, 5 outcomes, 6-9 map A, 10-13 map B.
const D_KIND = 2, D_N = 3, D_BAD = 4, D_OUT = 5, D_A = 6, D_B = 10, D_WORDS = 14;

export interface ActivityDeltasMemory {
  /** [0]: the half the lookup threads write into. */
  readonly control: SharedArrayBuffer;
  readonly halves: readonly [SharedTableMemory, SharedTableMemory];
}

/** One key's activity on this host in one interval (what the main thread drains). */
export interface ActivityRow {
  kind: ActivityKind;
  hi: number;
  lo: number;
  n: number;
  bad: number;
  outcomes: number;
  /** Map A: an IP's UAs; a uid's or an IFA's IPs (4 words, 128 bits). */
  a: Uint32Array;
  /** Map B: an IP's uids; a uid's UAs (zero for an IFA). */
  b: Uint32Array;
}

export function allocateActivityDeltas(slots = DELTA_SLOTS): ActivityDeltasMemory {
  const bytes = Math.ceil(slots / 8) * (8 * D_WORDS * 4 + 4);
  return { control: new SharedArrayBuffer(8), halves: [SharedTable.allocate(bytes, D_WORDS), SharedTable.allocate(bytes, D_WORDS)] };
}

export function activityDeltaBytes(m: ActivityDeltasMemory): number {
  return 8 + m.halves.reduce((s, h) => s + h.slots.byteLength + h.locks.byteLength, 0);
}

/** The bit of a value's history hash word in a 128-bit map (history's own rule, fp16 & 127). */
export function mapBit(word: number): number {
  return fp16(word) & (IP_SET_BITS - 1);
}

export class ActivityDeltas {
  private readonly control: Int32Array;
  private readonly halves: readonly [SharedTable, SharedTable];
  /** The slot being claimed's table (read by keep). */
  private claiming: SharedTable | null = null;
  /** Eviction: the slot with the fewest lookups this interval goes first (a heavy key stays). */
  private readonly keep = (base: number): number => this.claiming!.u32[base + D_N]!;

  constructor(readonly memory: ActivityDeltasMemory) {
    this.control = new Int32Array(memory.control);
    this.halves = [new SharedTable(memory.halves[0]), new SharedTable(memory.halves[1])];
  }

  /** Counts one observed lookup under each of its keys (a lookup thread, after scoring). */
  note(k: HistoryKeys, invalid: boolean): void {
    const t = this.halves[Atomics.load(this.control, 0) & 1]!;
    const ipBit = k.ipHi !== 0 ? mapBit(k.ipLo) : -1;
    const uidBit = k.uidHi !== 0 ? mapBit(k.uidLo) : -1;
    const uaBit = mapBit(k.uaFp);
    if (k.ipHi !== 0) this.add(t, KIND_IP, k.ipHi, k.ipLo, invalid, uaBit, uidBit);
    if (k.uidHi !== 0) this.add(t, KIND_UID, k.uidHi, k.uidLo, invalid, ipBit, uaBit);
    if (k.ifaHi !== 0) this.add(t, KIND_IFA, k.ifaHi, k.ifaLo, invalid, ipBit, -1);
  }

  private add(t: SharedTable, kind: ActivityKind, hi: number, lo: number, invalid: boolean, bitA: number, bitB: number): void {
    const slo = (lo ^ KIND_SALT[kind]) >>> 0;
    const b = t.bucketOf(hi);
    const held = t.lock(b);
    let base = t.find(b, hi, slo);
    if (base < 0) {
      this.claiming = t;
      base = t.claim(b, hi, slo, this.keep);
      t.u32[base + D_KIND] = kind;
    }
    const u = t.u32;
    u[base + D_N]!++;
    u[base + D_OUT]!++;
    if (invalid) u[base + D_BAD]!++;
    if (bitA >= 0) u[base + D_A + (bitA >>> 5)]! |= 1 << (bitA & 31);
    if (bitB >= 0) u[base + D_B + (bitB >>> 5)]! |= 1 << (bitB & 31);
    if (held) t.unlock(b);
  }

  /**
   * Main thread: switches the lookup threads to the other half and returns what the old half
   * holds, emptied bucket by bucket under each bucket's lock (a thread still writing there
   * lands before or after, never half-way: its count goes out now or with the next drain).
   */
  drain(): ActivityRow[] {
    const old = Atomics.load(this.control, 0) & 1;
    Atomics.store(this.control, 0, 1 - old);
    const t = this.halves[old]!;
    const u = t.u32;
    const rows: ActivityRow[] = [];
    const w = t.slotWords;
    for (let b = 0; b < t.buckets; b++) {
      const held = t.lock(b);
      for (let s = 0, base = b * t.bucketSlots * w; s < t.bucketSlots; s++, base += w) {
        if (u[base] === 0 && u[base + 1] === 0) continue;
        const kind = u[base + D_KIND]! as ActivityKind;
        rows.push({
          kind,
          hi: u[base]!,
          lo: (u[base + 1]! ^ KIND_SALT[kind]) >>> 0,
          n: u[base + D_N]!,
          bad: u[base + D_BAD]!,
          outcomes: u[base + D_OUT]!,
          a: u.slice(base + D_A, base + D_A + MAP_WORDS),
          b: u.slice(base + D_B, base + D_B + MAP_WORDS),
        });
        u.fill(0, base, base + w);
      }
      if (held) t.unlock(b);
    }
    return rows;
  }
}

// ---- the fleet's view (main thread → lookup threads)

/** Slots per half of the view: twice the most keys a pull takes (FLEET_ACTIVITY_KEYS). */
export const VIEW_SLOTS = 1 << 15;
/** The most keys one pull puts in the view. */
export const FLEET_ACTIVITY_KEYS = VIEW_SLOTS / 2;
// Words: 0-1 key (lo salted), 2 rate (f32, the fleet's lookups a minute), 3 burst10 (f32),
// 4 seen (f32), 5 invalid outcomes (f32), 6 outcomes (f32), 7 recent (f32, the fleet's
// lookups a second lately), 8-11 map A, 12-15 map B.
const V_RATE = 2, V_BURST = 3, V_SEEN = 4, V_BAD = 5, V_OUT = 6, V_RECENT = 7, V_A = 8, V_B = 12, V_WORDS = 16;

/**
 * The fleet's lookups reach the view an interval or two late (its newest rows are of the
 * last boundary; computing and pulling take time): a lookup carries each key's recent rate
 * forward from the view's time (the hosts' newest second) to its own, at most this far (ms).
 * A key whose traffic stops is over-counted by at most that much of its recent rate.
 */
export const PROJECT_MAX_MS = 5000;

export interface FleetActivityMemory {
  /** [0]: the half in use; [1]: keys in it. */
  readonly control: SharedArrayBuffer;
  /** Float64 per half: the time (ms) its values are as of. */
  readonly asOf: SharedArrayBuffer;
  readonly slots: SharedArrayBuffer;
}

export function allocateFleetActivity(): FleetActivityMemory {
  return { control: new SharedArrayBuffer(8), asOf: new SharedArrayBuffer(16), slots: new SharedArrayBuffer(2 * VIEW_SLOTS * V_WORDS * 4) };
}

/** Bytes of both tables of a fleet host (fixed; taken out of history's share of the budget). */
export const FLEET_ACTIVITY_BYTES = 24 + 2 * VIEW_SLOTS * V_WORDS * 4 + 8 + 2 * (Math.ceil(DELTA_SLOTS / 8) * (8 * D_WORDS * 4 + 4));

/** One key as the fleet saw it, for the view (every host's counts and maps). */
export interface FleetKey {
  kind: ActivityKind;
  hi: number;
  lo: number;
  /** The fleet's lookups, decayed as history's rate (lookups a minute). */
  rate: number;
  /** The fleet's lookups, decayed as history's ten-second burst count. */
  burst10: number;
  /** The fleet's lookups within the exchange's window (evidence). */
  seen: number;
  /** The fleet's lookups a second lately (carried forward by the lookups, PROJECT_MAX_MS at most). */
  recent: number;
  bad: number;
  outcomes: number;
  a: ArrayLike<number>;
  b: ArrayLike<number>;
}

/** What the fleet added to one lookup's facts (the admin explain). */
export interface FleetFacts {
  ip: FleetKeyFacts | null;
  uid: FleetKeyFacts | null;
  ifa: FleetKeyFacts | null;
}

export interface FleetKeyFacts {
  /** The fleet's lookups a minute, as of the view's time (the local rate is the larger of its own and this carried forward). */
  rate: number;
  /** The fleet's lookups within ten seconds (uid, IFA; the same rule). */
  burst10s: number;
  /** The fleet's evidence and invalid outcomes (its share is used when it rests on more). */
  seen: number;
  invalid: number;
  /** The fleet's lookups a second lately, carried forward from the view's time (PROJECT_MAX_MS at most). */
  recentPerSecond: number;
  /** Seconds between the view's time and now. */
  ageSeconds: number;
  outcomes: number;
  /** Distinct values the whole fleet saw (map A: IP's UAs, uid's and IFA's IPs; B: IP's uids, uid's UAs). */
  distinctA: number;
  distinctB: number;
}

function mapCount(m: Uint32Array, at: number, extraBit: number): number {
  let ones = 0;
  for (let w = 0; w < MAP_WORDS; w++) {
    let bits = m[at + w]!;
    if (extraBit >= 0 && w === extraBit >>> 5) bits |= 1 << (extraBit & 31);
    ones += popcount32(bits);
  }
  return linearCount(ones, IP_SET_BITS);
}

export class FleetActivity {
  private readonly control: Int32Array;
  private readonly u32: Uint32Array;
  private readonly f32: Float32Array;
  private readonly asOf: Float64Array;

  /** History's rate is lookups a minute over its window: a lookup adds this much of it (HistoryMemory.windowMs; 1 for a minute). */
  private readonly perMinute: number;

  constructor(readonly memory: FleetActivityMemory, windowMs = 60_000) {
    this.perMinute = 60_000 / windowMs;
    this.control = new Int32Array(memory.control);
    this.asOf = new Float64Array(memory.asOf);
    this.u32 = new Uint32Array(memory.slots);
    this.f32 = new Float32Array(memory.slots);
  }

  /** Keys in the view now. */
  get size(): number {
    return Atomics.load(this.control, 1);
  }

  /** First word of the key's slot in the current half, or -1. */
  private find(kind: ActivityKind, hi: number, lo: number): number {
    const slo = (lo ^ KIND_SALT[kind]) >>> 0;
    const half = Atomics.load(this.control, 0) & 1;
    const u = this.u32;
    for (let i = 0, s = (hi ^ slo) & (VIEW_SLOTS - 1); i < VIEW_SLOTS; i++, s = (s + 1) & (VIEW_SLOTS - 1)) {
      const at = (half * VIEW_SLOTS + s) * V_WORDS;
      const h = u[at]!;
      if (h === 0) return -1;
      if (h === hi && u[at + 1] === slo) return at;
    }
    return -1;
  }

  /**
   * Completes one lookup's local facts with the fleet's (lookup threads, after history's
   * observe; only while the view holds keys). The view holds the whole fleet's counts, this
   * host's included, as of its time: each count is the larger of the local one (exact for
   * this host, up to now) and the fleet's carried forward to now (every host, up to the
   * view's time, then its recent rate); each distinct count the larger of the local one and
   * the fleet's union with this lookup's value; the bot share the fleet's when it rests on
   * more outcomes than the local one. Never a sum: nothing is counted twice. Returns whether
   * any key was in the view.
   */
  complete(k: HistoryKeys, f: HistoryFacts, now: number): boolean {
    if (Atomics.load(this.control, 1) === 0) return false;
    const u = this.u32;
    const x = this.f32;
    const dt = now - this.asOf[Atomics.load(this.control, 0) & 1]!;
    // Seconds the recent rate is carried forward (see PROJECT_MAX_MS).
    const ahead = dt <= 0 ? 0 : dt >= PROJECT_MAX_MS ? PROJECT_MAX_MS / 1000 : dt / 1000;
    const ipBit = k.ipHi !== 0 ? mapBit(k.ipLo) : -1;
    const uidBit = k.uidHi !== 0 ? mapBit(k.uidLo) : -1;
    const uaBit = mapBit(k.uaFp);
    let any = false;
    if (k.ipHi !== 0) {
      const at = this.find(KIND_IP, k.ipHi, k.ipLo);
      if (at >= 0) {
        any = true;
        const extra = x[at + V_RECENT]! * ahead;
        f.ipRate = Math.max(f.ipRate, x[at + V_RATE]! + extra * this.perMinute);
        if (x[at + V_OUT]! > f.ipSeen) f.ipBotShare = x[at + V_BAD]! / x[at + V_OUT]!;
        f.ipSeen = Math.max(f.ipSeen, x[at + V_SEEN]! + extra);
        f.ipDistinctUas = Math.max(f.ipDistinctUas, mapCount(u, at + V_A, uaBit));
        f.ipDistinctUids = Math.max(f.ipDistinctUids, mapCount(u, at + V_B, uidBit));
      }
    }
    if (k.uidHi !== 0) {
      const at = this.find(KIND_UID, k.uidHi, k.uidLo);
      if (at >= 0) {
        any = true;
        const extra = x[at + V_RECENT]! * ahead;
        f.uidRate = Math.max(f.uidRate, x[at + V_RATE]! + extra * this.perMinute);
        f.uidBurst10s = Math.max(f.uidBurst10s, x[at + V_BURST]! + extra);
        if (x[at + V_OUT]! > f.uidSeen) f.uidBotShare = x[at + V_BAD]! / x[at + V_OUT]!;
        f.uidSeen = Math.max(f.uidSeen, x[at + V_SEEN]! + extra);
        f.uidDistinctIps = Math.max(f.uidDistinctIps, mapCount(u, at + V_A, ipBit));
        f.uidDistinctUas = Math.max(f.uidDistinctUas, mapCount(u, at + V_B, uaBit));
      }
    }
    if (k.ifaHi !== 0) {
      const at = this.find(KIND_IFA, k.ifaHi, k.ifaLo);
      if (at >= 0) {
        any = true;
        const extra = x[at + V_RECENT]! * ahead;
        f.ifaRate = Math.max(f.ifaRate, x[at + V_RATE]! + extra * this.perMinute);
        f.ifaBurst10s = Math.max(f.ifaBurst10s, x[at + V_BURST]! + extra);
        if (x[at + V_OUT]! > f.ifaSeen) f.ifaBotShare = x[at + V_BAD]! / x[at + V_OUT]!;
        f.ifaSeen = Math.max(f.ifaSeen, x[at + V_SEEN]! + extra);
        f.ifaDistinctIps = Math.max(f.ifaDistinctIps, mapCount(u, at + V_A, ipBit));
      }
    }
    return any;
  }

  /** What the view holds for a lookup's keys (the admin explain; null per key not in it). */
  describe(k: HistoryKeys, now = Date.now()): FleetFacts {
    const age = Math.round((now - this.asOf[Atomics.load(this.control, 0) & 1]!) / 100) / 10;
    const one = (kind: ActivityKind, hi: number, lo: number): FleetKeyFacts | null => {
      if (hi === 0) return null;
      const at = this.find(kind, hi, lo);
      if (at < 0) return null;
      const x = this.f32;
      const r = (v: number) => Math.round(v * 100) / 100;
      return {
        rate: r(x[at + V_RATE]!),
        burst10s: r(x[at + V_BURST]!),
        seen: r(x[at + V_SEEN]!),
        recentPerSecond: r(x[at + V_RECENT]!),
        ageSeconds: age,
        invalid: r(x[at + V_BAD]!),
        outcomes: r(x[at + V_OUT]!),
        distinctA: mapCount(this.u32, at + V_A, -1),
        distinctB: mapCount(this.u32, at + V_B, -1),
      };
    };
    return { ip: one(KIND_IP, k.ipHi, k.ipLo), uid: one(KIND_UID, k.uidHi, k.uidLo), ifa: one(KIND_IFA, k.ifaHi, k.ifaLo) };
  }

  /** Main thread: the view becomes exactly these keys (at most FLEET_ACTIVITY_KEYS), as of `asOf` (ms), in one switch. */
  replace(keys: readonly FleetKey[], asOf = Date.now()): number {
    const next = 1 - (Atomics.load(this.control, 0) & 1);
    const u = this.u32;
    const x = this.f32;
    u.fill(0, next * VIEW_SLOTS * V_WORDS, (next + 1) * VIEW_SLOTS * V_WORDS);
    let n = 0;
    for (let i = 0; i < keys.length && n < FLEET_ACTIVITY_KEYS; i++) {
      const e = keys[i]!;
      if (e.hi === 0) continue;
      const slo = (e.lo ^ KIND_SALT[e.kind]) >>> 0;
      for (let s = (e.hi ^ slo) & (VIEW_SLOTS - 1); ; s = (s + 1) & (VIEW_SLOTS - 1)) {
        const at = (next * VIEW_SLOTS + s) * V_WORDS;
        if (u[at] === e.hi && u[at + 1] === slo) break; // a duplicate: the first wins
        if (u[at] !== 0) continue;
        u[at] = e.hi;
        u[at + 1] = slo;
        x[at + V_RATE] = e.rate;
        x[at + V_BURST] = e.burst10;
        x[at + V_SEEN] = e.seen;
        x[at + V_BAD] = e.bad;
        x[at + V_OUT] = e.outcomes;
        x[at + V_RECENT] = e.recent;
        for (let w = 0; w < MAP_WORDS; w++) {
          u[at + V_A + w] = e.a[w]! >>> 0;
          u[at + V_B + w] = e.b[w]! >>> 0;
        }
        n++;
        break;
      }
    }
    this.asOf[next] = asOf;
    Atomics.store(this.control, 0, next);
    Atomics.store(this.control, 1, n);
    return n;
  }
}

