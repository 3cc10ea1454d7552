// Reporting counts in shared memory (src/counts/shared-counts.ts, thread-counts.ts,
// tuple-dictionary.ts): per-customer-hour limits, overflow, draining, exact totals, and
// several threads counting into one table.
import t from 'tap';
import { Worker } from 'node:worker_threads';
import { TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { HASH } from '../../src/memory/hash.ts';
import { COUNTED, FULL, NEW, REFUSED, SharedCounts, allocateSharedCounts } from '../../src/counts/shared-counts.ts';
import { ThreadCounts } from '../../src/counts/thread-counts.ts';
import { TupleDictionary } from '../../src/counts/tuple-dictionary.ts';
import { OVERFLOW, tupleHash } from '../../src/counts/tuple.ts';
import { HOUR_MS } from '../../src/base/time.ts';

const H0 = 1_790_000_000_000 - (1_790_000_000_000 % HOUR_MS);
const SEED = 7;
const dims = (p1: string) => TUPLE_DIMENSIONS.map((d) => (d === 'p1' ? p1 : d === 'adt' ? '1' : d === 'dvt' ? '2' : d === 'env' ? 'site' : 'v'));
const P1 = TUPLE_DIMENSIONS.indexOf('p1');

function count(c: SharedCounts, customer: string, p1: string, hour = H0, now = hour + 1000, overflow = false): number {
  tupleHash(customer, hour, dims(p1), SEED);
  return c.count(HASH[0]!, HASH[1]!, customer, hour, now, 1, 0, 0, overflow);
}

t.test('each customer adds at most its limit of tuples per hour; counting them goes on', async (t) => {
  const c = SharedCounts.create(1 << 20, 50, SEED);
  for (let i = 0; i < 50; i++) t.equal(count(c, 'A', `p-${i}`), NEW);
  t.equal(count(c, 'A', 'p-50'), REFUSED, 'the 51st is refused');
  t.equal(count(c, 'A', 'p-7'), COUNTED, 'an admitted tuple keeps counting');
  t.equal(count(c, 'A', 'p-50', H0, H0 + 1000, true), NEW, 'an overflow tuple is admitted whatever the limit');
  for (let i = 0; i < 50; i++) t.equal(count(c, 'B', `p-${i}`), NEW, "B's room is its own");
  const next = H0 + HOUR_MS;
  t.equal(count(c, 'A', 'p-50', next, next + 5), NEW, 'a new hour, new room');
  t.equal(count(c, 'A', 'p-7', H0, next + 5), COUNTED, 'the hour just ended keeps counting (late counts)');
  t.equal(count(c, 'A', 'p-9999', H0, next + 5), REFUSED, 'and keeps its limit');
  t.equal(count(c, 'A', 'p-1', H0, H0 + 3 * HOUR_MS), FULL, 'hours long gone are not counted here');
});

t.test('a full table says so; slots of old hours are reused', async (t) => {
  const c = SharedCounts.create(8 << 10, 1_000_000, SEED);
  let added = 0, full = 0;
  for (let i = 0; i < 10 * c.capacity; i++) {
    const r = count(c, 'A', `q-${i}`);
    if (r === NEW) added++;
    else if (r === FULL) full++;
  }
  t.ok(added <= c.capacity && added > c.capacity / 2, `added ${added} of ${c.capacity} slots`);
  t.ok(full > 0, 'the rest: full');
  t.equal(count(c, 'A', 'q-0'), COUNTED, 'the first one still counts');
  const later = H0 + 2 * HOUR_MS;
  t.equal(count(c, 'A', 'fresh', later, later), NEW, 'slots of hours that no longer matter are taken');
});

t.test('thread counts: overflow past the limit, the dictionary turns slots into rows, totals exact', async (t) => {
  const mem = allocateSharedCounts(1 << 20, SEED, 100);
  const tc = new ThreadCounts(mem, 1 << 20);
  const dict = new TupleDictionary();
  const reader = new SharedCounts(mem);
  let givt = 0;
  for (let i = 0; i < 10_000; i++) {
    const cls = i % 10 === 0 ? 'givt' : 'valid';
    if (cls === 'givt') givt++;
    tc.count('A', H0, dims(`hostile-${i % 3000}`), cls, H0 + 10);
  }
  // hostile-0..99 are admitted; they come up 400 times in 10 000 lookups (i % 3000 < 100).
  t.equal(tc.folded, 9_600, 'every lookup of a refused tuple folded');
  const early = dict.drain(reader, H0 + 20);
  t.same(early, [], 'nothing is drained before the values are known');
  const { announced, rows } = tc.take();
  t.equal(announced.length, 101, '100 tuples and the overflow tuple announced, once each');
  t.same(rows, [], 'no fallback rows: the shared table had room');
  dict.add(announced);
  const drained = dict.drain(reader, H0 + 30);
  t.equal(drained.length, 101);
  t.same([drained.reduce((n, r) => n + r.total, 0), drained.reduce((n, r) => n + r.givt, 0)], [10_000, givt], 'every transaction counted once');
  t.equal(drained.find((r) => r.dims[P1] === OVERFLOW)!.total, tc.folded);
  t.same(dict.drain(reader, H0 + 40), [], 'drained slots are zeroed');
  tc.count('A', H0, dims('hostile-3'), 'valid', H0 + 50);
  t.same(tc.take().announced, [], 'a known tuple is not announced again');
  t.same(dict.drain(reader, H0 + 60).map((r) => [r.dims[P1], r.total]), [['hostile-3', 1]], 'and counts under its own row');
  t.same(dict.drain(reader, H0 + 3 * HOUR_MS), [], 'old hours are forgotten');
  t.equal(dict.size, 0);
});

t.test('when the shared table is full, the thread keeps its own rows: still counted', async (t) => {
  const tc = new ThreadCounts(allocateSharedCounts(4096 + 1024, SEED, 1_000_000), 1 << 20);
  for (let i = 0; i < 5000; i++) tc.count('A', H0, dims(`z-${i}`), 'sivt', H0 + 1);
  const { announced, rows } = tc.take();
  t.ok(rows.length > 0, `${rows.length} tuples in the thread's own map`);
  t.equal(rows.reduce((n, r) => n + r.total, 0) + announced.length, 5000, 'each count in exactly one place');
  t.equal(rows.reduce((n, r) => n + r.sivt, 0) + announced.length, 5000);
});

t.test('two threads count into one table: every count lands once', async (t) => {
  const mem = allocateSharedCounts(1 << 20, SEED, 1_000_000);
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.tsx).then((api) => { api.register(); return import(workerData.url); }).then(({ ThreadCounts }) => {
      const tc = new ThreadCounts(workerData.mem, 1 << 20);
      const dims = (p1) => workerData.names.map((d) => (d === 'p1' ? p1 : 'v'));
      for (let i = 0; i < 20000; i++) tc.count('A', workerData.h0, dims('k-' + (i % 500)), 'valid', workerData.h0 + 5);
      parentPort.postMessage(tc.take());
    });`;
  const run = () =>
    new Promise<ReturnType<ThreadCounts['take']>>((resolve, reject) => {
      const w = new Worker(src, { eval: true, workerData: { mem, h0: H0, names: TUPLE_DIMENSIONS, url: new URL('../../src/counts/thread-counts.ts', import.meta.url).href, tsx: import.meta.resolve('tsx/esm/api') } });
      w.once('message', resolve);
      w.once('error', reject);
    });
  const [a, b] = await Promise.all([run(), run()]);
  const dict = new TupleDictionary();
  dict.add(a.announced);
  dict.add(b.announced);
  t.equal(a.announced.length + b.announced.length, 500, 'each tuple announced by exactly one thread');
  const rows = dict.drain(new SharedCounts(mem), H0 + 10);
  t.equal(rows.length, 500);
  // A bucket whose lock stayed taken (its holder descheduled on a busy host) hands the count
  // back to the thread: it arrives with the thread's own rows, never lost.
  const fallback = [...a.rows, ...b.rows].reduce((n, r) => n + r.total, 0);
  t.equal(rows.reduce((n, r) => n + r.total, 0) + fallback, 40_000, `both threads' 40 000 counts, none lost (${fallback} kept by the threads)`);
});

t.test('dimension values are cut to 256 characters, never inside a surrogate pair', async (t) => {
  const { clipDim, DIM_VALUE_MAX } = await import('../../src/counts/tuple.ts');
  const emoji = 'a'.repeat(DIM_VALUE_MAX - 1) + '😀';
  const cut = clipDim(emoji);
  t.equal(cut, 'a'.repeat(DIM_VALUE_MAX - 1), 'the pair that would be split is dropped whole');
  t.ok(cut.isWellFormed());
  t.equal(clipDim('x\ud800y'), 'x\ufffdy', 'a lone surrogate is replaced');
  t.equal(clipDim('😀'.repeat(10)), '😀'.repeat(10), 'whole pairs are kept');
  t.equal(clipDim('b'.repeat(1000)).length, DIM_VALUE_MAX);
});

t.test('a lock that stays taken is never released by a thread that did not take it; counts fall back, never lost', async (t) => {
  const mem = allocateSharedCounts(64 << 10, SEED, 1000);
  const c = new SharedCounts(mem);
  t.equal(count(c, 'A', 'p-1'), NEW);
  // Another thread holds every tuple bucket (preempted inside its section).
  const tupleLocks = new Int32Array(mem.tuples.locks);
  tupleLocks.fill(1);
  t.equal(count(c, 'A', 'p-1'), FULL, 'the count is handed back to the thread (it keeps it in its own table)');
  t.equal(count(c, 'A', 'p-2'), FULL, 'a new tuple too');
  t.ok(tupleLocks.every((v) => v === 1), "the holder's locks are still taken: nobody released them for it");
  let drained = 0;
  c.drain(() => { drained++; return true; });
  t.equal(drained, 0, 'a flush skips a held bucket (it is drained at the next flush)');
  tupleLocks.fill(0);
  // The counter table's lock held: a new tuple cannot be admitted now, and is not refused either.
  const counterLocks = new Int32Array(mem.counters.locks);
  counterLocks.fill(1);
  t.equal(count(c, 'A', 'p-3'), FULL, 'admission busy: kept by the thread, not refused into overflow');
  t.equal(count(c, 'A', 'p-1'), COUNTED, 'an admitted tuple needs no admission');
  t.ok(counterLocks.every((v) => v === 1), 'counter locks untouched');
  counterLocks.fill(0);
  const totals: number[] = [];
  c.drain((_hi, _lo, total) => { totals.push(total); return true; });
  t.same(totals, [2], 'p-1: its first count and the one after the locks were back; the FULL ones went to the thread');
});
