// The throttles' shared table: bounded, least recently updated dropped first, reads free.
import t from 'tap';
import { ThrottleTable, tooManyRequests } from '../../src/http/throttle.ts';

t.test('ThrottleTable keeps at most maxKeys, dropping the least recently updated', async (t) => {
  const table = new ThrottleTable<{ n: number }>(2, () => 42);
  t.equal(table.now(), 42, 'the clock it was given');
  table.set('a', { n: 1 });
  table.set('b', { n: 2 });
  t.same(table.get('a'), { n: 1 }, 'reading a does not make it recent');
  table.set('c', { n: 3 });
  t.equal(table.get('a'), undefined, 'a, updated longest ago, went');
  t.same([table.get('b'), table.get('c')], [{ n: 2 }, { n: 3 }]);
  table.set('b', { n: 4 });
  table.set('d', { n: 5 });
  t.equal(table.get('c'), undefined, 're-storing b made c the oldest');
  t.same(table.get('b'), { n: 4 });
  table.delete('b');
  t.equal(table.get('b'), undefined);
});

t.test('tooManyRequests: 429 rate_limited with Retry-After', async (t) => {
  const e = tooManyRequests('Too many; retry in 3 s.', 3);
  t.equal(e.status, 429);
  t.same(e.body(), { error: 'rate_limited', message: 'Too many; retry in 3 s.' });
  t.same(e.headers, { 'Retry-After': '3' });
});
