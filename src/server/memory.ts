// Start step "plan memory": one budget for everything that grows with traffic
// (src/memory/budget.ts, the shares), and the lookup path's shared tables allocated from it
// once per process. The composer of history, both verdict caches and the reporting counts,
// so it sits beside src/server/serve.ts, its one caller, above everything it composes.
import type { Config } from '../base/config.ts';
import { log } from '../base/log.ts';
import type { LookupMemory } from '../prebid/messages.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import { describePlan, planMemory, planParts, type MemoryPlan } from '../memory/budget.ts';
import { allocateLookupMemory } from '../prebid/lookup-memory.ts';
import type { CountRow } from '../counts/tuple.ts';
import { SharedCounts } from '../counts/shared-counts.ts';
import { TupleDictionary } from '../counts/tuple-dictionary.ts';
import { TransactionTally } from '../ops/category-metrics.ts';
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
  /** What drainCounts drained, by category and class (ivtd_transactions_total). */
  transactions: TransactionTally;
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
  const plan = planMemory(config.memoryBudget, config.threads, config.filters.length);
  const lookup = allocateLookupMemory(plan, { fleet: Boolean(config.clickhouseUrl), ...(opts.tupleSeed === undefined ? {} : { tupleSeed: opts.tupleSeed }) });
  const tuples = new TupleDictionary();
  const sharedCounts = new SharedCounts(lookup.counts);
  const impressionTuples = new ImpressionDictionary(tuples);
  const impressionCounts = new SharedCounts(lookup.impressions.counts);
  const transactions = new TransactionTally();
  const drainCounts = (): CountRow[] => {
    const rows = tuples.drain(sharedCounts, Date.now());
    transactions.add(rows);
    return rows;
  };
  return {
    plan, lookup, tuples, sharedCounts, drainCounts, transactions,
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
