// The memory budget's split (src/memory/budget.ts): the V8 heaps' and the C heaps' floors
// off the top, the shares dividing the rest, and the parts adding up to the budget.
import t from 'tap';
import { MIN_BUDGET_MB, minimumBudgetMb, NATIVE_MAIN_MB, NATIVE_THREAD_MB, RUNTIME_MAIN_MB, RUNTIME_THREAD_MB, SHARES, STORE_MIN_MB, nativeMb, planMemory, planParts, runtimeMb } from '../../src/memory/budget.ts';
import { describePlan, FILTER_HELD_MB, FILTER_NATIVE_MB, FILTER_RUNTIME_MB } from '../../src/memory/budget.ts';

const MB = 1 << 20;

t.test('the shares add up to one', async (t) => {
  t.equal(Math.round(Object.values(SHARES).reduce((a, b) => a + b, 0) * 1e9) / 1e9, 1);
});

t.test('the heaps floor comes off the top, and the parts fit the budget', async (t) => {
  for (const budget of [MIN_BUDGET_MB, 64, 128, 256, 328, 472, 512, 4096]) {
    for (const threads of [1, 2, 4, 8]) {
      const plan = planMemory(budget, threads);
      const parts = planParts(plan);
      const runtime = runtimeMb(budget, threads);
      t.equal(parts.runtime, runtime * MB, `${budget} MB, ${threads} threads: the runtime part`);
      // A budget a served process can have: the floors in full; below it (tests' engines): capped.
      const full = budget >= minimumBudgetMb(threads);
      if (!full) t.ok(runtime <= budget * 0.4, 'below the least budget: at most 40 % of it');
      t.equal(runtime, full ? RUNTIME_MAIN_MB + RUNTIME_THREAD_MB * threads : Math.min(RUNTIME_MAIN_MB + RUNTIME_THREAD_MB * threads, Math.floor(budget * 0.4)));
      const native = nativeMb(budget, threads);
      t.equal(parts.native, native * MB, 'the native part');
      t.equal(native, full ? NATIVE_MAIN_MB + NATIVE_THREAD_MB * threads : Math.min(NATIVE_MAIN_MB + NATIVE_THREAD_MB * threads, Math.floor(budget * 0.2)), 'below the least budget: at most 20 % of it');
      // The history share of what is left (not of the whole budget).
      t.equal(plan.historyBytes, Math.floor((budget - runtime - native) * MB * SHARES.history));
      const sum = Object.values(parts).reduce((a, b) => a + b, 0);
      // DuckDB's pool has a floor of its own: only a small budget goes over by it.
      const storeOver = Math.max(0, STORE_MIN_MB * MB - Math.floor((budget - runtime - native) * MB * SHARES.store));
      t.ok(sum <= budget * MB + storeOver, `${budget} MB, ${threads} threads: parts ${(sum / MB).toFixed(1)} MB within the budget (+${(storeOver / MB).toFixed(1)} MB store floor)`);
    }
  }
  // The per-thread caches' share: the key memo and the UA memos half each.
  for (const threads of [1, 2, 4]) {
    const p = planMemory(256, threads);
    const share = ((256 - runtimeMb(256, threads) - nativeMb(256, threads)) * MB * SHARES.threadCaches) / threads;
    t.ok(p.uaMemoBytes <= share / 2 + 1 && p.uaMemoBytes > share / 2 - 1, `${threads} threads: UA memos ${p.uaMemoBytes} bytes, half the share`);
    t.ok(p.keyMemoEntries * 1024 <= share / 2, 'the key memo the other half');
  }
  // The default: 256 MB with 2 lookup threads, the least budget two threads allow.
  const d = planMemory(256, 2);
  t.equal(d.runtimeBytes, 112 * MB, '64 + 2 x 24 MB, in full (it was capped at 40 %, 102 MB, which the heaps outgrew)');
  t.equal(d.nativeBytes, 48 * MB, '24 + 2 x 12 MB');
  t.equal(d.historyBytes, Math.floor(96 * MB * SHARES.history));
  // At the least budget of any --threads, what the floors leave is what minimumBudgetMb keeps for DuckDB and the tables.
  for (const threads of [1, 2, 4, 8, 16, 64]) {
    const least = minimumBudgetMb(threads);
    t.equal(least - runtimeMb(least, threads) - nativeMb(least, threads), STORE_MIN_MB + 48, `${threads} threads, ${least} MB: the floors in full, 96 MB left`);
  }
  t.equal(planMemory(1024, 2).runtimeBytes, 112 * MB, 'a larger budget: the whole floor');
  t.equal(planMemory(128, 2).nativeBytes, 25 * MB, 'a small budget: the 20 % cap');
});

t.test('filters: a thread each, counted in the floors, their held bytes and the per-thread shares', async (t) => {
  const perFilter = FILTER_RUNTIME_MB + FILTER_NATIVE_MB + FILTER_HELD_MB;
  for (const threads of [1, 2, 4]) {
    t.same(planMemory(256, threads, 0), planMemory(256, threads), `${threads} threads, no filters: the plan as before`);
    t.equal(minimumBudgetMb(threads, 0), minimumBudgetMb(threads), 'no filters: the least as before');
    for (const filters of [0, 1, 3]) {
      const least = minimumBudgetMb(threads, filters);
      t.equal(least, 184 + 36 * threads + perFilter * filters, `${threads} threads, ${filters} filters: the least budget ${least} MB`);
      for (const budget of [least, least + 100, 4096]) {
        const p = planMemory(budget, threads, filters);
        const runtime = RUNTIME_MAIN_MB + RUNTIME_THREAD_MB * threads + FILTER_RUNTIME_MB * filters;
        const native = NATIVE_MAIN_MB + NATIVE_THREAD_MB * threads + FILTER_NATIVE_MB * filters;
        t.equal(p.runtimeBytes, runtime * MB, `${budget} MB: each filter's thread's V8 heap in the runtime floor`);
        t.equal(p.nativeBytes, native * MB, "and its C heap in the native floor");
        t.equal(p.filterHeldBytes, filters === 0 ? 0 : FILTER_HELD_MB * MB, "each filter's held-bytes cap");
        const rest = (budget - runtime - native - FILTER_HELD_MB * filters) * MB;
        t.equal(p.historyBytes, Math.floor(rest * SHARES.history), 'the shares divide what the floors and the held bytes leave');
        t.equal(p.threadCountsBytes, Math.floor((rest * SHARES.threadCounts) / (threads + filters)), 'per-thread counts: divided among lookup and filter threads');
        t.equal(p.uaMemoBytes, Math.max(64 << 10, Math.floor((rest * SHARES.threadCaches) / 2 / (threads + filters))), 'per-thread memos too');
        const parts = planParts(p);
        t.equal(parts.filter_held, filters === 0 ? undefined : FILTER_HELD_MB * MB * filters, 'the filter_held part: only with filters');
        t.equal(parts.thread_counts, p.threadCountsBytes * (threads + filters));
        const sum = Object.values(parts).reduce((a, b) => a + b, 0);
        // (DuckDB's pool has its floor: at the least budget it goes over its share, as without filters.)
        const storeOver = Math.max(0, STORE_MIN_MB * MB - Math.floor(rest * SHARES.store));
        t.ok(sum <= budget * MB + storeOver, `${budget} MB: the parts (${(sum / MB).toFixed(1)} MB) fit (+${(storeOver / MB).toFixed(1)} MB store floor)`);
      }
      // At the least budget, what the floors and the held bytes leave is what it keeps for DuckDB and the tables.
      const p = planMemory(least, threads, filters);
      t.equal(least * MB - p.runtimeBytes - p.nativeBytes - p.filterHeldBytes * filters, (STORE_MIN_MB + 48) * MB, 'the least: 96 MB left for DuckDB and the tables');
      // Below it (tests' engines only): the floors capped, the held bytes too, the parts within the budget.
      const small = planMemory(128, threads, filters);
      t.ok(small.runtimeBytes <= 128 * 0.4 * MB && small.nativeBytes <= 128 * 0.2 * MB && small.filterHeldBytes * filters <= 128 * 0.1 * MB, '128 MB: capped');
    }
  }
  // The default budget rises with the filters as with --threads: 256 with two threads, then 80 a filter.
  t.equal(minimumBudgetMb(2, 1), 336);
  t.equal(minimumBudgetMb(2, 3), 496);
  const line = describePlan(planMemory(336, 2, 1), { ips: 0, uids: 0, ifas: 0, uas: 0, ipVerdicts: 0, tupleSlots: 0, tuplesPerCustomerHour: 0 });
  t.match(line, { budgetMb: 336, leastMb: 336, filters: 1, filterHeldMb: FILTER_HELD_MB, runtimeMb: 64 + 48 + FILTER_RUNTIME_MB, nativeMb: 24 + 24 + FILTER_NATIVE_MB }, 'the startup line shows the filters');
  t.notOk('filters' in describePlan(planMemory(256, 2), { ips: 0, uids: 0, ifas: 0, uas: 0, ipVerdicts: 0, tupleSlots: 0, tuplesPerCustomerHour: 0 }), 'and nothing of them without');
});
