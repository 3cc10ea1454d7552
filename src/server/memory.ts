// Start step "plan memory": one budget for everything that grows with traffic
// (src/memory/budget.ts, the shares), and the lookup path's shared tables allocated from it
// once per process. The composer of history, both verdict caches and the reporting counts,
// so it sits beside src/server.ts, its one caller, above everything it composes.
import type { Config } from '../config.ts';
import { log } from '../log.ts';
import type { LookupMemory } from '../prebid/messages.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import { describePlan, planMemory, planParts, type MemoryPlan } from '../memory/budget.ts';
import { randomSeed } from '../memory/hash.ts';
import type { CountRow } from '../reporting/tuple.ts';
import { SharedCounts, TUPLE_SLOT_BYTES, allocateSharedCounts } from '../reporting/shared-counts.ts';
import { TupleDictionary, TYPICAL_ENTRY_BYTES } from '../reporting/tuple-dictionary.ts';
import { allocateFleetBotIps } from '../signals/fleet-bot-ips.ts';
import { allocateHistory } from '../signals/history.ts';
import { allocateIpCache } from '../signals/ip-cache.ts';
import { allocateUaCache } from '../signals/ua-cache.ts';
import { allocateSeenLids } from '../prebid/seen-lids.ts';
import { ImpressionDictionary } from '../reporting/impression-dictionary.ts';
import type { TupleArchive } from '../reporting/tuple-archive.ts';

/** The memory plan and what the main thread holds of it. */
export interface ServerMemory {
  plan: MemoryPlan;
  /** The shared tables, posted to every lookup thread. */
  lookup: LookupMemory;
  /** Reporting counts live in the shared table; the dictionary knows each tuple's values. */
  tuples: TupleDictionary;
  sharedCounts: SharedCounts;
  /** Whichever writer flushes (DuckDB rollups, or the fleet's spool) drains the shared counts. */
  drainCounts(): CountRow[];
  /**
   * Impressions (the beacon) count the same way in their own table; their rows name their
   * lookup's tuple, whose values `tuples` knows (impression-dictionary.ts).
   */
  impressionTuples: ImpressionDictionary;
  impressionCounts: SharedCounts;
  /** `final` at the stop: impressions still waiting for their lookup's values are counted without them. */
  drainImpressions(final: boolean): ReturnType<ImpressionDictionary['drain']>;
  /** Earlier runs' tuples on disk (tuple-archive.ts): set by the start once the store is open. */
  tupleArchive: TupleArchive | null;
}

/**
 * Plans the budget and allocates its tables (once per process). `tupleSeed`: the reporting
 * tuples' hash seed (tupleSeedFor the lid secret: the same in every run on this data dir).
 */
export function planServerMemory(config: Config, opts: { tupleSeed?: number } = {}): ServerMemory {
  const plan = planMemory(config.memoryBudget, config.threads);
  const lookup = allocateLookupMemory(plan, opts.tupleSeed === undefined ? {} : { tupleSeed: opts.tupleSeed });
  const tuples = new TupleDictionary();
  const sharedCounts = new SharedCounts(lookup.counts);
  const impressionTuples = new ImpressionDictionary(tuples);
  const impressionCounts = new SharedCounts(lookup.impressions.counts);
  return {
    plan, lookup, tuples, sharedCounts, drainCounts: () => tuples.drain(sharedCounts, Date.now()),
    impressionTuples, impressionCounts, drainImpressions: (final: boolean) => impressionTuples.drain(impressionCounts, Date.now(), final),
    tupleArchive: null,
  };
}

/** Bytes of each part, and how full each shared table is (0..1): /metrics. */
export function memoryFigures(m: ServerMemory, engine: LookupEngine, policyBytes: number): { parts: Record<string, number>; occupancy: Record<string, number> } {
  const src = engine.sources;
  return {
    parts: planParts(m.plan),
    occupancy: { ...src.history.occupancy(), policy: policyBytes / Math.max(1, m.plan.policyBytes), uas: src.uaCache.occupancy(), ip_verdicts: src.ipCache.occupancy(), tuples: m.sharedCounts.occupancy() },
  };
}

/** The startup log's line: the plan in MB and each table's capacity. */
export function logMemoryPlan(m: ServerMemory, engine: LookupEngine): void {
  const src = engine.sources;
  log.info(
    describePlan(m.plan, {
      ...src.history.capacity,
      uas: src.uaCache.capacity,
      ipVerdicts: src.ipCache.capacity,
      tupleSlots: m.sharedCounts.capacity,
      tuplesPerCustomerHour: m.sharedCounts.perCustomerHour,
    }),
    'memory budget: history, caches and pending counts stay within it',
  );
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
export function allocateLookupMemory(plan: MemoryPlan, opts: { seed?: number; epoch?: number; tupleSeed?: number } = {}): LookupMemory {
  const seed = opts.seed ?? randomSeed();
  // The reporting tuples' seed: the lids carry tuple hashes, so a stable one lets the next
  // run name the same tuples (every user reads it from counts.seed: threads, writers, spool).
  const tupleSeed = opts.tupleSeed ?? (seed ^ 0x7091e5);
  const epoch = opts.epoch ?? Date.now();
  return {
    history: allocateHistory(plan.historyBytes, { seed, epoch }),
    uaCache: allocateUaCache(plan.uaCacheBytes, seed ^ 0x7a11ce, epoch),
    ipCache: allocateIpCache(plan.ipCacheBytes, seed ^ 0x1bad1dea),
    fleetBotIps: allocateFleetBotIps(),
    counts: allocateSharedCounts(plan.sharedCountsBytes, tupleSeed, tuplesPerCustomerHour(plan)),
    impressions: {
      seen: allocateSeenLids(plan.impSeenBytes),
      // Impression tuples are lookup tuples × band × status: as many per customer-hour as the table holds.
      counts: allocateSharedCounts(Math.max(plan.impCountsBytes, 65536), seed ^ 0x1a9e55, tuplesPerCustomerHour(plan)),
    },
    threadCountsBytes: plan.threadCountsBytes,
    keyMemoEntries: plan.keyMemoEntries,
    uaMemoBytes: plan.uaMemoBytes,
  };
}
