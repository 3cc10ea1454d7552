import t from 'tap';
import { SeenSample } from '../../src/prebid/seen-sample.ts';

t.test('distinct, bounded, drained', async (t) => {
  const s = new SeenSample(3);
  for (const v of ['a.example', 'a.example', '', 'b.example', 'x'.repeat(300), 'c.example', 'd.example']) s.add(v);
  t.same(s.drain(), ['a.example', 'b.example', 'c.example'], 'first distinct values up to the cap; empty and overlong ones skipped');
  t.same(s.drain(), [], 'empty after a drain');
  s.add('d.example');
  t.same(s.drain(), ['d.example']);
});
