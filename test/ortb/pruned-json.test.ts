// The bid request's fast parse (src/prebid/ortb/pruned-json.ts): it builds what JSON.parse builds,
// read by the mapping's shape (src/base/shape.ts), as prune() reads JSON.parse's value; and
// whatever it accepts, the reference (parseBoundedJson) accepts to the same value: on
// anything else it bails (null) and the reference decides. The fixtures, the client shapes
// and random mutations of them are the evidence.
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { isJsonObject, parseBoundedJson, type JsonLimits, type JsonValue } from '../../src/base/bounded-json.ts';
import { parsePruned } from '../../src/prebid/ortb/pruned-json.ts';
import { compileShape, Fields, prune, WHOLE, type Compiled, type JsonShape, type Pruned } from '../../src/base/shape.ts';
import { BID_REQUEST_SHAPE, emptyOrtbExtra, mapBidRequest } from '../../src/prebid/ortb/map.ts';
import { bidRequestFrom, bidRequestOf, ORTB_JSON_LIMITS, ORTB_MAX_JSON_BYTES } from '../../src/prebid/ortb/body.ts';
import { PARAM_NAMES } from '../../src/prebid/params.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';

type Shape = { readonly [key: string]: JsonShape };
const enc = new TextEncoder();
const BID_REQUEST = compileShape(BID_REQUEST_SHAPE);
/** The fast path's value as a plain object (plain()), or null when it bails. */
const fast = (text: string, limits: JsonLimits = ORTB_JSON_LIMITS, shape: Compiled = BID_REQUEST) => {
  const bytes = enc.encode(text);
  const got = parsePruned(bytes, limits, shape);
  return got === null ? null : plain(got, shape);
};

/** What the fast path must build, as a plain object: JSON.parse's value with the keys outside `shape` left out. */
function pruned(v: JsonValue, shape: JsonShape): JsonValue {
  if (shape === WHOLE) return v;
  if (Array.isArray(shape)) return Array.isArray(v) ? v.map((e) => pruned(e, (shape as unknown as readonly [JsonShape])[0])) : v;
  if (!isJsonObject(v)) return v;
  const o: Record<string, JsonValue> = {};
  for (const k of Object.keys(v)) if (Object.hasOwn(shape, k)) o[k] = pruned(v[k]!, (shape as Shape)[k]!);
  return o;
}

/** A value read by `shape` as a plain JSON value: each Fields an object of the keys it has (a Fields where the shape reads no object would be wrong). */
function plain(v: Pruned, shape: Compiled | null): JsonValue {
  if (v instanceof Fields) {
    if (shape === null || shape.elem !== undefined) throw new Error('a Fields where the shape reads no object');
    const o: Record<string, JsonValue> = {};
    shape.keys.forEach((k, i) => {
      const x = v.at[i];
      if (x !== undefined) o[k] = plain(x, shape.shapes[i]!);
    });
    return o;
  }
  if (Array.isArray(v)) return v.map((e) => plain(e, shape === null ? null : shape.elem ?? null));
  if (isJsonObject(v) && shape !== null && shape.elem === undefined) throw new Error('a plain object where the shape reads one');
  return v as JsonValue;
}

/** A Prebid-like bid request with every place ivtd reads and the ext trees it steps over. */
function prebidLike(i: number): object {
  return {
    id: `req-${i}`,
    imp: [
      { id: '1', banner: { format: [{ w: 300, h: 250 }, { w: 728, h: 90 }], pos: 1 }, bidfloor: 0.5, ext: { prebid: { bidder: { a: { placementId: 13144370 }, b: { accountId: 1001, zoneId: 535510 } } }, gpid: `/1234/home#div-${i}` } },
      { id: '2', ssai: i % 4, video: { mimes: ['video/mp4'], w: 640, h: 480, protocols: [2, 3] } },
    ],
    site: { id: 's', domain: 'news.example', page: `https://news.example/a/${i}?q=1&r=\u00e9`.replace('\u00e9', 'e'), cat: ['IAB12'], publisher: { id: `pub-${i % 7}`, name: 'News' }, ext: { amp: 0 } },
    device: {
      ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      ip: `81.2.69.${i % 250}`, devicetype: 2, ifa_type: 'ppid', ifa: 'f0e1d2c3', w: 1920, h: 1080, js: 1, dnt: 0,
      geo: { country: 'USA', region: 'CA', lat: 37.77, lon: -122.41, utcoffset: -420 },
      sua: { source: 2, platform: { brand: 'Windows', version: ['10', '0'] }, browsers: [{ brand: 'Chromium', version: ['124', '0'] }, { brand: 'Google Chrome', version: ['124'] }], mobile: 0, bitness: '64' },
      ext: { ifa_type: 'aaid', atts: 3 },
    },
    user: { id: `u-${i}`, buyeruid: `b-${i}`, ext: { consent: 'CPzHq4APzHq4AAHABBENC-CgAP_AAH_AAAqIHWtf_X_fb39j', eids: [{ source: 'id5-sync.com', uids: [{ id: `ID5*${i}`, atype: 1 }] }] } },
    source: { tid: `t-${i}`, schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange1.example', sid: '1234', hp: 1, rid: `r-${i}`, name: 'n', domain: 'd.example', ext: { x: 1 } }] }, ext: { schain: { ver: '1.0', complete: 0, nodes: [] } } },
    regs: { coppa: 0, ext: { gdpr: 0, us_privacy: '1YNN', gpp_sid: [7] } },
    ext: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'x.example', sid: '9', hp: 0 }] }, prebid: { auctiontimestamp: 1716200000000 + i, targeting: { includewinners: true }, cache: { bids: {} } } },
    tmax: 1000, cur: ['USD'], at: 1, test: false, bcat: null,
  };
}

const DIR = join(import.meta.dirname, '..', 'fixtures', 'ortb');
const bodies: [string, string][] = [];
for (const kind of ['exemplary', 'supplemental']) {
  for (const f of readdirSync(join(DIR, kind)).sort()) bodies.push([`${kind}/${f}`, JSON.stringify((JSON.parse(readFileSync(join(DIR, kind, f), 'utf8')) as { request: unknown }).request)]);
}
for (const [name, bid] of Object.entries(SHAPES)) bodies.push([`shape: ${name}`, JSON.stringify(bid)]);
for (let i = 0; i < 4; i++) bodies.push([`prebid-like ${i}`, JSON.stringify(prebidLike(i))]);

t.test('builds what JSON.parse builds, less the keys outside the shape: compact, pretty-printed and escaped', async (t) => {
  for (const [name, text] of bodies) {
    // Pretty-printed; and every "/" sent as "\/", as some encoders do (escapes in values).
    const variants = [
      ['compact', text],
      ['pretty', JSON.stringify(JSON.parse(text), null, 2)],
      ['escaped', text.replaceAll('/', '\\/')],
      // Characters past ASCII (two, three and four bytes in UTF-8), in values read and not, in keys, beside escapes.
      ['past ASCII', text.replaceAll('example', 'exämple€').replaceAll('Mozilla', 'Mozilla😀').replace('{"id":', '{"ñame":"x\\/ü","id":')],
    ] as const;
    for (const [how, doc] of variants) {
      const got = fast(doc);
      t.not(got, null, `${name} (${how}): taken by the fast path`);
      const want = pruned(JSON.parse(doc) as JsonValue, BID_REQUEST_SHAPE);
      t.same(got, want, `${name} (${how}): the pruned value`);
      t.same(plain(prune(JSON.parse(doc) as JsonValue, BID_REQUEST), BID_REQUEST), want, `${name} (${how}): prune() reads JSON.parse's value the same`);
    }
  }
});

t.test('the mapping maps the fast path\'s value as the reference\'s (prune() of JSON.parse)', async (t) => {
  // (It reads fields only at their indexes in BID_REQUEST_SHAPE: a field the shape lacks cannot be read.)
  for (const [name, text] of bodies) {
    const a = { v: new Array<string | undefined>(PARAM_NAMES.length), raw: new Array<string | undefined>(PARAM_NAMES.length), x: emptyOrtbExtra() };
    const b = { v: new Array<string | undefined>(PARAM_NAMES.length), raw: new Array<string | undefined>(PARAM_NAMES.length), x: emptyOrtbExtra() };
    const bytes = enc.encode(text);
    const errA = mapBidRequest(bidRequestOf(JSON.parse(text)), a.v, a.raw, a.x);
    const errB = mapBidRequest(parsePruned(bytes, ORTB_JSON_LIMITS, BID_REQUEST)!, b.v, b.raw, b.x);
    t.same(errB, errA, `${name}: same refusal`);
    t.same(b.v, a.v, `${name}: same values`);
    t.same({ ...b.x, ip: null }, { ...a.x, ip: null }, `${name}: same extra (schain, sua, ifa type, ssai, missing, unusable)`);
  }
});

t.test('bails, never accepts, on what the reference refuses', async (t) => {
  const refused = [
    '{"id":"1","imp":[],"ext":{"a":1,"a":2}}', // a duplicate in a tree it steps over
    '{"id":"1","imp":[],"ext":{"__proto__":{"x":1}}}',
    '{"id":"1","imp":[],"ext":{"constructor":1}}',
    '{"id":"1","imp":[],"ext":{"prototype":1}}',
    '{"id":"1","imp":[],"device":{"__proto__":1}}', // and in an object it builds
    '{"id":"1","imp":[],"user":{"ext":{"n":1e400}}}',
    '{"id":"1","imp":[],"regs":{"s":"a\u0001b"}}',
    '{"id":"1","imp":[],"regs":{"s":"\\x"}}',
    '{"id":"1","imp":[],"regs":[1,]}',
    '{"id":"1","imp":[],"regs":{"a":01}}',
    '{"id":"1","imp":[],"regs":{"a":tru}}',
    '{"id":"1","imp":[]} x',
    '{"id":"1","imp":[],"regs":{"a":"unterminated}}',
    '{"id":"1","imp":[]',
    '[{"id":"1"}]',
    `{"id":"1","imp":[],"ext":${'{"a":'.repeat(40)}1${'}'.repeat(40)}}`, // nesting past the limit
    `{"id":"1","imp":[],"ext":[${new Array(1001).fill(0).join(',')}]}`, // an array past the limit
    `{"id":"1","imp":[],"ext":{${new Array(257).fill(0).map((_, i) => `"k${i}":0`).join(',')}}}`, // keys past the limit
  ];
  for (const doc of refused) {
    t.equal(fast(doc), null, `bails: ${doc.slice(0, 60)}`);
    t.notOk(parseBoundedJson(doc, ORTB_JSON_LIMITS).ok && doc.startsWith('{'), `and the reference refuses it: ${doc.slice(0, 60)}`);
  }
  // Cases it leaves to the reference though they are valid: the reference takes them.
  // (A lone surrogate the reference reads as U+FFFD.)
  for (const doc of ['{"i\\u0064":"1","imp":[]}', '{"id":"\\ud83d\\ude00","imp":[]}', '{"id":"1","imp":[],"regs":{"s":"\\ud800"}}', `{"id":"1","imp":[],"ext":{${new Array(100).fill(0).map((_, i) => `"k${i}":0`).join(',')}}}`]) {
    t.equal(fast(doc), null, `left to the reference: ${doc.slice(0, 40)}`);
    const r = bidRequestFrom(enc.encode(doc), false);
    t.ok(r.ok, `which takes it: ${doc.slice(0, 40)}`);
  }
});

t.test('bytes that are not UTF-8: the fast path bails (its scan finds them only past ASCII, in strings), the body is refused as not UTF-8', async (t) => {
  const head = enc.encode('{"id":"1","imp":[],"site":{"page":"a');
  const tail = enc.encode('b"},"user":{"id":"u"}}');
  const broken: Array<[string, number[]]> = [
    ['a lone continuation byte', [0x80]],
    ['a sequence cut short', [0xc3]],
    ['a three-byte sequence cut short', [0xe2, 0x82]],
    ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ['a surrogate encoded in UTF-8', [0xed, 0xa0, 0x80]],
    ['past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['Latin-1 é', [0xe9]],
  ];
  for (const [what, bytes] of broken) {
    for (const where of ['in a value read', 'in a value stepped over']) {
      const doc = where === 'in a value read' ? new Uint8Array([...head, ...bytes, ...tail]) : new Uint8Array([...enc.encode('{"id":"1","imp":[],"regs":{"s":"'), ...bytes, ...enc.encode('"}}')]);
      t.equal(parsePruned(doc, ORTB_JSON_LIMITS, BID_REQUEST), null, `${what}, ${where}: bails`);
      t.match(bidRequestFrom(doc, false), { ok: false, error: { status: 400, code: 'bad_encoding', message: 'The body is not valid UTF-8.' } }, `${what}, ${where}: refused as not UTF-8`);
    }
  }
  const outside = new Uint8Array([...enc.encode('{"id":"1","imp":[]'), 0xc3, 0xa9, ...enc.encode('}')]);
  t.equal(parsePruned(outside, ORTB_JSON_LIMITS, BID_REQUEST), null, 'a character past ASCII outside a string: bails');
  t.match(bidRequestFrom(outside, false), { ok: false, error: { code: 'invalid_request' } }, 'UTF-8, but no JSON');
  const good = new Uint8Array([...head, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, ...tail]);
  t.same(plain(parsePruned(good, ORTB_JSON_LIMITS, BID_REQUEST)!, BID_REQUEST), { id: '1', imp: [], site: { page: 'aé€😀b' }, user: { id: 'u' } }, 'UTF-8 past ASCII: read as such');
  const after = new Uint8Array([...enc.encode('{"id":"1","imp":[]}')]);
  t.same(plain(parsePruned(after, ORTB_JSON_LIMITS, BID_REQUEST)!, BID_REQUEST), { id: '1', imp: [] }, 'and an ASCII body scanned after one is read as ASCII');
});

t.test('duplicate keys: found wherever they are in an object, also past the scan\'s key filter; distinct keys whose filter bits collide are kept', async (t) => {
  // The scan keeps a 64-bit filter of each object's keys (length, first and last byte; at most 64 keys, past which the reference reads the body) and
  // compares a key with the object's others only when its bit is set already.
  const keys = Array.from({ length: 59 }, (_, i) => `k${String.fromCharCode(97 + (i % 26))}${i}x`);
  // Same length, first and last byte, different middles: the same filter bit, no duplicate.
  const colliding = ['aXa', 'aYa', 'aZa', 'a_a', 'a-a'];
  const docOf = (ks: string[], where: 'ext' | 'device') => `{"id":"1","imp":[],"${where}":{${ks.map((k, i) => `"${k}":${i}`).join(',')}}}`;
  for (const where of ['ext', 'device'] as const) {
    for (const ks of [keys, colliding, [...colliding, ...keys]]) {
      const doc = docOf(ks, where);
      t.not(fast(doc), null, `${where}: ${ks.length} distinct keys are taken`);
      t.ok(parseBoundedJson(doc, ORTB_JSON_LIMITS).ok);
    }
    for (const [a, b] of [[0, 1], [0, 58], [30, 58], [57, 58], [0, 30]] as const) {
      const ks = keys.slice();
      ks[b] = ks[a]!;
      const doc = docOf(ks, where);
      t.equal(fast(doc), null, `${where}: key ${a} again at ${b} is a duplicate`);
      t.notOk(parseBoundedJson(doc, ORTB_JSON_LIMITS).ok, 'the reference refuses it too');
    }
    const twice = docOf([...colliding, 'aYa'], where);
    t.equal(fast(twice), null, `${where}: a duplicate among keys of one filter bit`);
    // The filter is the object's own: the same keys in a sibling and in a nested object are no duplicates.
    const nested = `{"id":"1","imp":[],"${where}":{"a":{"a":1,"b":{"a":2}},"b":{"a":3}},"regs":{"a":4}}`;
    t.not(fast(nested), null, `${where}: the same keys in sibling and nested objects are taken`);
  }
});

t.test('numbers it builds are JSON.parse\'s: whole ones of up to nine digits read from the bytes, the rest by Number', async (t) => {
  const numbers = ['0', '7', '10', '300', '999999999', '123456789', '1000000000', '9999999999', '12345678901234567890', '-0', '-3', '1.5', '10.0', '0.25', '1e2', '1E+2', '2e-3', '-1.5e10', '123456789.5'];
  for (const n of numbers) {
    const doc = `{"id":"1","imp":[{"banner":{"w":${n},"h":${n},"format":[{"w":${n},"h":1}]}}],"device":{"devicetype":${n},"sua":{"mobile":${n}}}}`;
    const got = fast(doc);
    t.not(got, null, n);
    t.same(got, pruned(JSON.parse(doc), BID_REQUEST_SHAPE), `${n} as JSON.parse reads it`);
    t.ok(Object.is((got as any).device.devicetype, JSON.parse(n)), `${n}: the same number (-0 too)`);
  }
});

t.test('limits: at each limit it builds, one past it it bails (small limits)', async (t) => {
  const lim: JsonLimits = { maxDepth: 4, maxArrayLength: 3, maxObjectKeys: 3 };
  const cases: [string, boolean][] = [
    ['{"ext":{"a":{"b":[1]}}}', true],
    ['{"ext":{"a":{"b":[[1]]}}}', false],
    ['{"ext":[1,2,3]}', true],
    ['{"ext":[1,2,3,4]}', false],
    ['{"imp":[{},{},{}]}', true],
    ['{"imp":[{},{},{},{}]}', false],
    ['{"ext":{"a":1,"b":2,"c":3}}', true],
    ['{"ext":{"a":1,"b":2,"c":3,"d":4}}', false],
    ['{"id":1,"imp":2,"ext":3}', true],
    ['{"id":1,"imp":2,"ext":3,"x":4}', false],
  ];
  for (const [doc, ok] of cases) {
    t.equal(fast(doc, lim) !== null, ok, `${ok ? 'builds' : 'bails on'} ${doc}`);
    t.equal(parseBoundedJson(doc, lim).ok, ok, `the reference agrees on ${doc}`);
  }
});

t.test('random mutations: whatever the fast path takes, the reference takes, to the same value', async (t) => {
  let seed = 0x2f6e5a9c;
  const rnd = (n: number) => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return Math.floor((seed / 2 ** 32) * n);
  };
  const ALPHABET = [...'{}[]",:\\0123456789eE+-. \n\tatrufnlsu\u0001"', 'é', '€', '😀'];
  let taken = 0, bailed = 0;
  const wrong: string[] = [];
  for (let n = 0; n < 30_000; n++) {
    let doc = bodies[rnd(bodies.length)]![1];
    for (let m = 1 + rnd(3); m > 0; m--) {
      const at = rnd(doc.length + 1);
      switch (rnd(4)) {
        case 0: doc = doc.slice(0, at) + doc.slice(at + 1); break; // delete one
        case 1: doc = doc.slice(0, at) + ALPHABET[rnd(ALPHABET.length)]! + doc.slice(at); break; // insert one
        case 2: { const len = 1 + rnd(12); doc = doc.slice(0, at) + doc.slice(at, at + len) + doc.slice(at); break; } // repeat a run (duplicate keys, nesting)
        default: { const from = rnd(doc.length); doc = doc.slice(0, at) + doc.slice(from, from + 1 + rnd(6)) + doc.slice(at + 1); } // overwrite
      }
    }
    if (!doc.isWellFormed()) continue; // a split surrogate pair: no UTF-8 body decodes to it (bodyText refuses one that is not UTF-8)
    const got = fast(doc);
    if (got === null) {
      bailed++;
      continue;
    }
    taken++;
    const ref = parseBoundedJson(doc, ORTB_JSON_LIMITS);
    if (!ref.ok || !isJsonObject(ref.value)) wrong.push(`accepted what the reference refuses: ${doc}`);
    else if (!isDeepStrictEqual(got, pruned(ref.value, BID_REQUEST_SHAPE))) wrong.push(`built another value: ${doc}`);
  }
  t.same(wrong.slice(0, 3), [], `no mutation accepted wrongly (${wrong.length} of ${taken} taken)`);
  t.ok(taken > 5_000 && bailed > 5_000, `both outcomes were tried (${taken} taken, ${bailed} bailed)`);
});

t.test('the scan\'s own bounds: a full tape, a body at the size limit, numbers to check, shapes in turn', async (t) => {
  // 1 000 impressions of 2 formats each (14 000 records, 52 KB): more than the scan's tape holds; the reference takes the body.
  const imps = new Array(1000).fill(0).map(() => ({ banner: { format: [{ w: 1, h: 1 }, { w: 1, h: 1 }] } }));
  const many = JSON.stringify({ id: 'r', imp: imps });
  t.equal(fast(many), null, 'a tape past its records: left to the reference');
  const r = bidRequestFrom(enc.encode(many), false);
  t.ok(r.ok && (plain(r.bid, BID_REQUEST) as { imp: JsonValue[] }).imp.length === 1000, 'which builds it whole');
  const fewer = JSON.stringify({ id: 'r', imp: imps.slice(0, 100) });
  t.same(fast(fewer), pruned(JSON.parse(fewer) as JsonValue, BID_REQUEST_SHAPE), '100 impressions fit and build as JSON.parse does');

  // A body of the largest size accepted whose last string ends 0–17 bytes before its end (the 16-byte loads read past it).
  const head = '{"id":"r","imp":[{"id":"1"}],"site":{"page":"';
  const tail = '"}}';
  const max = ORTB_MAX_JSON_BYTES;
  for (const pad of [0, 1, 15, 16, 17]) {
    const doc = head + 'p'.repeat(max - head.length - tail.length - pad) + tail + ' '.repeat(pad);
    t.equal(doc.length, max);
    t.equal(((fast(doc) as { site?: { page: string } } | null)?.site)?.page.length, max - head.length - tail.length - pad, `a ${max}-byte body builds (${pad} trailing spaces)`);
  }
  t.equal(fast(head + 'p'.repeat(max - head.length - tail.length + 1) + tail), null, 'one byte more: left to the size check');
  t.equal(fast(head + 'p'.repeat(40)), null, 'a string the body ends in: refused');

  // Numbers with an exponent are checked where they are built and where they are stepped over.
  t.same(fast('{"id":"1","imp":[{"ssai":2e0}],"ext":{"n":-1.5E+300}}'), { id: '1', imp: [{ ssai: 2 }], ext: {} });
  t.equal(fast('{"id":"1","imp":[{"ssai":2e999}]}'), null, 'one out of range where it is built');

  // Keys one byte away from a prototype's name are ordinary keys.
  t.same(fast('{"id":"1","imp":[],"ext":{"__proto_x":1,"prototypf":2,"constructos":3,"_prototype":4}}'), { id: '1', imp: [], ext: {} });

  // Two shapes in turn: each scan reads its own.
  const other = compileShape({ ext: { n: WHOLE } });
  const doc = enc.encode('{"id":"1","imp":[],"ext":{"n":5,"m":6}}');
  for (let i = 0; i < 3; i++) {
    t.same(plain(parsePruned(doc, ORTB_JSON_LIMITS, other)!, other), { ext: { n: 5 } });
    t.same(plain(parsePruned(doc, ORTB_JSON_LIMITS, BID_REQUEST)!, BID_REQUEST), { id: '1', imp: [], ext: {} });
  }
});
