// The per-thread memo of request strings (src/memory/string-memo.ts): bounded in bytes
// whatever the number of distinct keys traffic sends.
import t from 'tap';
import { MEMO_ENTRY_BYTES, PROBE_WINDOW, REST_WINDOWS, StringMemo, memoEntryBytes } from '../../src/memory/string-memo.ts';

t.test('a million distinct keys never hold more than the memo bytes', async (t) => {
  const memo = new StringMemo<number>(64 << 10);
  let bytes = 0;
  let most = 0;
  let emptied = 0;
  let wrongIndex = 0;
  for (let i = 0; i < 1_000_000; i++) {
    const key = `Mozilla/5.0 (X11) Build/${i}`;
    const index = memo.reserve(key.length);
    if (index === 0 && i > 0) {
      emptied++;
      bytes = 0;
    }
    if (index !== memo.size) wrongIndex++;
    bytes += memoEntryBytes(key.length);
    memo.put(key, index);
    most = Math.max(most, bytes);
  }
  t.equal(wrongIndex, 0, 'each entry index is the count since the last emptying');
  t.ok(most <= 64 << 10, `at most ${most} bytes counted`);
  t.ok(memo.size <= memo.maxEntries);
  t.ok(emptied > 100, `emptied ${emptied} times`);
  const last = `Mozilla/5.0 (X11) Build/${999_999}`;
  t.equal(memo.get(last), memo.size - 1, 'the last entry is found');
});

t.test('an entry bigger than the memo is not kept', async (t) => {
  const memo = new StringMemo<string>(4096);
  t.equal(memo.maxEntries, Math.floor(4096 / MEMO_ENTRY_BYTES));
  t.equal(memo.reserve(4096), -1);
  t.equal(memo.size, 0);
  t.equal(memo.reserve(10), 0, 'a small one is');
});

t.test('probes rest while they do not pay, and resume when traffic repeats again', async (t) => {
  const memo = new StringMemo<number>(64 << 10);
  const remember = (key: string) => {
    const index = memo.reserve(key.length);
    if (index >= 0) memo.put(key, index);
  };
  // One-off keys (each remembered, as a caller would after its second sight): no hits.
  const gets = 42 * PROBE_WINDOW; // ends two windows into a rest
  let held = 0;
  for (let i = 0; i < gets; i++) {
    const key = `Mozilla/5.0 (X11) Build/${i}`;
    if (memo.get(key) !== undefined) held++;
    remember(key);
  }
  t.equal(held, 0, 'no one-off key is found');
  t.ok(memo.size < gets / (REST_WINDOWS + 1) + PROBE_WINDOW, 'keys are added only after a get that looked');
  t.ok(memo.probes <= gets / (REST_WINDOWS + 1) + PROBE_WINDOW, `${memo.probes} of ${gets} gets probed`);
  t.ok(memo.probes >= gets / (REST_WINDOWS + 1) - PROBE_WINDOW, 'but one window in every REST_WINDOWS + 1 still does');
  // Traffic turns repetitive: 50 keys over and over, each remembered when a get that looked
  // missed it. Within a rest it probes again, and every get finds its key from then on.
  const hot = Array.from({ length: 50 }, (_, i) => `Mozilla/5.0 (Hot) Build/${i}`);
  let found = 0;
  let firstHit = -1;
  let missedAfter = 0;
  for (let i = 0; i < 20 * PROBE_WINDOW; i++) {
    const key = hot[i % hot.length]!;
    if (memo.get(key) !== undefined) {
      found++;
      if (firstHit < 0) firstHit = i;
    } else {
      if (firstHit >= 0 && i >= firstHit + hot.length) missedAfter++;
      remember(key);
    }
  }
  t.ok(firstHit > 0 && firstHit <= (REST_WINDOWS + 1) * PROBE_WINDOW, `probing resumed after ${firstHit} gets`);
  t.equal(missedAfter, 0, 'then every get found its key');
  t.ok(found >= 20 * PROBE_WINDOW - firstHit - hot.length, `${found} found`);
});

t.test('a memo whose keys repeat probes on every get', async (t) => {
  const memo = new StringMemo<number>(64 << 10);
  const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
  for (const [i, k] of keys.entries()) memo.put(k, i);
  // A quarter of gets hitting is enough to keep probing.
  for (let i = 0; i < 10 * PROBE_WINDOW; i++) memo.get(i % 3 === 0 ? keys[i % 100]! : `new-${i}`);
  t.equal(memo.probes, 10 * PROBE_WINDOW);
});

t.test('after a get that did not look, reserve() adds nothing (the key may be held)', async (t) => {
  const memo = new StringMemo<number>(64 << 10);
  for (let i = 0; i < PROBE_WINDOW; i++) memo.get(`miss-${i}`); // a window without hits: rests
  t.equal(memo.get('held?'), undefined);
  t.equal(memo.reserve(5), -1, 'not kept');
  t.equal(memo.size, 0);
});
