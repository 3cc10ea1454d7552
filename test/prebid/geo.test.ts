// A GET lookup's `geo` (src/prebid/validate.ts): two ASCII letters of either case, kept in
// uppercase; anything else is refused, checked here at the edges of the letters' ranges
// (the characters next to A-Z and a-z, and letters outside ASCII).
import t from 'tap';
import { P, PARAM_COUNT } from '../../src/prebid/params.ts';
import { emptyRequest, validateRequest } from '../../src/prebid/validate.ts';

function withGeo(geo: string): { code: string | null; geo: string } {
  const v: (string | undefined)[] = new Array(PARAM_COUNT).fill(undefined);
  Object.assign(v, { [P.pub]: 'pub-1', [P.node]: 'n', [P.ip]: '1.2.3.4', [P.ua]: 'ua', [P.uid]: 'u', [P.sid]: 's', [P.adt]: '1', [P.dvt]: '2', [P.geo]: geo });
  const out = emptyRequest();
  const e = validateRequest(v, new Array(PARAM_COUNT).fill(undefined), out);
  return { code: e === null ? null : e.code, geo: out.geo };
}

t.test('two ASCII letters of either case are taken, in uppercase', async (t) => {
  const cases: Array<[string, string]> = [['us', 'US'], ['US', 'US'], ['uS', 'US'], ['Za', 'ZA'], ['az', 'AZ'], ['zz', 'ZZ'], ['AA', 'AA']];
  for (const [geo, want] of cases) t.same(withGeo(geo), { code: null, geo: want }, geo);
  // The same pair twice: the same answer (the second from the table).
  t.equal(withGeo('de').geo, 'DE');
  t.equal(withGeo('de').geo, 'DE');
});

t.test('anything else is refused', async (t) => {
  for (const geo of ['@a', 'a@', '[a', 'a[', '`a', 'a`', '{a', 'a{', '1a', 'a1', 'é1', 'éa', 'ａb', 'u', 'usa', ' u', 'u ']) {
    t.equal(withGeo(geo).code, 'invalid_parameter', JSON.stringify(geo));
  }
});
