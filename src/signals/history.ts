// Per-thread memory of recent traffic: how fast an IP, uid or IFA is being looked up,
// how many distinct UAs/uids/IPs travel with it, and how much of it was judged invalid.
// Bounded LRU maps keep memory flat under hostile cardinality; no I/O, no timers.
import { LRUCache } from 'lru-cache';

export interface HistoryOptions {
  /** Most IPs remembered (least recently seen are forgotten first). */
  maxIps?: number;
  /** Most uids remembered. */
  maxUids?: number;
  /** Most IFAs remembered. */
  maxIfas?: number;
  /** Time constant of the velocity rate and length of the distinct-value window, ms. */
  windowMs?: number;
  /** Time constant of the evidence counts and bot share, ms. */
  evidenceMs?: number;
  /** Most distinct values kept per set (UAs per IP, IPs per uid, ...); counts saturate here. */
  maxDistinct?: number;
  /** Most UA strings given an id for distinct counting. */
  maxUas?: number;
}

export const HISTORY_DEFAULTS = {
  maxIps: 200_000,
  maxUids: 500_000,
  maxIfas: 200_000,
  windowMs: 60_000,
  evidenceMs: 600_000,
  maxDistinct: 64,
  maxUas: 50_000,
} as const satisfies Required<HistoryOptions>;

export interface HistoryFacts {
  /** Lookups per minute (exponentially decayed, see KeyRecord). */
  ipRate: number;
  uidRate: number;
  ifaRate: number;
  /** Distinct values seen with this key within the window, capped at maxDistinct. */
  ipDistinctUas: number;
  ipDistinctUids: number;
  uidDistinctIps: number;
  uidDistinctUas: number;
  ifaDistinctIps: number;
  /** Decayed share of recorded outcomes that were invalid, 0..1 (0 with no outcomes). */
  ipBotShare: number;
  uidBotShare: number;
  /** Evidence: decayed count of lookups observed (time constant evidenceMs). */
  ipSeen: number;
  uidSeen: number;
}

export interface Observation {
  ip: string;
  uid: string;
  ifa: string;
  ua: string;
  /** Publisher. Not a key yet: a publisher's volume alone says nothing about bots. */
  pub: string;
  /** Wall-clock ms of the lookup; supplied by the caller so tests control time. */
  now: number;
}

export interface OutcomeKeys {
  ip: string;
  uid: string;
  ifa: string;
}

/** Facts for a lookup with no history at all (all zero). */
export const NO_HISTORY: Readonly<HistoryFacts> = Object.freeze(emptyFacts());

export function emptyFacts(): HistoryFacts {
  return {
    ipRate: 0, uidRate: 0, ifaRate: 0,
    ipDistinctUas: 0, ipDistinctUids: 0, uidDistinctIps: 0, uidDistinctUas: 0, ifaDistinctIps: 0,
    ipBotShare: 0, uidBotShare: 0, ipSeen: 0, uidSeen: 0,
  };
}

/** Ids are kept below 2^30 so V8 stores them, and the sets holding them, as small integers. */
const ID_MASK = 0x3fffffff;

/**
 * One remembered key. Velocity is an exponentially decayed count rather than fixed
 * buckets: two numbers instead of an array, no bucket rotation, and with time constant
 * tau its steady-state value is exactly the number of lookups in the last tau ms.
 * Distinct sets are packed small-integer arrays [id, second, id, second, ...] created on
 * first use, so the common one-UA-one-uid key stays small.
 */
class KeyRecord {
  /** Identity of this key in other keys' distinct sets (see History.observe). */
  readonly id: number;
  /** ms of the last decay step. */
  at: number;
  /** Lookups, decayed with windowMs. */
  rate = 0;
  /** Lookups, decayed with evidenceMs. */
  seen = 0;
  /** Invalid outcomes and all outcomes, decayed with evidenceMs. */
  bad = 0;
  outcomes = 0;
  /** IP: UA ids; uid: IP ids; IFA: IP ids. */
  a: number[] | null = null;
  /** IP: uid ids; uid: UA ids; IFA: unused. */
  b: number[] | null = null;

  constructor(id: number, now: number) {
    this.id = id;
    this.at = now;
  }

  /** Adds `id` to set a and returns the set's live distinct count. */
  noteA(id: number, sec: number, horizon: number, cap: number): number {
    if (this.a === null) { this.a = [id, sec]; return 1; } // exact-size literal: no spare capacity
    return noteDistinct(this.a, id, sec, horizon, cap);
  }

  noteB(id: number, sec: number, horizon: number, cap: number): number {
    if (this.b === null) { this.b = [id, sec]; return 1; }
    return noteDistinct(this.b, id, sec, horizon, cap);
  }
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

/**
 * Records `id` as seen at second `sec` and returns how many distinct ids the set holds
 * seen after `horizon`. Reuses a stale slot before growing; when full, replaces the
 * oldest entry, so the count saturates at `cap`.
 */
function noteDistinct(set: number[], id: number, sec: number, horizon: number, cap: number): number {
  let live = 0, found = -1, stale = -1, oldest = -1, oldestAt = Infinity;
  for (let i = 0; i < set.length; i += 2) {
    const at = set[i + 1]!;
    if (set[i] === id) { found = i; continue; }
    if (at > horizon) live++;
    else if (stale < 0) stale = i;
    if (at < oldestAt) { oldestAt = at; oldest = i; }
  }
  if (found >= 0) set[found + 1] = sec;
  else if (stale >= 0) { set[stale] = id; set[stale + 1] = sec; }
  else if (set.length < cap * 2) set.push(id, sec);
  else { set[oldest] = id; set[oldest + 1] = sec; live--; }
  return live + 1;
}

function countLive(set: number[] | null, horizon: number): number {
  let live = 0;
  if (set !== null) for (let i = 1; i < set.length; i += 2) if (set[i]! > horizon) live++;
  return live;
}

/**
 * Distinct values are told apart by small integer ids instead of string hashes: IPs,
 * uids and IFAs by their record's id, UAs by an id interned here. Looking a string up in
 * a map reuses V8's own string hash, several times cheaper than hashing a 150-character
 * UA in JavaScript, and ids never collide. A key forgotten and seen again within one
 * window gets a new id and may count twice; that needs more new keys per window than
 * the map holds, i.e. a flood that the other counts already show.
 */
export class History {
  private readonly ips: LRUCache<string, KeyRecord>;
  private readonly uids: LRUCache<string, KeyRecord>;
  private readonly ifas: LRUCache<string, KeyRecord>;
  private readonly uaIds: LRUCache<string, number>;
  private nextId = 0;
  private readonly windowMs: number;
  private readonly evidenceMs: number;
  private readonly windowSec: number;
  private readonly perMinute: number;
  private readonly maxDistinct: number;
  /** Distinct sets store seconds since this instant so they stay small integers. */
  private epoch = NaN;
  /** Reused for every observe(): valid until the next call. */
  private readonly facts: HistoryFacts = emptyFacts();

  constructor(opts: HistoryOptions = {}) {
    const o = { ...HISTORY_DEFAULTS, ...opts };
    this.ips = new LRUCache({ max: o.maxIps });
    this.uids = new LRUCache({ max: o.maxUids });
    this.ifas = new LRUCache({ max: o.maxIfas });
    this.uaIds = new LRUCache({ max: o.maxUas });
    this.windowMs = o.windowMs;
    this.evidenceMs = o.evidenceMs;
    this.windowSec = Math.max(1, Math.round(o.windowMs / 1000));
    this.perMinute = 60_000 / o.windowMs;
    this.maxDistinct = o.maxDistinct;
  }

  get sizes(): { ips: number; uids: number; ifas: number } {
    return { ips: this.ips.size, uids: this.uids.size, ifas: this.ifas.size };
  }

  /**
   * Counts one lookup and returns the facts about its IP, uid and IFA including it.
   * The returned object is reused: read it before the next observe().
   */
  observe(o: Observation): HistoryFacts {
    const now = o.now;
    if (Number.isNaN(this.epoch)) this.epoch = now;
    const sec = Math.floor((now - this.epoch) / 1000);
    const horizon = sec - this.windowSec;
    const cap = this.maxDistinct;
    const f = this.facts;
    const ua = this.uaId(o.ua);

    const ip = this.bump(this.ips, o.ip, now);
    const u = trackable(o.uid) ? this.bump(this.uids, o.uid, now) : null;
    // IFAs are case-insensitive UUIDs; one spelling per device.
    const d = trackable(o.ifa) ? this.bump(this.ifas, o.ifa.toLowerCase(), now) : null;

    f.ipRate = ip.rate * this.perMinute;
    f.ipSeen = ip.seen;
    f.ipBotShare = ip.outcomes > 0 ? ip.bad / ip.outcomes : 0;
    f.ipDistinctUas = ip.noteA(ua, sec, horizon, cap);
    f.ipDistinctUids = u !== null ? ip.noteB(u.id, sec, horizon, cap) : countLive(ip.b, horizon);

    if (u !== null) {
      f.uidRate = u.rate * this.perMinute;
      f.uidSeen = u.seen;
      f.uidBotShare = u.outcomes > 0 ? u.bad / u.outcomes : 0;
      f.uidDistinctIps = u.noteA(ip.id, sec, horizon, cap);
      f.uidDistinctUas = u.noteB(ua, sec, horizon, cap);
    } else {
      f.uidRate = 0; f.uidSeen = 0; f.uidBotShare = 0; f.uidDistinctIps = 0; f.uidDistinctUas = 0;
    }

    if (d !== null) {
      f.ifaRate = d.rate * this.perMinute;
      f.ifaDistinctIps = d.noteA(ip.id, sec, horizon, cap);
    } else {
      f.ifaRate = 0; f.ifaDistinctIps = 0;
    }
    return f;
  }

  /**
   * Records whether the lookup just observed for these keys was invalid, at the time of
   * that observe(). Feed it request-level evidence (see outcomeForHistory in score.ts),
   * not a verdict that already includes p_hist, or history would confirm itself.
   * IFA outcomes are not kept: no fact reads them.
   */
  recordOutcome(o: OutcomeKeys, invalid: boolean): void {
    const ip = this.ips.peek(o.ip);
    if (ip !== undefined) { ip.outcomes += 1; if (invalid) ip.bad += 1; }
    if (trackable(o.uid)) {
      const u = this.uids.peek(o.uid);
      if (u !== undefined) { u.outcomes += 1; if (invalid) u.bad += 1; }
    }
  }

  private newId(): number {
    this.nextId = (this.nextId + 1) & ID_MASK;
    return this.nextId;
  }

  private uaId(ua: string): number {
    let id = this.uaIds.get(ua);
    if (id === undefined) {
      id = this.newId();
      this.uaIds.set(ua, id);
    }
    return id;
  }

  /** Finds or creates the record for `key`, decays it to `now` and counts one lookup. */
  private bump(map: LRUCache<string, KeyRecord>, key: string, now: number): KeyRecord {
    let r = map.get(key);
    if (r === undefined) {
      r = new KeyRecord(this.newId(), now);
      map.set(key, r);
    } else {
      const dt = now - r.at;
      if (dt > 0) {
        r.rate *= Math.exp(-dt / this.windowMs);
        const k = Math.exp(-dt / this.evidenceMs);
        r.seen *= k; r.bad *= k; r.outcomes *= k;
        r.at = now;
      }
    }
    r.rate += 1;
    r.seen += 1;
    return r;
  }
}

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
