// Messages between the main thread and the lookup threads.
import type { LookupMemory } from './lookup-memory.ts';
import type { DataBundle } from './thread-bundle.ts';
import type { CountRow } from '../counts/tuple.ts';
import type { ImpressionRowDelta, ImpressionTuple } from '../counts/impression-counts.ts';
import type { NewTuple } from '../counts/tuple-dictionary.ts';
import type { BotIpRow } from './bot-ip-tracker.ts';
import type { LiveKey } from '../store/api-keys.ts';
import type { PolicyUpdate } from '../policy/service.ts';
import type { FilterSettings } from '../base/filter-settings.ts';
import type { FilterStats } from './filter/filter-stats.ts';


export type { LookupMemory };

export interface LookupWorkerInit {
  index: number;
  host: string;
  port: number;
  keys: LiveKey[];
  /**
   * False on a fleet edge that has no key set yet (none kept from an earlier run, none pulled
   * since the start): every key is unknown to it, so lookups and /health-check answer 503.
   */
  keysKnown?: boolean;
  /** Customers' compiled policies (SharedArrayBuffers: shared, not copied). */
  policies: PolicyUpdate[];
  /** The process's shared tables (history, caches) and this thread's share of the budget. */
  memory: LookupMemory;
  /** A fleet host: keep and report this thread's bot-heavy IPs. */
  trackBotIps?: boolean;
  /** Milliseconds between count flushes to the main thread. */
  countsIntervalMs: number;
  /** Distinct values of each kind a thread samples per flush for the data refresher's crawl (0: none). */
  seenSample?: number;
  /** The UA version ceilings are never computed for a time before this (ms; see setVersionFloor). */
  versionFloorMs?: number;
  /** The lookup ids and the impression beacon (absent: answers carry no lid, the beacon answers 503). */
  beacon?: BeaconSettings;
  /** A filter's thread (src/filter/): it listens on the filter's port instead of the pre-bid port. */
  filter?: FilterSettings;
  /**
   * A filter thread replacing one whose port the main thread holds meanwhile: it says `booted`
   * instead of listening, and listens when told (`listen`), once its data is loaded.
   */
  deferListen?: boolean;
}

/** What a lookup thread needs for lookup ids and impression beacons. */
export interface BeaconSettings {
  /** The fleet's lookup-id secret (src/server/lid-secret.ts). */
  lidSecret: Uint8Array;
  /** A beacon later than this after its lookup is `expired` (--imp-ttl, ms). */
  impTtlMs: number;
  /** Peers whose X-Device-IP / X-Forwarded-For / X-Device-User-Agent are believed (--trusted-proxies: addresses and CIDRs). */
  trustedProxies: string[];
  /**
   * A fleet: report each lid's first sight (for the other hosts' seen-lids tables) and the
   * IP keys of invalid impressions (for the fleet's bot-IP exchange) with the counts.
   */
  fleet?: boolean;
}

/** Impression slots a thread added to the shared impression counts, and counts it kept itself. */
export interface ImpressionDeltas {
  announced: ImpressionTuple[];
  rows: ImpressionRowDelta[];
  /** Fleet: first sights of lids since the last report, flat (tagHi, tagLo, lookup second, 1 if a mismatch), bounded. */
  firstSeen?: number[];
  /** Fleet: lookups' IP history keys with invalid impressions, and their beacons since (bounded). */
  badIps?: BeaconIpRow[];
}

/** An IP (by its history key, hi and lo) as beacons judged it: beacons and invalid ones. */
export interface BeaconIpRow {
  hi: number;
  lo: number;
  beacons: number;
  invalid: number;
}

/** Values seen in traffic since the last flush, bounded (src/prebid/seen-sample.ts). */
export interface SeenValues {
  /** Site domains (`dmn`). */
  sites: string[];
  /** App bundle IDs (`app`). */
  apps: string[];
  /** Advertising-system domains: `sid` and the supply chain's `asi`. */
  systems: string[];
}

/** Per-thread lookup statistics since the last report (for /metrics). */
export interface LookupStats {
  /** The lookup thread these figures come from. */
  thread: number;
  byStatus: Record<string, number>;
  byBand: Record<string, number>;
  /** Latency histogram bucket counts, bounds in LATENCY_BUCKETS_US. */
  latency: number[];
  latencySumUs: number;
  overflowed: number;
  /** Shared-cache hits and misses of this thread (UA and IP verdicts). */
  uaHits: number;
  uaMisses: number;
  ipHits: number;
  ipMisses: number;
  /** Times a shared-table lock was not acquired within its spin limit. */
  contended: number;
  /** Message of the last request that failed with 500 in this interval ('' if none). */
  lastError: string;
  /** This thread's V8 heap at the end of the interval: used and reserved bytes. */
  heapUsed: number;
  heapTotal: number;
  /** Share of the interval this thread's event loop spent working, not waiting (0–1; Node's event loop utilisation): near 1, the thread is the bottleneck. */
  busy: number;
  /** Impression beacons by outcome: an IMP_STATUSES value, `refused` (400/405), `unavailable` (503), `internal` (500). */
  beacons: Record<string, number>;
  /** Seen lids still on time given up for room (a replay of one would pass as a first sight). */
  seenEvictedLive: number;
  /** Answers held because their connection had unsent bytes already (a client not reading). */
  heldUnsent: number;
  /** A filter's thread: the filter's figures. */
  filter?: FilterStats;
}

/** Upper bounds (µs) of the lookup latency histogram buckets; a last bucket is +Inf. */
export const LATENCY_BUCKETS_US = [10, 25, 50, 100, 250, 500, 1000, 2500, 10000];

/** Stats of thread `thread` with nothing counted yet. */
export function emptyLookupStats(thread: number): LookupStats {
  return {
    thread, byStatus: {}, byBand: {}, latency: new Array<number>(LATENCY_BUCKETS_US.length + 1).fill(0), latencySumUs: 0, overflowed: 0,
    uaHits: 0, uaMisses: 0, ipHits: 0, ipMisses: 0, contended: 0, lastError: '', heapUsed: 0, heapTotal: 0, busy: 0,
    beacons: {}, seenEvictedLive: 0, heldUnsent: 0,
  };
}

export type ToWorker =
  | { type: 'data'; id: number; bundle: DataBundle }
  /** The live key set (push `id`), answered by keys-ok. */
  | { type: 'keys'; id: number; keys: LiveKey[]; known: boolean }
  /** Customers whose policy changed: the new compiled buffer, or null when it was removed. Answered by policy-ok. */
  | { type: 'policy'; id: number; updates: PolicyUpdate[] }
  /** A filter's thread: its filter's new settings (same name and port), in force for the requests that come after. Answered by filter-ok. */
  | { type: 'filter'; id: number; settings: FilterSettings }
  /**
   * `retire`: a filter's thread a reload removed, the process going on: once the requests under
   * way are answered, one more `counts` carries what they added (their upstream times, errors).
   */
  | { type: 'stop'; retire?: boolean }
  /**
   * Fault injection (tests of the supervision): the thread fails as an uncaught bug would;
   * `exit` (a filter's thread only: it holds no uWS socket): it ends at once, without a word.
   */
  | { type: 'crash'; exit?: boolean }
  /**
   * To a failing thread: another listener holds the port now (or, for a filter's thread, is
   * ready to take it); close yours and end. `signal` (a filter's): an Int32 at 0 set to 1 and
   * notified, and the monotonic ms (a Float64 at 8), as soon as the port is let go.
   */
  | { type: 'handover'; signal?: SharedArrayBuffer }
  /**
   * To a filter thread started with deferListen, its data loaded: say `waiting`, then wait on
   * `signal` (an Int32 at 0, set to 1 and notified the moment the main thread has let go of the
   * port) and listen at once.
   */
  | { type: 'take-port'; signal: SharedArrayBuffer }
  /** To a filter thread started with deferListen: the main thread has let go of the port; listen now (if it stopped waiting). */
  | { type: 'listen' }
  /** Tests and benchmarks: run a full garbage collection now, then answer gc-done. */
  | { type: 'gc' };

export type FromWorker =
  /** `at`: a filter's thread, the monotonic ms (src/prebid/filter/proxy.ts monotonicMs) it started listening. */
  | { type: 'listening'; index: number; port: number; at?: number }
  /** A filter thread started with deferListen is up, not listening. */
  | { type: 'booted'; index: number }
  /** A filter thread told to take its port waits for the main thread to let go. */
  | { type: 'waiting'; index: number }
  /** A failing filter thread let go of its port at `at` (monotonic ms). */
  | { type: 'released'; index: number; at: number }
  | { type: 'listen-failed'; index: number; message: string }
  /** `warmUp`: on a thread's first data, its warm-up (src/prebid/warm-up.ts) before it took a lookup. */
  | { type: 'data-ok'; index: number; id: number; warmUp?: WarmUp }
  | { type: 'data-failed'; index: number; id: number; message: string }
  /** Policy push `id` is in force on this thread: every lookup it starts from now on applies it. */
  | { type: 'policy-ok'; index: number; id: number }
  /** Key push `id` is in force on this thread: a lookup it starts from now on takes the new key. */
  | { type: 'keys-ok'; index: number; id: number }
  /** Filter settings push `id` is in force on this filter's thread. */
  | { type: 'filter-ok'; index: number; id: number }
  | { type: 'gc-done'; index: number; /** V8 heap in use after the collection (bytes). */ heapUsed: number }
  /** Once a second: tuples this thread added to the shared counts, its own rows (shared table full), figures. */
  | { type: 'counts'; index: number; announced: NewTuple[]; rows: CountRow[]; impressions: ImpressionDeltas; botIps: BotIpRow[]; seen: SeenValues | null; stats: LookupStats }
  | { type: 'stopped'; index: number; announced: NewTuple[]; rows: CountRow[]; impressions: ImpressionDeltas; botIps: BotIpRow[]; seen: SeenValues | null; stats: LookupStats }
  /** The thread hit an error nothing caught, closed its sockets and is ending. */
  | { type: 'fatal'; index: number; message: string };

/** What a thread's warm-up did (src/prebid/warm-up.ts), sent with its first `data-ok`. */
export interface WarmUp {
  ms: number;
  lookups: number;
  /** Lookups answered 200, and their bands (the tests check that every path was taken). */
  answered: number;
  bands: { low: number; medium: number; high: number };
  /** Set when the warm-up threw (a bug): the thread serves regardless, its first lookups slower. */
  error?: string;
}
