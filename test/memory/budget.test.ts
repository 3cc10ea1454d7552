// The memory budget's split (src/memory/budget.ts): the V8 heaps' and the C heaps' floors
// off the top, the shares dividing the rest, and the parts adding up to the budget.
import t from 'tap';
import { MIN_BUDGET_MB, minimumBudgetMb, NATIVE_MAIN_MB, NATIVE_THREAD_MB, RUNTIME_MAIN_MB, RUNTIME_THREAD_MB, SHARES, STORE_MIN_MB, nativeMb, planMemory, planParts, runtimeMb } from '../../src/memory/budget.ts';

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
