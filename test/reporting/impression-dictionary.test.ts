// The impressions' main-thread half: a slot counted by a thread becomes a row with its
// lookup's values (from the lookups' tuple dictionary), waits a few drains for a tuple not
// announced yet, then counts without them (__overflow__) rather than never.
import t from 'tap';
import { TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { HASH } from '../../src/memory/hash.ts';
import { ImpressionCounts } from '../../src/counts/impression-counts.ts';
import { ImpressionDictionary, MAX_MISSES, WAITING_MAX } from '../../src/reporting/impression-dictionary.ts';
import { SharedCounts, allocateSharedCounts } from '../../src/counts/shared-counts.ts';
import { TupleDictionary } from '../../src/counts/tuple-dictionary.ts';
import { OVERFLOW, joinDims, tupleHash } from '../../src/counts/tuple.ts';

const SEED = 0x5eed;
const CUSTOMER = '0b6c7c8e-3a52-4f0e-9a51-5d2f3e4a1b2c';

t.test('known tuples resolve at once; unknown ones fold after MAX_MISSES drains', async (t) => {
  const mem = allocateSharedCounts(1 << 16, SEED, 1000);
  const thread = new ImpressionCounts(mem);
  const shared = new SharedCounts(mem);
  const lookups = new TupleDictionary();
  const imps = new ImpressionDictionary(lookups);
  const now = Date.now();
  const hour = now - (now % 3_600_000);
  const dims = TUPLE_DIMENSIONS.map((d) => (d === 'pub' ? 'pub-9' : d === 'adt' || d === 'dvt' ? '1' : d === 'category' ? 'none' : 'x'));
  tupleHash(CUSTOMER, hour, dims, SEED);
  const known = { hi: HASH[0]!, lo: HASH[1]! };
  lookups.add([{ hi: known.hi, lo: known.lo, customerId: CUSTOMER, hour, dims: joinDims(dims) }]);

  thread.count({ customerId: CUSTOMER, at: now, tupleHi: known.hi, tupleLo: known.lo, band: 'high' }, 'replay', now);
  thread.count({ customerId: CUSTOMER, at: now, tupleHi: known.hi, tupleLo: known.lo, band: 'high' }, 'replay', now);
  thread.count({ customerId: CUSTOMER, at: now, tupleHi: 123, tupleLo: 456, band: 'low' }, 'valid', now);
  const { announced } = thread.take();
  t.equal(announced.length, 2, 'two slots, each announced once');
  t.strictSame(imps.drain(shared, now), [], 'nothing known before the announcements arrive');
  imps.add(announced);
  const first = imps.drain(shared, now);
  t.equal(first.length, 1);
  t.strictSame(first[0]!.dims, [...dims, 'high', 'replay'], "the lookup's values, its band, the status");
  t.match(first[0], { customerId: CUSTOMER, hour, total: 2, givt: 2 });
  for (let i = 2; i < MAX_MISSES; i++) t.strictSame(imps.drain(shared, now), [], `unknown tuple: waits (drain ${i})`);
  const folded = imps.drain(shared, now);
  t.equal(folded.length, 1, 'then counted without its dimensions');
  t.strictSame(folded[0]!.dims, [...TUPLE_DIMENSIONS.map(() => OVERFLOW), 'low', 'valid']);
  t.match(folded[0], { total: 1, givt: 0 });
  t.equal(imps.unresolved, 1);
  t.strictSame(imps.drain(shared, now), [], 'drained slots are empty');
});

t.test('an expired beacon of an old lookup is counted by the thread itself, then folded', async (t) => {
  const mem = allocateSharedCounts(1 << 16, SEED, 1000);
  const thread = new ImpressionCounts(mem);
  const imps = new ImpressionDictionary(new TupleDictionary());
  const now = Date.now();
  thread.count({ customerId: CUSTOMER, at: now - 5 * 3_600_000, tupleHi: 1, tupleLo: 2, band: 'medium' }, 'expired', now);
  const { announced, rows } = thread.take();
  t.equal(announced.length, 0, 'an hour the shared table does not take');
  t.equal(rows.length, 1);
  imps.addRows(rows);
  let out: ReturnType<typeof imps.drain> = [];
  for (let i = 0; i < MAX_MISSES && out.length === 0; i++) out = imps.drain(new SharedCounts(mem), now);
  t.equal(out.length, 1);
  t.match(out[0], { total: 1, givt: 1, hour: now - 5 * 3_600_000 - ((now - 5 * 3_600_000) % 3_600_000) });
  t.strictSame(out[0]!.dims.slice(-2), ['medium', 'expired']);
});

t.test('rows kept by threads wait within a bound; past it they count at once, folded', async (t) => {
  const imps = new ImpressionDictionary(new TupleDictionary());
  const now = Date.now();
  const hour = now - (now % 3_600_000);
  const rows = Array.from({ length: WAITING_MAX + 5 }, (_, i) => ({
    hi: i + 1, lo: 7, customerId: CUSTOMER, hour, tupleHi: i + 1, tupleLo: 9, band: 1, status: 1, overflow: false, n: 1, labelled: 0,
  }));
  imps.addRows(rows);
  const shared = new SharedCounts(allocateSharedCounts(1 << 16, SEED, 1000));
  const first = imps.drain(shared, now);
  t.equal(first.length, 1, 'the 5 past the bound: one folded row, counted now');
  t.match(first[0], { total: 5, givt: 5 });
  t.strictSame(first[0]!.dims.slice(-2), ['medium', 'replay']);
  let later: ReturnType<typeof imps.drain> = [];
  for (let i = 1; i < MAX_MISSES; i++) later = imps.drain(shared, now);
  t.equal(later.reduce((s, r) => s + r.total, 0), WAITING_MAX, 'the waiting ones, once their tuples stay unknown');
  t.strictSame(imps.drain(shared, now), [], 'nothing left');
});

t.test("the stop's drain counts what still waits, without its dimensions, rather than dropping it", async (t) => {
  const mem = allocateSharedCounts(1 << 16, SEED, 1000);
  const thread = new ImpressionCounts(mem);
  const shared = new SharedCounts(mem);
  const imps = new ImpressionDictionary(new TupleDictionary());
  const now = Date.now();
  thread.count({ customerId: CUSTOMER, at: now, tupleHi: 7, tupleLo: 8, band: 'low' }, 'replay', now);
  thread.count({ customerId: CUSTOMER, at: now - 5 * 3_600_000, tupleHi: 9, tupleLo: 10, band: 'medium' }, 'expired', now);
  const { announced, rows } = thread.take();
  imps.add(announced);
  imps.addRows(rows);
  t.strictSame(imps.drain(shared, now), [], 'an ordinary drain waits for the unknown tuples');
  const last = imps.drain(shared, now, true);
  t.equal(last.length, 2, 'the final one counts both at once');
  for (const r of last) t.strictSame(r.dims.slice(0, TUPLE_DIMENSIONS.length), TUPLE_DIMENSIONS.map(() => OVERFLOW));
  t.match(last.find((r) => r.dims.includes('replay')), { total: 1, givt: 1 });
  t.match(last.find((r) => r.dims.includes('expired')), { total: 1, givt: 1 });
  t.equal(imps.unresolved, 2);
});
