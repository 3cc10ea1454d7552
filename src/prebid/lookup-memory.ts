// The lookup path's shared tables, allocated from a memory plan: history, the UA and IP
// verdict caches, the fleet's bot IPs, the reporting and impression counts. The main thread
// allocates them once per process (src/server/memory.ts) and posts them to every lookup
// thread; a lookup thread allocates a tiny set of its own for its warm-up
// (src/prebid/warm-up.ts), which is why this sits apart from the main thread's composer
// (no logger, no dictionaries).
import type { SharedCountsMemory } from '../counts/shared-counts.ts';
import type { SharedTableMemory } from '../memory/shared-table.ts';
import type { FleetBotIpMemory } from '../signals/fleet-bot-ips.ts';
import type { CrawlerDnsMemory } from '../signals/crawler-dns.ts';
import type { HistoryMemory } from '../signals/history.ts';
import type { IpCacheMemory } from '../signals/ip-cache.ts';
import type { UaCacheMemory } from '../signals/ua-cache.ts';
import { allocateSeenLids } from './seen-lids.ts';
import { TUPLE_SLOT_BYTES, allocateSharedCounts } from '../counts/shared-counts.ts';
import { TYPICAL_ENTRY_BYTES } from '../counts/tuple-dictionary.ts';
import { allocateFleetBotIps } from '../signals/fleet-bot-ips.ts';
import { allocateCrawlerDns } from '../signals/crawler-dns.ts';
import { FLEET_ACTIVITY_BYTES, allocateActivityDeltas, allocateFleetActivity } from '../signals/fleet-activity.ts';
import { allocateHistory } from '../signals/history.ts';
import { allocateIpCache } from '../signals/ip-cache.ts';
import { allocateUaCache } from '../signals/ua-cache.ts';
import type { MemoryPlan } from '../memory/budget.ts';
import { randomSeed } from '../memory/hash.ts';
import type { ActivityDeltasMemory, FleetActivityMemory } from '../signals/fleet-activity.ts';


/** The shared memory every lookup thread opens (allocated by src/prebid/lookup-memory.ts on the main thread; posted to each thread; SharedArrayBuffers are shared, not copied). */
export interface LookupMemory {
  readonly history: HistoryMemory;
  readonly uaCache: UaCacheMemory;
  readonly ipCache: IpCacheMemory;
  readonly counts: SharedCountsMemory;
  /** The impression beacon's lids seen (src/prebid/seen-lids.ts) and its counts. */
  readonly impressions: { readonly seen: SharedTableMemory; readonly counts: SharedCountsMemory };
  /** The fleet's bot-heavy IPs (fixed size, about 1 MB; empty without a fleet). */
  readonly fleetBotIps: FleetBotIpMemory;
  /** A fleet host only: its lookups' activity per key (to publish) and the fleet's (src/signals/fleet-activity.ts). */
  readonly fleetActivity?: { readonly deltas: ActivityDeltasMemory; readonly view: FleetActivityMemory };
  /** Reverse-DNS verdicts on crawlers of non-authoritative lists, and the requests for them (fixed, about 270 KB). */
  readonly crawlerDns: CrawlerDnsMemory;
  readonly threadCountsBytes: number;
  readonly keyMemoEntries: number;
  /** This thread's UA memos, in bytes (the scanner's and the UA cache's, half each). */
  readonly uaMemoBytes: number;
  /** A filter's cap on the request and answer bytes it holds (src/prebid/filter/held-bytes.ts; 0 without filters). */
  readonly filterHeldBytes: number;
}

/**
 * How many new reporting tuples one customer may add per hour: as many as the main
 * thread's dictionary can hold for two hours in two thirds of the pending share (the rest
 * is for rows waiting to be written again), and as the shared table has slots for.
 */
export function tuplesPerCustomerHour(plan: MemoryPlan): number {
  const byDictionary = Math.floor((plan.pendingCountsBytes * 2) / 3 / TYPICAL_ENTRY_BYTES / 2);
  const bySlots = Math.floor(plan.sharedCountsBytes / TUPLE_SLOT_BYTES / 2);
  return Math.max(1000, Math.min(byDictionary, bySlots));
}

/** Allocates the shared tables of a plan (the main thread does this once per process). */
export function allocateLookupMemory(plan: MemoryPlan, opts: { seed?: number; epoch?: number; tupleSeed?: number; fleet?: boolean } = {}): LookupMemory {
  const seed = opts.seed ?? randomSeed();
  // The reporting tuples' seed: the lids carry tuple hashes, so a stable one lets the next
  // run name the same tuples (every user reads it from counts.seed: threads, writers, spool).
  const tupleSeed = opts.tupleSeed ?? (seed ^ 0x7091e5);
  const epoch = opts.epoch ?? Date.now();
  return {
    // A fleet host's activity tables (fixed, a few MB) come out of history's share.
    history: allocateHistory(opts.fleet ? Math.max(plan.historyBytes / 2, plan.historyBytes - FLEET_ACTIVITY_BYTES) : plan.historyBytes, { seed, epoch }),
    ...(opts.fleet ? { fleetActivity: { deltas: allocateActivityDeltas(), view: allocateFleetActivity() } } : {}),
    uaCache: allocateUaCache(plan.uaCacheBytes, seed ^ 0x7a11ce, epoch),
    ipCache: allocateIpCache(plan.ipCacheBytes, seed ^ 0x1bad1dea),
    fleetBotIps: allocateFleetBotIps(),
    crawlerDns: allocateCrawlerDns(),
    counts: allocateSharedCounts(plan.sharedCountsBytes, tupleSeed, tuplesPerCustomerHour(plan)),
    impressions: {
      seen: allocateSeenLids(plan.impSeenBytes),
      // Impression tuples are lookup tuples × band × status: as many per customer-hour as the table holds.
      counts: allocateSharedCounts(Math.max(plan.impCountsBytes, 65536), seed ^ 0x1a9e55, tuplesPerCustomerHour(plan)),
    },
    threadCountsBytes: plan.threadCountsBytes,
    keyMemoEntries: plan.keyMemoEntries,
    uaMemoBytes: plan.uaMemoBytes,
    filterHeldBytes: plan.filterHeldBytes,
  };
}
