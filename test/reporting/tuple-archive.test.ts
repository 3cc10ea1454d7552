// reporting_tuple_ids (src/reporting/tuple-archive.ts): the tuples announced are written,
// found again by id, pruned past --imp-ttl; a write the store refuses loses nothing (kept,
// written once it works) and never throws into its caller; the impression dictionary waits
// for a tuple being looked up and counts it under the values found.
import t from 'tap';
import { TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { HASH, hashId } from '../../src/memory/hash.ts';
import { tupleSeedFor } from '../../src/prebid/lid.ts';
import { ImpressionCounts } from '../../src/counts/impression-counts.ts';
import { ImpressionDictionary, MAX_MISSES } from '../../src/reporting/impression-dictionary.ts';
import { SharedCounts, allocateSharedCounts } from '../../src/counts/shared-counts.ts';
import { TupleArchive, type ArchivedTuple } from '../../src/reporting/tuple-archive.ts';
import { TupleDictionary } from '../../src/counts/tuple-dictionary.ts';
import { OVERFLOW, joinDims, tupleHash } from '../../src/counts/tuple.ts';
import { until } from '../helpers/until.ts';
import { openStore } from '../helpers/store.ts';

const SEED = 0x5eed;
const CUSTOMER = '0b6c7c8e-3a52-4f0e-9a51-5d2f3e4a1b2c';
const HOUR = 3_600_000;

function tuple(pub: string, hour: number) {
  const dims = TUPLE_DIMENSIONS.map((d) => (d === 'pub' ? pub : d === 'adt' || d === 'dvt' ? '1' : d === 'category' ? 'none' : 'x'));
  tupleHash(CUSTOMER, hour, dims, SEED);
  return { hi: HASH[0]!, lo: HASH[1]!, customerId: CUSTOMER, hour, dims: joinDims(dims), values: dims };
}

t.test('the tuple seed is the lid secret\'s: the same for the same secret, another for another', async (t) => {
  const a = new Uint8Array(16).fill(7);
  const b = new Uint8Array(16).fill(8);
  t.equal(tupleSeedFor(a), tupleSeedFor(new Uint8Array(16).fill(7)));
  t.not(tupleSeedFor(a), tupleSeedFor(b));
});

t.test('written, found by id, pruned past the TTL', async (t) => {
  const store = await openStore(t);
  let now = Date.now();
  const archive = new TupleArchive(store, { impTtlMs: HOUR, flushIntervalMs: 3_600_000, now: () => now });
  const found = new Map<number, ArchivedTuple>();
  archive.onFound = (f) => f.forEach((v, k) => found.set(k, v));
  const hour = now - (now % HOUR);
  const fresh = tuple('pub-fresh', hour);
  const stale = tuple('pub-stale', hour - 3 * HOUR);
  archive.record([fresh, stale]);
  await archive.flush();
  const n = await store.one<{ n: bigint }>('SELECT count(*) AS n FROM reporting_tuple_ids');
  t.equal(Number(n!.n), 1, 'an hour no beacon can name any more is not written');

  const id = hashId(fresh.hi, fresh.lo);
  t.ok(archive.want(id), 'asked for: the impression waits');
  t.ok(archive.want(id), 'still waiting while it is looked up');
  await until('found', async () => found.size === 1);
  t.strictSame(found.get(id), { customerId: CUSTOMER, hour, dims: fresh.dims });
  t.notOk(archive.want(id), 'asked once: not again');
  t.ok(archive.want(12345), 'an id never written is asked for too');
  await until('looked up, not found: not waited for any more', async () => !archive.want(12345));
  t.equal(found.has(12345), false);

  now += 2 * HOUR + 1;
  archive.record([tuple('pub-later', now - (now % HOUR))]);
  await archive.flush();
  const rows = await store.all<{ dims: string }>('SELECT dims FROM reporting_tuple_ids');
  t.strictSame(rows.map((r) => r.dims.split('\u001f')[0]), ['pub-later'], 'older hours pruned');
  await archive.close();
});

t.test('a write the store refuses is kept, logged once, written later; nothing throws into the caller', async (t) => {
  const store = await openStore(t);
  const archive = new TupleArchive(store, { impTtlMs: HOUR, flushIntervalMs: 3_600_000 });
  const now = Date.now();
  const hour = now - (now % HOUR);
  await store.run('DROP TABLE reporting_tuple_ids');
  archive.record([tuple('pub-a', hour)]);
  await t.rejects(archive.flush(), 'the pass fails');
  archive.record([tuple('pub-b', hour)]);
  await t.rejects(archive.flush(), 'and again');
  t.equal(archive.stats.failedWrites, 2);
  await store.run(`CREATE TABLE reporting_tuple_ids (tuple_id BIGINT NOT NULL, customer_id VARCHAR NOT NULL, period_start TIMESTAMP NOT NULL, dims VARCHAR NOT NULL)`);
  await archive.flush();
  const rows = await store.all<{ dims: string }>('SELECT dims FROM reporting_tuple_ids ORDER BY dims');
  t.strictSame(rows.map((r) => r.dims.split('\u001f')[0]), ['pub-a', 'pub-b'], 'both written once the store takes them');
  // A lookup that fails: the impression stops waiting (counted __overflow__ after its misses).
  await store.run('DROP TABLE reporting_tuple_ids');
  t.ok(archive.want(777));
  await until('the failed lookup ends', async () => !archive.want(777));
  await archive.close();
  archive.record([tuple('pub-c', hour)]);
  t.equal(archive.stats.dropped, 0, 'after close nothing is kept, nothing counted as dropped either');
});

t.test('the impression dictionary waits for a tuple being looked up and takes its values', async (t) => {
  const mem = allocateSharedCounts(1 << 16, SEED, 1000);
  const thread = new ImpressionCounts(mem);
  const shared = new SharedCounts(mem);
  const imps = new ImpressionDictionary(new TupleDictionary());
  const now = Date.now();
  const hour = now - (now % HOUR);
  const earlier = tuple('pub-earlier', hour);
  let pending = true;
  imps.resolver = { want: () => pending };
  thread.count({ customerId: CUSTOMER, at: now, tupleHi: earlier.hi, tupleLo: earlier.lo, band: 'medium' }, 'valid', now);
  thread.count({ customerId: CUSTOMER, at: now, tupleHi: 1, tupleLo: 2, band: 'low' }, 'valid', now);
  imps.add(thread.take().announced);
  for (let i = 0; i < MAX_MISSES + 2; i++) t.strictSame(imps.drain(shared, now), [], `waits while the lookup is under way (drain ${i + 1})`);
  imps.restore(new Map([[hashId(earlier.hi, earlier.lo), { customerId: CUSTOMER, hour, dims: earlier.dims }]]));
  pending = false;
  const rows = imps.drain(shared, now);
  t.equal(rows.length, 1);
  t.strictSame(rows[0]!.dims, [...earlier.values, 'medium', 'valid'], 'the values found on disk');
  for (let i = 2; i < MAX_MISSES; i++) t.strictSame(imps.drain(shared, now), []);
  const folded = imps.drain(shared, now);
  t.strictSame(folded[0]!.dims, [...TUPLE_DIMENSIONS.map(() => OVERFLOW), 'low', 'valid'], 'a tuple not found: __overflow__ after MAX_MISSES drains, as before');
  t.equal(imps.unresolved, 1);

  // Another customer's tuple under the same id is not taken.
  const other = new ImpressionDictionary(new TupleDictionary());
  other.restore(new Map([[hashId(earlier.hi, earlier.lo), { customerId: 'someone-else', hour, dims: earlier.dims }]]));
  const mem2 = allocateSharedCounts(1 << 16, SEED, 1000);
  const thread2 = new ImpressionCounts(mem2);
  thread2.count({ customerId: CUSTOMER, at: now, tupleHi: earlier.hi, tupleLo: earlier.lo, band: 'medium' }, 'valid', now);
  other.add(thread2.take().announced);
  const shared2 = new SharedCounts(mem2);
  let out: ReturnType<typeof other.drain> = [];
  for (let i = 0; i < MAX_MISSES && out.length === 0; i++) out = other.drain(shared2, now);
  t.strictSame(out[0]!.dims.slice(0, TUPLE_DIMENSIONS.length), TUPLE_DIMENSIONS.map(() => OVERFLOW));
});
