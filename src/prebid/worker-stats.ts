// A lookup thread's stats: what it answered (by status and band), its latency buckets, its
// beacons' outcomes, its last error, and the engine's cumulative counters turned into deltas,
// all sent to the main thread with the counts each interval (flush()). Counted in plain
// module-level numbers and one stats object per interval: nothing is allocated per lookup.
import { getHeapStatistics } from 'node:v8';
import { performance } from 'node:perf_hooks';
import type { Band } from '../base/enums.ts';
import type { CountRow } from '../counts/tuple.ts';
import type { NewTuple } from '../counts/tuple-dictionary.ts';
import type { BotIpRow } from './bot-ip-tracker.ts';
import type { LookupEngine } from './pipeline.ts';
import { emptyLookupStats, LATENCY_BUCKETS_US, type ImpressionDeltas, type LookupStats, type SeenValues } from './messages.ts';
import { beacon, engine } from './worker-state.ts';
import type { FilterStats } from './filter/filter-stats.ts';

/** What a thread reports each interval (the counts message's body but its type and index). */
export interface Flushed {
  announced: NewTuple[];
  rows: CountRow[];
  impressions: ImpressionDeltas;
  botIps: BotIpRow[];
  seen: SeenValues | null;
  stats: LookupStats;
}

/** Cumulative counters of an engine whose per-interval deltas go into the stats. */
function cumulative(e: LookupEngine | null): number[] {
  if (e === null) return [0, 0, 0, 0, 0, 0];
  const s = e.sources;
  return [e.counts.folded + e.counts.local.folded, s.uaCache.hits, s.uaCache.misses, s.ipCache.hits, s.ipCache.misses, s.history.contended + e.counts.shared.contended];
}

let thread = 0;
let stats = emptyLookupStats(0);
// The most frequent counts of the stats, in plain numbers until the next report (flush):
// a lookup's band and a 200 went into objects keyed by their text and number, a keyed
// load and store V8 could not specialise (megamorphic: about 0.1 µs a lookup in the profile).
let answered200 = 0;
let bandLow = 0, bandMedium = 0, bandHigh = 0;
let lastError = '';
/** The event loop's utilisation at the last report (the next one is the delta since). */
let lastElu = performance.eventLoopUtilization();
let reported = cumulative(null);
let reportedEvicted = 0;
/** A filter thread's own figures (src/prebid/filter/proxy.ts), taken with the stats. */
let filterTake: (() => FilterStats) | null = null;

/**
 * Answers whose connection still had unsent bytes when they were written (a client not
 * reading its answers): held, then written from onWritable as it drains (worker-framing.ts
 * endWith()). `held`: now; `total`: since the thread started.
 */
export const unsent = { held: 0, total: 0 };
let reportedUnsent = 0;

/** A filter's thread reports its filter's figures with its stats. */
export function statsOfFilter(take: () => FilterStats): void {
  filterTake = take;
}

/** The stats of thread `index` start (once, as the thread starts). */
export function startStats(index: number): void {
  thread = index;
  stats = emptyLookupStats(index);
}

export function countBand(band: Band | ''): void {
  if (band === 'low') bandLow++;
  else if (band === 'medium') bandMedium++;
  else if (band === 'high') bandHigh++;
}

/** A request answered `status`, begun at `t0` (performance.now()). */
export function record(status: number, t0: number, now = performance.now()): void {
  const us = (now - t0) * 1000;
  if (status === 200) answered200++;
  else stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
  let b = 0;
  while (b < LATENCY_BUCKETS_US.length && us > LATENCY_BUCKETS_US[b]!) b++;
  stats.latency[b]!++;
  stats.latencySumUs += us;
}

export function noteBeacon(outcome: string): void {
  stats.beacons[outcome] = (stats.beacons[outcome] ?? 0) + 1;
}

/** A bug that cost one answer (not the thread): its message goes with the next report. */
export function noteError(e: unknown): void {
  lastError = (e as Error).message;
}

/** The interval's stats and counts, taken: the next interval starts from zero. */
export function flush(): Flushed {
  const s = stats;
  if (answered200 > 0) s.byStatus[200] = answered200;
  if (bandLow > 0) s.byBand.low = bandLow;
  if (bandMedium > 0) s.byBand.medium = bandMedium;
  if (bandHigh > 0) s.byBand.high = bandHigh;
  answered200 = bandLow = bandMedium = bandHigh = 0;
  // Stats are deltas since the last report; the engine's counters are cumulative.
  const now = cumulative(engine);
  const d = now.map((v, i) => v - reported[i]!);
  [s.overflowed, s.uaHits, s.uaMisses, s.ipHits, s.ipMisses, s.contended] = d as [number, number, number, number, number, number];
  reported = now;
  s.seenEvictedLive = beacon === null ? 0 : beacon.seen.evictedLive - reportedEvicted;
  reportedEvicted = beacon === null ? 0 : beacon.seen.evictedLive;
  s.heldUnsent = unsent.total - reportedUnsent;
  reportedUnsent = unsent.total;
  s.lastError = lastError;
  lastError = '';
  if (filterTake !== null) s.filter = filterTake();
  const heap = getHeapStatistics();
  s.heapUsed = heap.used_heap_size;
  s.heapTotal = heap.total_heap_size;
  const elu = performance.eventLoopUtilization();
  s.busy = performance.eventLoopUtilization(elu, lastElu).utilization;
  lastElu = elu;
  stats = emptyLookupStats(thread);
  const { announced, rows } = engine?.counts.take() ?? { announced: [], rows: [] };
  const impressions = beacon?.take() ?? { announced: [], rows: [] };
  return { announced, rows, impressions, botIps: engine?.botIps?.take() ?? [], seen: engine?.takeSeen() ?? null, stats: s };
}
