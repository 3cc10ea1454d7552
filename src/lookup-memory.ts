// The lookup path's shared tables, allocated once per process from the memory plan
// (src/memory/budget.ts): the composer of history, both verdict caches and the reporting
// counts, so it sits beside server.ts, its one caller, above everything it composes.
import type { LookupMemory } from './prebid/messages.ts';
import type { MemoryPlan } from './memory/budget.ts';
import { randomSeed } from './memory/hash.ts';
import { TUPLE_SLOT_BYTES, allocateSharedCounts } from './reporting/shared-counts.ts';
import { TYPICAL_ENTRY_BYTES } from './reporting/tuple-dictionary.ts';
import { allocateFleetBotIps } from './signals/fleet-bot-ips.ts';
import { allocateHistory } from './signals/history.ts';
import { allocateIpCache } from './signals/ip-cache.ts';
import { allocateUaCache } from './signals/ua-cache.ts';
import { allocateSeenLids } from './prebid/seen-lids.ts';

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
export function allocateLookupMemory(plan: MemoryPlan, opts: { seed?: number; epoch?: number } = {}): LookupMemory {
  const seed = opts.seed ?? randomSeed();
  const epoch = opts.epoch ?? Date.now();
  return {
    history: allocateHistory(plan.historyBytes, { seed, epoch }),
    uaCache: allocateUaCache(plan.uaCacheBytes, seed ^ 0x7a11ce, epoch),
    ipCache: allocateIpCache(plan.ipCacheBytes, seed ^ 0x1bad1dea),
    fleetBotIps: allocateFleetBotIps(),
    counts: allocateSharedCounts(plan.sharedCountsBytes, seed ^ 0x7091e5, tuplesPerCustomerHour(plan)),
    impressions: {
      seen: allocateSeenLids(plan.impSeenBytes),
      // Impression tuples are lookup tuples × band × status: as many per customer-hour as the table holds.
      counts: allocateSharedCounts(Math.max(plan.impCountsBytes, 65536), seed ^ 0x1a9e55, tuplesPerCustomerHour(plan)),
    },
    threadCountsBytes: plan.threadCountsBytes,
    keyMemoEntries: plan.keyMemoEntries,
  };
}
