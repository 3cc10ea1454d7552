// One memory budget (`--memory-budget`, MB) for everything that grows with traffic:
// lookup history, the UA and IP verdict caches, the reporting counts waiting in the
// lookup threads and on the main thread, and the small per-thread caches. The split is
// fixed shares of the budget (SHARES, written in the startup log and docs/memory.md); each part
// is allocated once at that size, so memory stays flat whatever the traffic.
// The tables in shared memory (history and caches) exist once per process, whatever
// `--threads`; the per-thread parts are divided among the threads.
// Pure arithmetic, importing nothing: the tables themselves are allocated from the plan by
// src/prebid/lookup-memory.ts.

const MB = 1 << 20;

/** Shares of the budget left once the heaps' floors are off the top (runtimeMb, nativeMb). They add up to 1. */
export const SHARES = {
  /** History of IPs, uids and IFAs (shared by all lookup threads). */
  history: 0.4,
  /**
   * Impression beacons (shared): the lids seen within --imp-ttl (replays) and the
   * impression counts per tuple, as the reporting counts.
   */
  impressions: 0.03,
  /** Verdicts per user agent (shared). */
  uaCache: 0.04,
  /** Verdicts per IP address (shared). */
  ipCache: 0.04,
  /** Reporting counts of the hour's tuples, counted in place by every lookup thread (shared). */
  sharedCounts: 0.03,
  /** A lookup thread's own counts when the shared table is full (all threads together). */
  threadCounts: 0.02,
  /** Main thread: the values of the tuples in the shared table, and rows waiting to be written again. */
  pendingCounts: 0.13,
  /** Customers' allow and deny lists, compiled once into shared memory (src/policy). */
  policy: 0.03,
  /**
   * Small per-thread caches (all threads together): verified API keys, and the UAs recently
   * seen (their decoding and hashes), half each.
   */
  threadCaches: 0.02,
  /** DuckDB's buffer pool (its memory_limit): rollup writes and reports. It spills to disk past it. */
  store: 0.2,
  /**
   * The ads.txt / app-ads.txt index (shared): its size follows the domains seen in traffic,
   * so it is capped here (records past the cap are not loaded; their sellers answer unknown).
   */
  adsTxt: 0.03,
  /** Given to no table: room for the garbage collector around the parts held in JS heaps. */
  headroom: 0.03,
} as const;

/**
 * The V8 heaps' floor, taken off the top of the budget before the shares divide the rest, so
 * `--memory-budget` is what the process's heaps and tables take together: the main thread's
 * heap holds its modules, the data bundle and the account, reporting and fleet services
 * before any traffic (about RUNTIME_MAIN_MB), each lookup thread's its modules, data views
 * and UA parser (about RUNTIME_THREAD_MB); measured with the binary (bench/memory.ts).
 * A budget below minimumBudgetMb (only tests' engines have one) gives them at most
 * RUNTIME_MAX_SHARE of itself.
 */
export const RUNTIME_MAIN_MB = 64;
export const RUNTIME_THREAD_MB = 24;
const RUNTIME_MAX_SHARE = 0.4;

/**
 * A filter's thread (docs/filter.md) is a lookup thread listening with its filter: the same
 * engine, data views and UA parser, its own per-thread caches and counts (a share of
 * `threadCounts` and `threadCaches` each, divided among lookup and filter threads), and the
 * filter's own modules and per-connection and per-request JavaScript state beside them. Its
 * floors, measured with `ivtd serve` and a filter idle and under bench:filter's load:
 * FILTER_RUNTIME_MB of V8 heap, FILTER_NATIVE_MB of C heap (its sockets' buffers, libuv's and
 * Node's state per connection). Each filter also holds at most FILTER_HELD_MB of request and
 * answer bytes (src/prebid/filter/held-bytes.ts: its upstream's answers are held whole until
 * they end); past it a request is answered no-bid as an upstream error and counted.
 */
export const FILTER_RUNTIME_MB = 32;
export const FILTER_NATIVE_MB = 16;
export const FILTER_HELD_MB = 32;
/** Below the least budget (tests' engines only) the filters' held bytes get at most this share of the budget. */
const FILTER_HELD_MAX_SHARE = 0.1;

/**
 * MB of the budget kept for the V8 heaps' floor (see RUNTIME_MAIN_MB, FILTER_RUNTIME_MB): all of
 * it in any budget a served process can have (minimumBudgetMb), capped only below that (tests'
 * small engines).
 */
export function runtimeMb(budgetMb: number, threads: number, filters = 0): number {
  return floorMb(RUNTIME_MAIN_MB + RUNTIME_THREAD_MB * threads + FILTER_RUNTIME_MB * filters, budgetMb, threads, filters, RUNTIME_MAX_SHARE);
}

/** A heap's floor: whole from the least budget up (minimumBudgetMb), else at most `maxShare` of the budget. */
function floorMb(floor: number, budgetMb: number, threads: number, filters: number, maxShare: number): number {
  return budgetMb >= minimumBudgetMb(threads, filters) ? floor : Math.min(floor, Math.floor(budgetMb * maxShare));
}

/**
 * The C heaps' floor, also off the top: what the process allocates outside V8 and outside the
 * tables under load (glibc's main heap and its per-thread arenas, the buffers of
 * uWebSockets.js, libuv and Node, DuckDB's own beside its buffer pool): measured with the
 * binary under the flood (bench/memory.ts), the anonymous memory past the V8 heaps and the
 * parts was 43-59 MB with two lookup threads. About NATIVE_MAIN_MB for the process and
 * NATIVE_THREAD_MB per lookup thread; a budget below minimumBudgetMb gives it at most
 * NATIVE_MAX_SHARE.
 */
export const NATIVE_MAIN_MB = 24;
export const NATIVE_THREAD_MB = 12;
const NATIVE_MAX_SHARE = 0.2;

/** MB of the budget kept for the C heaps' floor (see NATIVE_MAIN_MB, FILTER_NATIVE_MB): capped as runtimeMb's. */
export function nativeMb(budgetMb: number, threads: number, filters = 0): number {
  return floorMb(NATIVE_MAIN_MB + NATIVE_THREAD_MB * threads + FILTER_NATIVE_MB * filters, budgetMb, threads, filters, NATIVE_MAX_SHARE);
}

/** MB each filter may hold of requests and answers (FILTER_HELD_MB; capped below the least budget as the floors are). */
export function filterHeldMb(budgetMb: number, threads: number, filters: number): number {
  if (filters === 0) return 0;
  return budgetMb >= minimumBudgetMb(threads, filters) ? FILTER_HELD_MB : Math.max(1, Math.min(FILTER_HELD_MB, Math.floor((budgetMb * FILTER_HELD_MAX_SHARE) / filters)));
}

export const MIN_BUDGET_MB = 32;
/** DuckDB below this fails to commit a flush of a busy hour ("failed to pin block"): checked here. */
export const STORE_MIN_MB = 48;
/** Room a served process keeps at least for its tables (history, verdict caches, counts, policies). */
export const TABLES_MIN_MB = 48;

/**
 * The smallest --memory-budget a process with `threads` lookup threads and `filters` filters
 * can keep: the V8 heaps' and the C heaps' floors in full (what the process takes before any
 * traffic), the filters' held bytes, DuckDB's pool and room for the tables; 184 MB + 36 per
 * lookup thread (256 with two) + 80 per filter (FILTER_RUNTIME_MB + FILTER_NATIVE_MB +
 * FILTER_HELD_MB). planMemory takes any budget (tests' small engines), capping the floors
 * below this one, but a process given less outgrows it by what the caps leave out, so the
 * configuration refuses it (src/base/config.ts).
 */
export function minimumBudgetMb(threads: number, filters = 0): number {
  return (
    RUNTIME_MAIN_MB + RUNTIME_THREAD_MB * threads + NATIVE_MAIN_MB + NATIVE_THREAD_MB * threads + STORE_MIN_MB + TABLES_MIN_MB +
    (FILTER_RUNTIME_MB + FILTER_NATIVE_MB + FILTER_HELD_MB) * filters
  );
}

export interface MemoryPlan {
  budgetMb: number;
  threads: number;
  /** Filters (docs/filter.md): a thread each, counted beside the lookup threads. */
  filters: number;
  /** The V8 heaps' floor (runtimeMb: the filters' threads' too), off the top: the shares divide the rest. */
  runtimeBytes: number;
  /** The C heaps' floor (nativeMb), off the top like runtimeBytes. */
  nativeBytes: number;
  /** Each filter's cap on the request and answer bytes it holds (filterHeldMb; 0 without filters), off the top too. */
  filterHeldBytes: number;
  historyBytes: number;
  /** The lids seen by the beacon (replay detection), shared. */
  impSeenBytes: number;
  /** Impression counts per (lookup tuple, band, status), shared. */
  impCountsBytes: number;
  uaCacheBytes: number;
  ipCacheBytes: number;
  sharedCountsBytes: number;
  /** Per lookup thread (and per filter thread: the share is divided among both). */
  threadCountsBytes: number;
  pendingCountsBytes: number;
  /** DuckDB's memory_limit (at least STORE_MIN_MB: less fails large commits). */
  storeBytes: number;
  /** Verified API keys each lookup thread remembers. */
  keyMemoEntries: number;
  /** Bytes of each lookup thread's UA memos (the scanner's decodings and the UA cache's hashes, half each). */
  uaMemoBytes: number;
  /** ads.txt records the index may hold (its share / ADS_TXT_RECORD_BYTES). */
  adsTxtRecords: number;
  /** All customers' compiled policies together (shared by the threads). */
  policyBytes: number;
}

/**
 * Bytes one ads.txt record takes in the compiled index, upper estimate: its (file, seller)
 * pair (hash slots, host, seller, code: about 25 bytes) and a share of the seller keys and
 * their strings, which the files mostly have in common (the same exchanges everywhere).
 */
export const ADS_TXT_RECORD_BYTES = 48;

/** Bytes one remembered API key takes at most (a 256-character key, its entry and map slot). */
const KEY_MEMO_ENTRY_BYTES = 1024;
/** A lookup thread's UA memos take at least this much (a few hundred UAs). */
const UA_MEMO_MIN_BYTES = 64 << 10;

export function planMemory(budgetMb: number, threads: number, filters = 0): MemoryPlan {
  const runtime = runtimeMb(budgetMb, threads, filters);
  const native = nativeMb(budgetMb, threads, filters);
  const held = filterHeldMb(budgetMb, threads, filters);
  // The shares divide what the heaps' floors (and the filters' held bytes) leave.
  const bytes = (budgetMb - runtime - native - held * filters) * MB;
  // Each filter's thread has the per-thread parts of a lookup thread: the shares are divided among both.
  const perThread = threads + filters;
  return {
    budgetMb,
    threads,
    filters,
    runtimeBytes: runtime * MB,
    nativeBytes: native * MB,
    filterHeldBytes: held * MB,
    historyBytes: Math.floor(bytes * SHARES.history),
    impSeenBytes: Math.floor((bytes * SHARES.impressions * 2) / 3),
    impCountsBytes: Math.floor((bytes * SHARES.impressions) / 3),
    uaCacheBytes: Math.floor(bytes * SHARES.uaCache),
    ipCacheBytes: Math.floor(bytes * SHARES.ipCache),
    sharedCountsBytes: Math.floor(bytes * SHARES.sharedCounts),
    threadCountsBytes: Math.floor((bytes * SHARES.threadCounts) / perThread),
    pendingCountsBytes: Math.floor(bytes * SHARES.pendingCounts),
    storeBytes: Math.max(STORE_MIN_MB * MB, Math.floor(bytes * SHARES.store)),
    policyBytes: Math.floor(bytes * SHARES.policy),
    keyMemoEntries: Math.max(64, Math.floor((bytes * SHARES.threadCaches) / 2 / perThread / KEY_MEMO_ENTRY_BYTES)),
    uaMemoBytes: Math.max(UA_MEMO_MIN_BYTES, Math.floor((bytes * SHARES.threadCaches) / 2 / perThread)),
    adsTxtRecords: Math.floor((bytes * SHARES.adsTxt) / ADS_TXT_RECORD_BYTES),
  };
}

/**
 * The parts of the plan in bytes, by name: /metrics' `ivtd_memory_budget_bytes{part}`, and
 * (in MB) the startup log's line. `filter_held` (all filters' caps together) only with filters.
 */
export function planParts(plan: MemoryPlan): Record<string, number> {
  return {
    runtime: plan.runtimeBytes,
    native: plan.nativeBytes,
    ...(plan.filters > 0 ? { filter_held: plan.filterHeldBytes * plan.filters } : {}),
    history: plan.historyBytes,
    impressions: plan.impSeenBytes + plan.impCountsBytes,
    ua_cache: plan.uaCacheBytes,
    ip_cache: plan.ipCacheBytes,
    shared_counts: plan.sharedCountsBytes,
    thread_counts: plan.threadCountsBytes * (plan.threads + plan.filters),
    pending_counts: plan.pendingCountsBytes,
    store: plan.storeBytes,
    policy: plan.policyBytes,
  };
}

/** The plan in MB with table capacities, for the startup log (`historyMb`, `uaCacheMb`, …). */
export function describePlan(
  plan: MemoryPlan,
  capacity: { ips: number; uids: number; ifas: number; uas: number; ipVerdicts: number; tupleSlots: number; tuplesPerCustomerHour: number },
): Record<string, unknown> {
  const mb = (b: number) => Math.round((b / MB) * 10) / 10;
  // leastMb: the least budget these --threads (and filters) allow (the default rises to it).
  const out: Record<string, unknown> = { budgetMb: plan.budgetMb, leastMb: minimumBudgetMb(plan.threads, plan.filters) };
  if (plan.filters > 0) out['filters'] = plan.filters;
  for (const [part, bytes] of Object.entries(planParts(plan))) out[`${part.replace(/_(.)/g, (_, c: string) => c.toUpperCase())}Mb`] = mb(bytes);
  out['keyMemoEntriesPerThread'] = plan.keyMemoEntries;
  out['uaMemoKbPerThread'] = Math.round(plan.uaMemoBytes / 1024);
  out['adsTxtRecords'] = plan.adsTxtRecords;
  out['capacity'] = capacity;
  return out;
}
