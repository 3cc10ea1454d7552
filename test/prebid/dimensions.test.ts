// fillDimensions (src/prebid/dimensions.ts) writes every TUPLE_DIMENSIONS position, each
// from its own source, and passes request and UA text through clipDim: a dimension added to
// enums.ts without its line here leaves a position unwritten, and this test names it.
import t from 'tap';
import { TUPLE_DIMENSIONS, type TupleDimension } from '../../src/base/enums.ts';
import { fillDimensions } from '../../src/prebid/dimensions.ts';
import { emptySignals } from '../../src/prebid/gather.ts';
import { emptyRequest } from '../../src/prebid/validate.ts';
import { DIM_VALUE_MAX, SEP } from '../../src/counts/tuple.ts';

const UNWRITTEN = '\u0000unwritten';

function filled(edit: (r: ReturnType<typeof emptyRequest>, s: ReturnType<typeof emptySignals>) => void, category = 'none' as const): Record<TupleDimension, string> {
  const r = emptyRequest();
  const s = emptySignals();
  edit(r, s);
  const out = new Array<string>(TUPLE_DIMENSIONS.length).fill(UNWRITTEN);
  fillDimensions(r, s, category, out);
  return Object.fromEntries(TUPLE_DIMENSIONS.map((d, i) => [d, out[i]!])) as Record<TupleDimension, string>;
}

t.test('every position is written, each from its own source', async (t) => {
  const v = filled((r, s) => {
    Object.assign(r, { pub: 'pub-1', sid: 'ssp.example', app: 'com.example.app', dmn: 'news.example', node: 'bidder-7', adt: 3, geo: 'de', dvt: 4, cmp: 'cmp-9', adv: 'adv-2', p1: 'a', p2: 'b', p3: 'c', p4: 'd', p5: 'e' });
    s.ua.os = 'android';
    s.ua.browser = 'chrome';
  });
  for (const d of TUPLE_DIMENSIONS) t.not(v[d], UNWRITTEN, `${d} is written`);
  t.same(v, {
    pub: 'pub-1', sid: 'ssp.example', app: 'com.example.app', dmn: 'news.example', node: 'bidder-7', adt: '3', geo: 'de', dvt: '4',
    os: 'android', browser: 'chrome', env: 'app', cmp: 'cmp-9', adv: 'adv-2', p1: 'a', p2: 'b', p3: 'c', p4: 'd', p5: 'e', category: 'none',
  });
});

t.test('the IP country stands in for a missing geo; env follows app and dvt', async (t) => {
  const v = filled((r, s) => {
    r.dvt = 8;
    s.ip.country = 'fr';
  });
  t.equal(v.geo, 'fr');
  t.equal(v.env, 'dooh');
  t.equal(v.app, '');
  t.equal(filled(() => {}).env, 'site');
});

t.test('request and UA text is clipped and kept free of the separator', async (t) => {
  const long = 'x'.repeat(DIM_VALUE_MAX + 50);
  const v = filled((r, s) => {
    r.pub = long;
    r.p3 = `a${SEP}b`;
    r.geo = `d${SEP}`;
    s.ua.browser = `odd${SEP}`;
  });
  t.equal(v.pub.length, DIM_VALUE_MAX);
  t.equal(v.p3, 'a\ufffdb');
  t.equal(v.geo, 'd\ufffd');
  t.equal(v.browser, 'odd\ufffd');
});
