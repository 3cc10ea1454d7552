// The per-thread memo of request strings (src/memory/string-memo.ts): bounded in bytes
// whatever the number of distinct keys traffic sends.
import t from 'tap';
import { MEMO_ENTRY_BYTES, StringMemo, memoEntryBytes } from '../../src/memory/string-memo.ts';

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
