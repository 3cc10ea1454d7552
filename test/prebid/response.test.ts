// The lookup response's numbers (src/prebid/response.ts): num4 writes what String() writes,
// from a table for the four-decimal values the score produces.
import t from 'tap';
import { num4 } from '../../src/prebid/response.ts';

t.test('every four-decimal value in [0, 1] is written as String() writes it, twice (the table)', async (t) => {
  let wrong = 0;
  for (let pass = 0; pass < 2; pass++) {
    for (let k = 0; k <= 10_000; k++) {
      const x = k / 10_000;
      if (num4(x) !== String(x)) wrong++;
      const r = Math.round((x + 0.00003) * 10_000) / 10_000; // as score.ts's round4 makes them
      if (num4(r) !== String(r)) wrong++;
    }
  }
  t.equal(wrong, 0);
});

t.test('any other number is formatted as usual', async (t) => {
  for (const x of [-0, 0.00005, 0.12345, 1.0001, 1.5, -0.25, 1e-7, 12, NaN, Infinity, 0.1 + 0.2]) {
    t.equal(num4(x), String(x), String(x));
  }
});
