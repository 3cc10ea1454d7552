// The pure parts of the OpenRTB lookup: the schain object form under the string form's
// rules, sua against the UA, country and page-host mapping (nbr and reason classes:
// test/signals/category.test.ts).
import t from 'tap';
import { parseSchain, SCHAIN_SHAPE, schainFromObject as fromFields } from '../../src/signals/schain.ts';
import { compileShape, prune } from '../../src/base/shape.ts';
import { bidRequestOf } from '../../src/prebid/ortb/body.ts';
import type { JsonObject, JsonValue } from '../../src/base/bounded-json.ts';
import { emptySua, suaConflict } from '../../src/signals/sua.ts';
import { countryAlpha2 } from '../../src/base/countries.ts';
import { emptyOrtbExtra, jsonString, mapBidRequest, ortbResponseTail, pageHost } from '../../src/prebid/ortb/map.ts';
import { REASON_CLASS } from '../../src/signals/category.ts';
import { P, PARAM_NAMES } from '../../src/prebid/params.ts';

/** schainFromObject of a JSON value, read by the supply chain's shape as a bid request's body is. */
const schainFromObject = (v: unknown) => fromFields(prune(v as JsonValue, compileShape(SCHAIN_SHAPE)));

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

t.test('mapBidRequest: only id and imp are required; every other field type-checked, an unusable one noted and treated as absent; sua refilled per request', async (t) => {
  const extra = emptyOrtbExtra();
  const map = (bid: Record<string, unknown>, query: Partial<Record<string, string>> = {}) => {
    const v: (string | undefined)[] = new Array(PARAM_NAMES.length).fill(undefined);
    const raw: (string | undefined)[] = new Array(PARAM_NAMES.length).fill(undefined);
    for (const [k, val] of Object.entries(query)) v[P[k as keyof typeof P]] = val;
    const err = mapBidRequest(bidRequestOf({ imp: [{ id: '1' }], ...bid } as JsonObject), v, raw, extra);
    return { err, v, unusable: extra.unusable.filter((_, i) => i % 2 === 0) };
  };
  const ok = map({ id: 'b1', device: { ip: '73.1.2.3', ua: 'UA', devicetype: 2, geo: { country: 'USA' } }, user: { buyeruid: 'u9' }, imp: [{ banner: { format: [{ w: 300, h: 250 }] } }] });
  t.equal(ok.err, null);
  t.equal(ok.v[P.ip], '73.1.2.3');
  t.equal(ok.v[P.uid], 'u9', 'buyeruid when user.id is absent');
  t.equal(ok.v[P.geo], 'US');
  t.equal(ok.v[P.adt], '1');
  t.equal(ok.v[P.dim], '300x250', 'size from format[0]');
  t.same(ok.unusable, [], 'nothing unusable');

  // The 400s: only a BidRequest without its id or imp.
  t.match(map({ id: '' }).err, { status: 400, code: 'missing_parameter', message: /field: id/ });
  t.match(map({ id: 5 }).err, { status: 400, code: 'invalid_parameter', message: /Invalid field id: must be a string/ });
  t.match(mapBidRequest(bidRequestOf({ id: 'b' }), [], [], extra), { status: 400, code: 'missing_parameter', message: /field: imp/ });
  t.match(map({ id: 'b', imp: [] }).err, { status: 400, message: /imp.*at least one/ });
  t.match(map({ id: 'b', imp: {} }).err, { status: 400, message: /Invalid field imp/ });
  t.match(map({ id: 'b', imp: ['x'] }).err, { status: 400, message: /imp\[0\]/ });

  // Anything else of the wrong type or value is absent, and named.
  const v6 = map({ id: 'b', device: { ip: '73.1.2.3', ipv6: 6 } });
  t.equal(v6.err, null);
  t.equal(v6.v[P.ip], '73.1.2.3');
  t.same(v6.unusable, ['device.ipv6'], 'ipv6 checked although ip is taken');
  t.same(map({ id: 'b', user: { id: 'u', buyeruid: 7 } }).unusable, ['user.buyeruid'], 'buyeruid checked although id is taken');
  const notIp = map({ id: 'b', device: { ip: '999.1.2.3', ipv6: '2001:db8::1' } });
  t.equal(notIp.v[P.ip], '2001:db8::1', 'an unreadable device.ip: ipv6 instead');
  t.same(notIp.unusable, ['device.ip']);
  t.same(map({ id: 'b', device: 'x', site: 5 }).unusable, ['device', 'site'], 'in reading order');
  t.same(map({ id: 'b', imp: [{ video: { w: -1 } }] }).unusable, ['imp[0].video.w']);
  t.same(map({ id: 'b', imp: [{ banner: { format: [{ w: 'x' }] } }] }).unusable, ['imp[0].banner.format[0].w']);
  t.same(map({ id: 'b', imp: [{ banner: {}, ssai: 'x' }] }).unusable, ['imp[0].ssai']);
  t.same(map({ id: 'b', device: { devicetype: 99 } }).unusable, ['device.devicetype'], 'a device type outside AdCOM\'s list');
  const geo = map({ id: 'b', device: { geo: { country: 'QQQ' } } });
  t.equal(geo.v[P.geo], undefined);
  t.same(geo.unusable, ['device.geo.country']);
  t.match(extra.unusable[1], /"QQQ".*alpha-3.*alpha-2/, 'says both forms are taken');
  t.same(map({ id: 'b', source: { ext: 'test-ext' }, regs: 'x', ext: { prebid: 1 } }).unusable, [], 'an ext ivtd finds nothing in, or a field it does not read, is no business of its');

  // The query's sid, pub, uid and dvt fill what the body lacks; the body wins.
  const filled = map({ id: 'b' }, { pub: 'qp', uid: 'qu', dvt: '4', sid: 'qs.example', ip: '1.1.1.1' });
  t.same([filled.v[P.pub], filled.v[P.uid], filled.v[P.dvt], filled.v[P.sid], filled.v[P.ip]], ['qp', 'qu', '4', 'qs.example', undefined], 'query fills; its ip is dropped');
  const body = map({ id: 'b', site: { publisher: { id: 'bp' } }, user: { id: 'bu' }, device: { devicetype: 2 } }, { pub: 'qp', uid: 'qu', dvt: '4' });
  t.same([body.v[P.pub], body.v[P.uid], body.v[P.dvt]], ['bp', 'bu', '2'], 'the body wins');

  // IFA types: a non-device ID is no IFA; the type is read from device or device.ext.
  const ppid = map({ id: 'b', device: { ifa: 'not-a-uuid', ifa_type: 'ppid' } });
  t.equal(ppid.v[P.ifa], undefined, 'a publisher-provided ID is not the device IFA');
  t.equal(extra.ifaType, 'ppid');
  const ext = map({ id: 'b', device: { ifa: '7b8b1d2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b', ext: { ifa_type: 'RIDA' } } });
  t.equal(ext.v[P.ifa], '7b8b1d2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b');
  t.equal(extra.ifaType, 'rida', 'device.ext.ifa_type, lowercased');
  map({ id: 'b', imp: [{ ssai: 1 }, { ssai: 3 }] });
  t.equal(extra.ssai, 3, 'the largest imp.ssai');

  t.equal(map({ id: 'b', device: { sua: { platform: { brand: 'Windows' }, mobile: 0, browsers: [{ brand: 'Google Chrome', version: ['124', '0'] }] } } }).err, null);
  t.match(extra.sua, { platform: 'windows', mobile: 0, chromium: true, chromiumMajor: 124 });
  t.equal(map({ id: 'b', device: {} }).err, null);
  t.equal(extra.sua, null, 'no sua: none, not the last one');
  t.equal(map({ id: 'b', device: { sua: { mobile: 1 } } }).err, null);
  t.match(extra.sua, { platform: '', mobile: 1, chromium: false, source: -1 }, "nothing kept from the earlier request's sua");
  t.ok(Number.isNaN(extra.sua!.chromiumMajor));
  t.same(map({ id: 'b', device: { sua: { browsers: 'x' } } }).unusable, ['device.sua.browsers']);
});

t.test('the answer\'s id and reasons are the JSON that JSON.stringify would write', async (t) => {
  // Every character below 0x80, then some past it and lone surrogates, alone and inside an id.
  const singles = [...Array.from({ length: 0x80 }, (_, c) => String.fromCharCode(c)), 'é', '\u2028', '\ud800', '\udc00', '\ud83d\ude00'];
  for (const c of singles) {
    t.equal(jsonString(c), JSON.stringify(c), `U+${c.charCodeAt(0).toString(16)}`);
    t.equal(jsonString(`0b6a8c52-${c}-4c1e`), JSON.stringify(`0b6a8c52-${c}-4c1e`));
  }
  t.equal(jsonString(''), '""');
  const extra = emptyOrtbExtra();
  extra.id = 'a"b\\c';
  const codes = Object.keys(REASON_CLASS);
  const reasons = [codes[0]!, 'not_a_reason', codes[codes.length - 1]!];
  const tail = JSON.parse(`{"x":0${ortbResponseTail(extra, { reasons } as never, 12)}}`);
  t.same(tail, {
    x: 0,
    id: 'a"b\\c',
    nbr: 12,
    reasons: [{ code: codes[0], class: REASON_CLASS[codes[0]!] }, { code: codes[codes.length - 1], class: REASON_CLASS[codes[codes.length - 1]!] }],
    missing: [],
  }, 'a code without a class is left out; the others keep their order');
});
