// One memory budget (`--memory-budget`, MB) for everything that grows with traffic:
// lookup history, the UA and IP verdict caches, the reporting counts waiting in the
// lookup threads and on the main thread, and the small per-thread caches. The split is
// fixed shares of the budget (SHARES, written in the startup log and README); each part
// is allocated once at that size, so memory stays flat whatever the traffic.
// The tables in shared memory (history and caches) exist once per process, whatever
// `--threads`; the per-thread parts are divided among the threads.
import { allocateHistory, type HistoryMemory } from '../signals/history.ts';
import { allocateIpCache, type IpCacheMemory } from '../signals/ip-cache.ts';
import { allocateUaCache, type UaCacheMemory } from '../signals/ua-cache.ts';
import { randomSeed } from './hash.ts';

const MB = 1 << 20;

/** Shares of the budget. They add up to 1. */
export const SHARES = {
  /** History of IPs, uids and IFAs (shared by all lookup threads). */
  history: 0.55,
  /** Verdicts per user agent (shared). */
  uaCache: 0.06,
  /** Verdicts per IP address (shared). */
  ipCache: 0.06,
  /** Reporting counts in the lookup threads between their one-second reports (all threads together). */
  threadCounts: 0.1,
  /** Reporting counts on the main thread between flushes (and while the store is away). */
  pendingCounts: 0.2,
  /** Small per-thread caches: verified API keys (all threads together). */
  threadCaches: 0.03,
} as const;

export const MIN_BUDGET_MB = 32;

export interface MemoryPlan {
  budgetMb: number;
  threads: number;
  historyBytes: number;
  uaCacheBytes: number;
  ipCacheBytes: number;
  /** Per lookup thread. */
  threadCountsBytes: number;
  pendingCountsBytes: number;
  /** Verified API keys each lookup thread remembers. */
  keyMemoEntries: number;
}

/** Bytes one remembered API key takes at most (a 256-character key, its entry and map slot). */
const KEY_MEMO_ENTRY_BYTES = 1024;

export function planMemory(budgetMb: number, threads: number): MemoryPlan {
  const bytes = budgetMb * MB;
  return {
    budgetMb,
    threads,
    historyBytes: Math.floor(bytes * SHARES.history),
    uaCacheBytes: Math.floor(bytes * SHARES.uaCache),
    ipCacheBytes: Math.floor(bytes * SHARES.ipCache),
    threadCountsBytes: Math.floor((bytes * SHARES.threadCounts) / threads),
    pendingCountsBytes: Math.floor(bytes * SHARES.pendingCounts),
    keyMemoEntries: Math.max(64, Math.floor((bytes * SHARES.threadCaches) / threads / KEY_MEMO_ENTRY_BYTES)),
  };
}

/** The shared memory every lookup thread opens (posted to each thread; SharedArrayBuffers are shared, not copied). */
export interface LookupMemory {
  readonly history: HistoryMemory;
  readonly uaCache: UaCacheMemory;
  readonly ipCache: IpCacheMemory;
  readonly threadCountsBytes: number;
  readonly keyMemoEntries: number;
}

/** Allocates the shared tables of a plan (the main thread does this once per process). */
export function allocateLookupMemory(plan: MemoryPlan, opts: { seed?: number; epoch?: number } = {}): LookupMemory {
  const seed = opts.seed ?? randomSeed();
  const epoch = opts.epoch ?? Date.now();
  return {
    history: allocateHistory(plan.historyBytes, { seed, epoch }),
    uaCache: allocateUaCache(plan.uaCacheBytes, seed ^ 0x7a11ce, epoch),
    ipCache: allocateIpCache(plan.ipCacheBytes, seed ^ 0x1bad1dea),
    threadCountsBytes: plan.threadCountsBytes,
    keyMemoEntries: plan.keyMemoEntries,
  };
}

/** The plan in MB with table capacities, for the startup log and /metrics. */
export function describePlan(plan: MemoryPlan, capacity: { ips: number; uids: number; ifas: number; uas: number; ipVerdicts: number }): Record<string, unknown> {
  const mb = (b: number) => Math.round((b / MB) * 10) / 10;
  return {
    budgetMb: plan.budgetMb,
    historyMb: mb(plan.historyBytes),
    uaCacheMb: mb(plan.uaCacheBytes),
    ipCacheMb: mb(plan.ipCacheBytes),
    threadCountsMb: mb(plan.threadCountsBytes * plan.threads),
    pendingCountsMb: mb(plan.pendingCountsBytes),
    keyMemoEntriesPerThread: plan.keyMemoEntries,
    capacity,
  };
}
