// The shared tables' slot choice (src/memory/shared-table.ts): a new key takes an empty slot
// or the one its table's keep() values least, and ties fall on different slots claim
// after claim.
import t from 'tap';
import { SharedTable } from '../../src/memory/shared-table.ts';

const REF = 2; // word 2 of a slot: the CLOCK reference bit of this test's table

/** A table of one bucket of 8 slots whose keep() is a CLOCK's (UaCache and IpCache work so); `keyLines` as history's tables. */
function clockTable(keyLines = false) {
  const table = new SharedTable(SharedTable.allocate(8 * 4 * 4 + (keyLines ? 64 : 0) + 4, 4, 8, { keyLines }));
  const u = table.u32;
  const keep = (base: number): number => {
    if (u[base + REF] === 0) return 1;
    u[base + REF] = 0; // second chance
    return 2;
  };
  /** One access: a hit marks the slot referenced; a miss claims one (returns false). */
  const access = (hi: number, lo: number): boolean => {
    const found = table.find(0, hi, lo);
    if (found >= 0) {
      u[found + REF] = 1;
      return true;
    }
    table.claim(0, hi, lo, keep);
    return false;
  };
  return { table, access };
}

for (const keyLines of [false, true]) {
  t.test(`${keyLines ? 'key lines: ' : ''}an empty slot is taken first, wherever the scan starts`, async (t) => {
    const { table, access } = clockTable(keyLines);
    for (let k = 1; k <= 8; k++) t.notOk(access(k, k * 7), `key ${k} is new`);
    t.equal(table.count(), 8, 'eight keys in eight slots: none evicted while a slot was empty');
    for (let k = 1; k <= 8; k++) t.ok(table.find(0, k, k * 7) >= 0, `key ${k} is held`);
  });

  t.test(`${keyLines ? 'key lines: ' : ''}two live keys in a bucket of stale ones evict the stale ones, not each other`, async (t) => {
    const { table, access } = clockTable(keyLines);
    for (let k = 1; k <= 8; k++) access(1000 + k, 1000 + k); // stale: never read again
    // X and Y alternate; each is new when the other is claimed. Read from slot 0 every time,
    // the second would take the first's slot (the first unreferenced one) and so on for ever.
    const X = [7, 0x11], Y = [9, 0x24];
    let misses = 0;
    for (let round = 0; round < 50; round++) {
      if (!access(X[0]!, X[1]!)) misses++;
      if (!access(Y[0]!, Y[1]!)) misses++;
    }
    t.equal(misses, 2, 'one miss each (their first sight), then hits');
    t.equal(table.count(), 8);
  });

  t.test(`${keyLines ? 'key lines: ' : ''}live keys survive a bucket of stale ones (random keys, three at a time)`, async (t) => {
    let x = 0x9e3779b9;
    const rnd = () => (x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0);
    let lateMisses = 0;
    for (let trial = 0; trial < 200; trial++) {
      const { access } = clockTable(keyLines);
      for (let k = 0; k < 8; k++) access((rnd() | 1) >>> 0, rnd());
      const live = [0, 1, 2].map(() => [(rnd() | 1) >>> 0, rnd()] as const);
      for (let round = 0; round < 40; round++) {
        for (const [hi, lo] of live) if (!access(hi, lo) && round >= 20) lateMisses++;
      }
    }
    t.equal(lateMisses, 0, `${lateMisses} misses of ${200 * 20 * 3} late accesses`);
  });
}

t.test('key lines: every key a table holds is found at its slot, after many claims over few buckets', async (t) => {
  const mem = SharedTable.allocate(4 * (8 * 26 * 4 + 64 + 4), 26, 8, { keyLines: true });
  const table = new SharedTable(mem);
  t.equal(table.buckets, 4);
  t.equal(table.bytes, 4 * (8 * 26 * 4 + 64 + 4), 'the key lines are within the bytes given');
  let x = 0x2545f491;
  const rnd = () => (x = (Math.imul(x ^ (x >>> 13), 0x5bd1e995) + 0x3c6ef372) >>> 0);
  const keep = () => 1;
  for (let i = 0; i < 500; i++) {
    const hi = rnd() | 1, lo = rnd();
    const b = table.bucketOf(hi >>> 0);
    if (table.find(b, hi >>> 0, lo) < 0) table.claim(b, hi >>> 0, lo, keep);
  }
  const u = table.u32;
  let held = 0;
  for (let base = 0; base < u.length; base += 26) {
    if (u[base] === 0 && u[base + 1] === 0) continue;
    held++;
    t.equal(table.find(table.bucketOf(u[base]!), u[base]!, u[base + 1]!), base, `slot ${base / 26}`);
  }
  t.equal(held, 32, 'every slot taken');
});
