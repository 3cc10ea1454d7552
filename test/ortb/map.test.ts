// The pure parts of the OpenRTB lookup: the schain object form under the string form's
// rules, sua against the UA, country and page-host mapping (nbr and reason classes:
// test/signals/category.test.ts).
import t from 'tap';
import { parseSchain, schainFromObject } from '../../src/signals/schain.ts';
import { emptySua, suaConflict } from '../../src/signals/sua.ts';
import { countryAlpha2 } from '../../src/countries.ts';
import { emptyOrtbExtra, mapBidRequest, pageHost } from '../../src/ortb/map.ts';
import { P, PARAM_NAMES } from '../../src/prebid/params.ts';

t.test('schain object form follows the string form', async (t) => {
  const node = { asi: 'exchange1.example', sid: '1234', hp: 1, rid: 'r', name: 'n', domain: 'd.example' };
  const o = schainFromObject({ ver: '1.0', complete: 1, nodes: [node] });
  t.same(o, parseSchain('1.0,1!exchange1.example,1234,1,r,n,d.example'), 'same chain as its string');
  t.match(schainFromObject({ ver: '1', complete: 1, nodes: [node] }), { ok: false, error: 'bad_version' });
  t.match(schainFromObject({ ver: '1.0', complete: '1', nodes: [node] }), { ok: false, error: 'bad_complete' });
  t.match(schainFromObject({ ver: '1.0', complete: 1, nodes: [] }), { ok: false, error: 'no_nodes' });
  t.match(schainFromObject({ ver: '1.0', complete: 1, nodes: [{ ...node, asi: ' ' }] }), { ok: false, error: 'empty_asi' });
  t.match(schainFromObject({ ver: '1.0', complete: 1, nodes: [{ ...node, hp: 2 }] }), { ok: false, error: 'bad_hp' });
  t.match(schainFromObject('1.0,1!a,b,1'), { ok: false, error: 'bad_header' }, 'a string where the object belongs');
  t.match(schainFromObject({ ver: '1.0', complete: 0, nodes: [{ ...node, rid: 5 }] }), { ok: true, chain: { complete: 0, nodes: [{ rid: '' }] } }, 'optional field of another type dropped');
});

t.test('sua against the UA', async (t) => {
  const win = { os: 'windows', browser: 'chrome', device: 'desktop', blinkMajor: 124, browserMajor: 124 } as const;
  const sua = (o: Partial<ReturnType<typeof emptySua>>) => ({ ...emptySua(), ...o });
  t.equal(suaConflict(sua({ platform: 'windows', chromium: true, chromiumMajor: 124, source: 2 }), win), '', 'agreeing hints');
  t.equal(suaConflict(sua({}), win), '', 'empty sua says nothing');
  t.equal(suaConflict(sua({ platform: 'macos' }), win), 'platform');
  t.equal(suaConflict(sua({ mobile: 1 }), win), 'mobile');
  t.equal(suaConflict(sua({ chromium: true, chromiumMajor: 120 }), win), 'version');
  t.equal(suaConflict(sua({ chromium: true }), { os: 'windows', browser: 'firefox', device: 'desktop', blinkMajor: NaN, browserMajor: 125 }), 'browser');
  t.equal(suaConflict(sua({ platform: 'macos' }), { os: 'ios', browser: 'safari', device: 'tablet', blinkMajor: NaN, browserMajor: 17 }), '', 'iPad in desktop mode');
});

t.test('country and page host', async (t) => {
  t.equal(countryAlpha2('USA'), 'US');
  t.equal(countryAlpha2('gbr'), 'GB');
  t.equal(countryAlpha2('DE'), 'DE', 'alpha-2 taken as is');
  t.equal(countryAlpha2('XYZ'), null);
  t.equal(countryAlpha2('U'), null);
  t.equal(countryAlpha2('ZZ'), null, 'two letters that are no country');
  t.equal(countryAlpha2('XKX'), 'XK', 'Kosovo, user-assigned');
  t.equal(pageHost('https://www.Blog.example:443/p?q#f'), 'www.blog.example');
  t.equal(pageHost('//cdn.example/x'), 'cdn.example');
  t.equal(pageHost('https://u:p@h.example'), 'h.example');
  t.equal(pageHost('not a url'), '');
});

t.test('mapBidRequest: every field type-checked, the first bad one named; sua refilled per request', async (t) => {
  const extra = emptyOrtbExtra();
  const map = (bid: Record<string, unknown>) => {
    const v: (string | undefined)[] = new Array(PARAM_NAMES.length).fill(undefined);
    const raw: (string | undefined)[] = new Array(PARAM_NAMES.length).fill(undefined);
    return { err: mapBidRequest(bid as never, v, raw, extra), v };
  };
  const ok = map({ id: 'b1', device: { ip: '73.1.2.3', ua: 'UA', devicetype: 2, geo: { country: 'USA' } }, user: { buyeruid: 'u9' }, imp: [{ banner: { format: [{ w: 300, h: 250 }] } }] });
  t.equal(ok.err, null);
  t.equal(ok.v[P.ip], '73.1.2.3');
  t.equal(ok.v[P.uid], 'u9', 'buyeruid when user.id is absent');
  t.equal(ok.v[P.geo], 'US');
  t.equal(ok.v[P.adt], '1');
  t.equal(ok.v[P.dim], '300x250', 'size from format[0]');
  t.match(map({ id: 'b', device: { ip: '73.1.2.3', ipv6: 6 } }).err, { status: 400, message: /device\.ipv6: must be a string/ }, 'ipv6 checked although ip is taken');
  t.match(map({ id: 'b', user: { id: 'u', buyeruid: 7 } }).err, { status: 400, message: /user\.buyeruid/ }, 'buyeruid checked although id is taken');
  t.match(map({ id: 'b', device: 'x', site: 5 }).err, { message: /Invalid field device:/ }, 'the first bad field in reading order');
  t.match(map({ id: 'b', imp: [{ video: { w: -1 } }] }).err, { message: /imp\[0\]\.video\.w: must be a non-negative integer/ });
  t.match(map({ id: 'b', imp: [{ banner: { format: [{ w: 'x' }] } }] }).err, { message: /imp\[0\]\.banner\.format\[0\]\.w/ });
  t.match(map({ id: '' }).err, { code: 'missing_parameter' });
  t.match(map({ id: 'b', device: { geo: { country: 'QQQ' } } }).err, { message: /device\.geo\.country: "QQQ"/ });

  t.equal(map({ id: 'b', device: { sua: { platform: { brand: 'Windows' }, mobile: 0, browsers: [{ brand: 'Google Chrome', version: ['124', '0'] }] } } }).err, null);
  t.match(extra.sua, { platform: 'windows', mobile: 0, chromium: true, chromiumMajor: 124 });
  t.equal(map({ id: 'b', device: {} }).err, null);
  t.equal(extra.sua, null, 'no sua: none, not the last one');
  t.equal(map({ id: 'b', device: { sua: { mobile: 1 } } }).err, null);
  t.match(extra.sua, { platform: '', mobile: 1, chromium: false, source: -1 }, "nothing kept from the earlier request's sua");
  t.ok(Number.isNaN(extra.sua!.chromiumMajor));
});
