// The memory budget's split (src/memory/budget.ts): the V8 heaps' and the C heaps' floors
// off the top, the shares dividing the rest, and the parts adding up to the budget.
import t from 'tap';
import { MIN_BUDGET_MB, NATIVE_MAIN_MB, NATIVE_THREAD_MB, RUNTIME_MAIN_MB, RUNTIME_THREAD_MB, SHARES, STORE_MIN_MB, nativeMb, planMemory, planParts, runtimeMb } from '../../src/memory/budget.ts';

const MB = 1 << 20;

t.test('the shares add up to one', async (t) => {
  t.equal(Math.round(Object.values(SHARES).reduce((a, b) => a + b, 0) * 1e9) / 1e9, 1);
});

t.test('the heaps floor comes off the top, and the parts fit the budget', async (t) => {
  for (const budget of [MIN_BUDGET_MB, 64, 128, 256, 512, 4096]) {
    for (const threads of [1, 2, 4, 8]) {
      const plan = planMemory(budget, threads);
      const parts = planParts(plan);
      const runtime = runtimeMb(budget, threads);
      t.equal(parts.runtime, runtime * MB, `${budget} MB, ${threads} threads: the runtime part`);
      t.ok(runtime <= budget * 0.4, 'at most 40 % of the budget');
      t.equal(runtime, Math.min(RUNTIME_MAIN_MB + RUNTIME_THREAD_MB * threads, Math.floor(budget * 0.4)));
      const native = nativeMb(budget, threads);
      t.equal(parts.native, native * MB, 'the native part');
      t.equal(native, Math.min(NATIVE_MAIN_MB + NATIVE_THREAD_MB * threads, Math.floor(budget * 0.2)), 'at most 20 % of the budget');
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
  // The default: 256 MB with 2 lookup threads.
  const d = planMemory(256, 2);
  t.equal(d.runtimeBytes, 102 * MB, 'the 40 % cap (64 + 2 x 24 = 112 MB would be more)');
  t.equal(d.nativeBytes, 48 * MB, '24 + 2 x 12 MB');
  t.equal(d.historyBytes, Math.floor(106 * MB * SHARES.history));
  t.equal(planMemory(1024, 2).runtimeBytes, 112 * MB, 'a larger budget: the whole floor');
  t.equal(planMemory(128, 2).nativeBytes, 25 * MB, 'a small budget: the 20 % cap');
});
