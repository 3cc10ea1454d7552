import t from 'tap';
import { HASH, hashString } from '../../src/memory/hash.ts';
import { QueryScanner, queryScanWasm } from '../../src/prebid/query.ts';
import { P, PARAM_NAMES, paramIndexAt } from '../../src/prebid/params.ts';
import { emptyRequest, validateAuth, validateRequest } from '../../src/prebid/validate.ts';
import { hashUa } from '../../src/signals/ua-cache.ts';

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
const BASE = `p=0b8e9a7e-5b1c-4f7e-9d2a-1c3b5d7f9a2b&k=ivp_x&pub=pub1&node=n1&ip=81.2.69.142&ua=${UA}&uid=u1&sid=ex.com&adt=1&dvt=2`;

function scan(q: string) {
  const s = new QueryScanner();
  return { s, err: s.scan(q) };
}

t.test('scanner decodes values and ignores unknown parameters', async (t) => {
  const { s, err } = scan(`schain=1.0,1!a.com,1,1&${BASE}&rid=xyz&foo=bar&cb=a+b`);
  t.equal(err, null);
  t.equal(s.values[P.ua], decodeURIComponent(UA));
  t.equal(s.values[P.cb], 'a b', '+ is a space');
  t.equal(s.raw[P.schain], '1.0,1!a.com,1,1', 'raw value kept for schain');
  t.equal(s.values[P.pub], 'pub1');
});

t.test('parameter names are found in place, and only the exact ones', async (t) => {
  for (let i = 0; i < PARAM_NAMES.length; i++) {
    const n = PARAM_NAMES[i]!;
    t.equal(paramIndexAt(`x&${n}=1`, 2, 2 + n.length), i, n);
    t.equal(paramIndexAt(`${n}x`, 0, n.length + 1), -1, `${n}x is not ${n}`);
    if (n.length > 1) t.equal(paramIndexAt(n, 1, n.length), PARAM_NAMES.indexOf(n.slice(1) as never), `the tail of ${n}`);
  }
  for (const other of ['', 'rid', 'foo', 'schaim', 'schains', 'uıd', 'u\u0169d', 'p\u0170', '\u0170', 'ua\u0000', '%75a']) {
    t.equal(paramIndexAt(other, 0, other.length), -1, JSON.stringify(other));
  }
  // A character past ASCII must not alias the ASCII one sharing its low byte (0x170 vs 0x70 "p").
  t.equal(paramIndexAt(String.fromCharCode(0x170), 0, 1), -1);
});

t.test('every parameter is found by its name by both first passes, and only by its exact name', async (t) => {
  for (const useWasm of [true, false]) {
    const s = new QueryScanner(undefined, useWasm);
    for (let i = 0; i < PARAM_NAMES.length; i++) {
      const n = PARAM_NAMES[i]!;
      t.equal(s.scan(`rid=1&${n}=v${i}&zz=2`), null);
      t.equal(s.values.filter((v) => v !== undefined).join(','), `v${i}`, `${n} (${useWasm ? 'WebAssembly' : 'JavaScript'})`);
      // Longer, shorter, and 8 or 9 characters long: no slot filled.
      for (const other of [`${n}x`, n.slice(1), `${n}xxxxxxxx`.slice(0, 8), `${n}xxxxxxxxx`.slice(0, 9), `x${n}`]) {
        if ((PARAM_NAMES as readonly string[]).includes(other) || other === '') continue;
        t.equal(s.scan(`${other}=w`), null);
        if (s.values.some((v) => v !== undefined)) t.fail(`${other} filled a slot`);
      }
    }
  }
});

t.test('scanner resets between requests', async (t) => {
  const s = new QueryScanner();
  t.equal(s.scan(`${BASE}&geo=us`), null);
  t.equal(s.values[P.geo], 'us');
  t.equal(s.scan(BASE), null);
  t.equal(s.values[P.geo], undefined);
});

t.test('forbidden raw characters are rejected, encoded ones are fine', async (t) => {
  for (const ch of ['#', '@', '=', ';']) {
    const { err } = scan(`${BASE}&cb=a${ch}b`);
    t.equal(err?.code, 'forbidden_character', `raw ${ch}`);
    t.match(err?.message, /cb/, 'names the parameter');
  }
  t.equal(scan(`${BASE}&cb=a%3Bb%23c%40d%3De`).err, null, 'encoded ; # @ = pass');
});

t.test('a forbidden character, a raw = or an escape anywhere in a long value is found (every byte of the 16 the WebAssembly pass steps over)', async (t) => {
  const fast = new QueryScanner();
  const slow = new QueryScanner();
  const long = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'.toLowerCase();
  let checked = 0;
  for (const ch of ['#', '@', ';', '=', '\u0000', '\u001f', '\u007f', '&', '%zz', '%41', '+']) {
    for (let at = 0; at <= 40; at++) {
      for (const where of ['cb', 'ua']) {
        const value = long.slice(0, at) + ch + long.slice(at);
        const q = where === 'cb' ? `${BASE}&cb=${value}&geo=us` : BASE.replace(`ua=${UA}`, `ua=${value}`);
        const a = fast.scan(q);
        const b = slow.exact(q);
        if (JSON.stringify(a) !== JSON.stringify(b) || (!a && JSON.stringify(fast.values) !== JSON.stringify(slow.values))) {
          return t.fail(`disagree on ${JSON.stringify(q)}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
        }
        checked++;
      }
    }
  }
  t.equal(checked, 11 * 41 * 2);
  t.equal(fast.scan(`${BASE}&cb=${long.slice(0, 20)}%23${long}`), null, 'an escaped # is taken');
  t.equal(fast.values[P.cb], `${long.slice(0, 20)}#${long}`);
});

t.test('broken percent-encoding', async (t) => {
  t.equal(scan(`${BASE}&cb=%zz`).err?.code, 'bad_encoding');
  t.equal(scan(`${BASE}&cb=abc%4`).err?.code, 'bad_encoding');
  t.equal(scan(`${BASE}&cb=%`).err?.code, 'bad_encoding');
  t.equal(scan(`${BASE}&cb=%C3%28`).err?.code, 'bad_encoding', 'invalid UTF-8');
  t.equal(scan(`${BASE}&cb=%C3%A9`).err, null, 'valid UTF-8');
});

t.test('uppercase parameter names and duplicates', async (t) => {
  const up = scan(`${BASE}&Geo=us`).err;
  t.equal(up?.code, 'uppercase_not_allowed');
  t.match(up?.message, /Geo/);
  const dup = scan(`${BASE}&pub=again`).err;
  t.equal(dup?.code, 'duplicate_parameter');
  t.match(dup?.message, /pub/);
  t.equal(scan(`${BASE}&rid=1&rid=2`).err, null, 'unknown duplicates are ignored');
  t.equal(scan(`${BASE}&=x`).err?.code, 'invalid_request', 'empty name');
});

function validate(q: string) {
  const s = new QueryScanner();
  const e = s.scan(q);
  if (e) throw new Error(e.message);
  const r = emptyRequest();
  return validateAuth(s.values, r) ?? validateRequest(s.values, s.raw, r) ?? r;
}

t.test('auth fields come first', async (t) => {
  t.match(validate(BASE.replace('k=ivp_x&', '')), { status: 401 });
  t.match(validate(BASE.replace(/p=[^&]+&/, '')), { status: 400, code: 'missing_parameter', message: /\bp\b/ });
  t.match(validate(BASE.replace(/p=[^&]+&/, 'p=not-a-uuid&')), { status: 400, code: 'invalid_parameter', message: /UUID/ });
});

t.test('every required parameter is named when missing', async (t) => {
  for (const name of ['pub', 'node', 'ip', 'ua', 'uid', 'sid', 'adt', 'dvt']) {
    const q = BASE.split('&').filter((kv) => !kv.startsWith(name + '=')).join('&');
    t.match(validate(q), { status: 400, code: 'missing_parameter', message: new RegExp(`: ${name}\\.`) }, name);
    const empty = BASE.split('&').map((kv) => (kv.startsWith(name + '=') ? name + '=' : kv)).join('&');
    t.match(validate(empty), { status: 400, code: 'missing_parameter' }, `${name} empty`);
  }
});

t.test('typed values', async (t) => {
  const bad: Array<[string, string]> = [
    ['adt=0', 'adt'], ['adt=5', 'adt'], ['adt=x', 'adt'], ['dvt=9', 'dvt'], ['dvt=0', 'dvt'], ['dvt=-1', 'dvt'],
  ];
  for (const [kv, name] of bad) {
    const [k] = kv.split('=');
    const q = BASE.replace(new RegExp(`${k}=\\d+`), kv);
    t.match(validate(q), { status: 400, code: 'invalid_parameter', message: new RegExp(name) }, kv);
  }
  t.match(validate(`${BASE}&geo=usa`), { status: 400, message: /geo/ });
  t.match(validate(`${BASE}&geo=u1`), { status: 400, message: /geo/ });
  t.match(validate(`${BASE}&dim=300x`), { status: 400, message: /dim/ });
  t.match(validate(`${BASE}&dim=0x250`), { status: 400, message: /dim/ });
  t.match(validate(`${BASE}&geo=gb&dim=300x250`), { geo: 'GB', dim: '300x250' });
});

t.test('rendered ad type per ad type (2.4 table)', async (t) => {
  const ok: Array<[number, number]> = [[1, 1], [1, 2], [1, 8], [1, 0], [2, 3], [2, 4], [2, 7], [3, 2], [4, 1]];
  const no: Array<[number, number]> = [[1, 3], [2, 1], [2, 8], [3, 1], [3, 4], [4, 2], [1, 9]];
  for (const [adt, rat] of ok) t.match(validate(BASE.replace('adt=1', `adt=${adt}`) + `&rat=${rat}`), { adt, rat }, `adt=${adt} rat=${rat}`);
  for (const [adt, rat] of no) t.match(validate(BASE.replace('adt=1', `adt=${adt}`) + `&rat=${rat}`), { status: 400, message: /rat/ }, `adt=${adt} rat=${rat} refused`);
});

t.test('conditional parameters', async (t) => {
  const ctv = BASE.replace('dvt=2', 'dvt=3');
  t.match(validate(ctv), { status: 400, message: /app/ }, 'CTV needs app');
  t.match(validate(`${ctv}&app=com.roku.x`), { status: 400, message: /ifa/ }, 'CTV needs ifa');
  t.match(validate(`${ctv}&app=com.roku.x&ifa=6d92078a-8246-4ba4-ae5b-76104861e7dc`), { dvt: 3, app: 'com.roku.x' });
  for (const dvt of [6, 7]) t.match(validate(BASE.replace('dvt=2', `dvt=${dvt}`)), { status: 400 }, `dvt=${dvt} is CTV-like`);
  const app = BASE.replace('dvt=2', 'dvt=4') + '&app=com.example.game';
  t.match(validate(app), { status: 400, message: /ifa.*in-app/ }, 'in-app needs ifa');
  t.match(validate(BASE.replace('dvt=2', 'dvt=4')), { dvt: 4, app: '', ifa: '' }, 'mobile web needs neither');
});

for (const useWasm of [true, false]) t.test(`the fast scan (${useWasm ? 'WebAssembly' : 'JavaScript'} first pass) agrees with the character-by-character one on random queries`, async (t) => {
  if (useWasm) t.ok(queryScanWasm, 'this Node reads queries with the WebAssembly pass');
  // Queries built from pieces that hit every rule: names in any case, known and unknown,
  // empty ones, raw and encoded '=', '%' escapes good, cut short and not UTF-8, '+',
  // forbidden characters, controls, duplicates, non-ASCII.
  const goodNames = ['ua', 'ip', 'pub', 'schain', 'geo', 'rid', '%75a', 'u%', 'cb', 'p', 'k', 'ué', 'dvt', 'node'];
  const badNames = ['Ua', 'uA', 'PUB', ''];
  // (Long values too: the WebAssembly pass steps over 16 bytes of a value at once.)
  const goodValues = ['', 'x', 'a+b', '%41', '%C3%A9', 'é', '1.0,1!a.com,1,1', '%2B+%25', 'Mozilla%2F5.0%20(X11)', '+', 'abcdefghijklmnopqrstuvwxyz0123456789', 'Mozilla%2F5.0%20(Windows%20NT%2010.0%3B%20Win64)%20Gecko'];
  const badValues = ['%4', '%', '%zz', '%FF', '%E2%82', 'a=b', '=', 'a#b', 'a@b', 'a;b', 'a\u0001', '\u007f', 'x%2', 'abcdefghijklmnopqrstuvw#xyz', 'abcdefghijklmnopqrstu=vwxyz', 'abcdefghijklmnopqrst\u0000uvwxyz', '0123456789abcdef0123456789abcd%zz'];
  const pick = (good: string[], bad: string[]) => (rnd(40) ? good[rnd(good.length)]! : bad[rnd(bad.length)]!);
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) % n; // (an LCG's high bits: its low ones cycle)
  const fast = new QueryScanner(undefined, useWasm);
  const slow = new QueryScanner();
  let errors = 0;
  for (let i = 0; i < 100000; i++) {
    const parts: string[] = [];
    const n = 1 + rnd(6);
    for (let j = 0; j < n; j++) {
      const name = pick(goodNames, badNames);
      const form = rnd(30);
      parts.push(form === 0 ? name : form === 1 ? '' : `${name}=${pick(goodValues, badValues)}${rnd(3) ? '' : pick(goodValues, badValues)}`);
    }
    const q = parts.join('&');
    const a = fast.scan(q);
    if (rnd(2)) fast.rememberUa(); // (the UA cache asks for it from a UA's second sight on)
    const b = slow.exact(q);
    if (a) errors++;
    if (JSON.stringify(a) !== JSON.stringify(b) || (!a && (JSON.stringify(fast.values) !== JSON.stringify(slow.values) || JSON.stringify(fast.raw) !== JSON.stringify(slow.raw)))) {
      t.fail(`disagree on ${JSON.stringify(q)}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      return;
    }
  }
  t.ok(errors > 10000 && errors < 90000, `both accepted and refused queries were drawn (${errors} refused)`);
});

t.test('the partner ID: checked and lowercased, also when the same one comes again', async (t) => {
  const v = (p: string) => {
    const s = new QueryScanner();
    t.equal(s.scan(`p=${p}&k=ivp_x`), null);
    return s.values;
  };
  const upper = '0B8E9A7E-5B1C-4F7E-9D2A-1C3B5D7F9A2B';
  for (const p of [upper, upper, '0b8e9a7e-5b1c-4f7e-9d2a-1c3b5d7f9a2b', 'not-a-uuid', upper, 'not-a-uuid', upper.slice(1)]) {
    const r = emptyRequest();
    const err = validateAuth(v(p), r);
    if (p.length === 36 && p !== 'not-a-uuid') {
      t.equal(err, null, p);
      t.equal(r.partnerId, upper.toLowerCase(), `${p}: lowercased`);
    } else {
      t.equal(err?.status, 400, `${p}: refused`);
      t.match(err?.message, /partner ID must be a UUID/);
    }
  }
});

for (const useWasm of [true, false]) t.test(`a remembered UA comes back as the same string, and only for its own text (${useWasm ? 'WebAssembly' : 'JavaScript'} first pass)`, async (t) => {
  const s = new QueryScanner(undefined, useWasm);
  const ua = (raw: string) => {
    t.equal(s.scan(`p=x&k=y&ua=${raw}&uid=1`), null, raw);
    return s.values[P.ua]!;
  };
  const encoded = 'Mozilla%2F5.0%20(X11%3B%20Linux%20x86_64)%20Gecko%2F20100101%20Firefox%2F128.0';
  const first = ua(encoded);
  t.equal(first, decodeURIComponent(encoded));
  s.rememberUa();
  // The same string object each time: the UA cache finds it by V8's hash kept in the string.
  t.ok(Object.is(ua(encoded), first), 'remembered: the same string object');
  t.ok(Object.is(ua(encoded), first), 'and again');
  // Another UA differing in one byte, or only in its length (a key over its bytes must not read past its end).
  t.equal(ua(encoded.replace('128', '129')), decodeURIComponent(encoded).replace('128', '129'));
  t.equal(ua(encoded + '1'), decodeURIComponent(encoded) + '1');
  t.equal(ua(encoded.slice(0, -1)), decodeURIComponent(encoded).slice(0, -1));
  t.equal(ua('plain-ua-without-escapes'), 'plain-ua-without-escapes');
  s.rememberUa();
  t.equal(ua('plain-ua-without-escapes'), 'plain-ua-without-escapes');
  t.equal(ua(''), '');
});

t.test('two UAs of one memo key: each gets its own value, the later remembered in place of the earlier', async (t) => {
  // The JavaScript pass's keys (30 bits of hashString) are found colliding by a birthday search.
  const byKey = new Map<number, string>();
  let pair: [string, string] | null = null;
  for (let i = 0; pair === null; i++) {
    const raw = `Agent%20${i}`;
    hashString(raw, 0);
    const k = HASH[0]! & 0x3fffffff;
    const other = byKey.get(k);
    if (other !== undefined) pair = [other, raw];
    else byKey.set(k, raw);
  }
  const [a, b] = pair;
  const s = new QueryScanner(undefined, false);
  const ua = (raw: string) => {
    t.equal(s.scan(`p=x&k=y&ua=${raw}`), null);
    return s.values[P.ua]!;
  };
  t.equal(ua(a), decodeURIComponent(a));
  s.rememberUa();
  t.equal(ua(a), decodeURIComponent(a), 'remembered');
  t.equal(ua(b), decodeURIComponent(b), 'the other UA of its key is not given the first one\'s value');
  s.rememberUa();
  t.equal(ua(b), decodeURIComponent(b), 'remembered in its place');
  t.equal(ua(a), decodeURIComponent(a), 'and the first is decoded again');
});

t.test('the WebAssembly pass decodes a UA it does not remember and makes hashUa\'s words for it, equal to JavaScript\'s', { skip: !queryScanWasm && 'no WebAssembly' }, async (t) => {
  const seed = 0x9abcdef1;
  const s = new QueryScanner(undefined, true, seed);
  const same = (ua: string, sent: string, label: string) => {
    t.equal(s.scan(`p=x&k=y&ua=${sent}&uid=u1`), null, `${label}: accepted`);
    const value = s.values[P.ua]!;
    t.equal(value, ua, `${label}: decoded`);
    t.equal(s.uaHashed, value, `${label}: hashed in the pass`);
    hashUa(ua, seed);
    t.same([...s.uaHash], [...HASH], `${label}: the words hashUa makes`);
  };
  const uas = [
    'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.104 Mobile Safari/537.36',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
    'Roku/DVP-14.0 (14.0.4.5142-46)',
    'okhttp/4.12.0',
    'Dalvik/2.1.0 (Linux; U; Android 12; SM-T220 Build/SP1A.210812.016)',
    'x/1.2.3/4.5 a/..1 b/1..2 c/1. d/.5 e/12.34; f/9.9(g/1.0,h/2.0)',
    '',
    '/',
    '/1.2',
    'a%b',
  ];
  for (const ua of uas) same(ua, encodeURIComponent(ua), JSON.stringify(ua.slice(0, 30)));
  // Random ASCII in the shapes the normalisation reads: slashes, digit runs, dots, terminators.
  let r = 7;
  const next = () => (r = (Math.imul(r, 1103515245) + 12345) >>> 0) / 4294967296;
  const parts = ['/', '.', '..', '0', '7', '12', '345', ' ', ';', ')', '(', ',', 'Chrome', 'x', '%', '+', '"', '\t', '\u007f', '&', '='];
  for (let i = 0; i < 400; i++) {
    let ua = '';
    const n = 1 + Math.floor(next() * 40);
    for (let k = 0; k < n; k++) ua += next() < 0.1 ? String.fromCharCode(Math.floor(next() * 128)) : parts[Math.floor(next() * parts.length)]!;
    same(ua, encodeURIComponent(ua), `random ${i}`);
  }
  same('a b+c', 'a+b%2Bc', "'+' a space, %2B a plus");
  same('Agent 1.0', 'Agent%201.0', 'lowercase or uppercase hex');
  same('a\u0000b', 'a%00b', 'a control character, as decodeURIComponent gives it');
});

t.test('a UA that is not all ASCII, or one remembered, is not hashed in the pass', { skip: !queryScanWasm && 'no WebAssembly' }, async (t) => {
  const s = new QueryScanner(undefined, true, 1);
  t.equal(s.scan(`p=x&k=y&ua=${encodeURIComponent('Agent/1.0 (é)')}`), null);
  t.equal(s.values[P.ua], 'Agent/1.0 (é)', 'decoded by JavaScript');
  t.equal(s.uaHashed, null, 'no words: the UA cache hashes it');
  t.not(s.scan('p=x&k=y&ua=Agent%C3'), null, 'a broken UTF-8 escape is still refused');
  t.not(s.scan('p=x&k=y&ua=Agent%2'), null, 'and a broken escape');
  t.equal(s.scan('p=x&k=y&ua=Agent%2F1'), null);
  t.equal(s.uaHashed, 'Agent/1', 'hashed in the pass');
  s.rememberUa();
  t.equal(s.scan('p=x&k=y&ua=Agent%2F1'), null);
  t.equal(s.values[P.ua], 'Agent/1');
  t.equal(s.uaHashed, null, 'remembered: the UA cache has its words');
  t.equal(s.scan('p=x&k=y'), null);
  t.equal(s.uaHashed, null, 'no UA');
  const noSeed = new QueryScanner(undefined, true);
  t.equal(noSeed.scan('p=x&k=y&ua=Agent%2F2'), null);
  t.equal(noSeed.uaHashed, null, 'a scanner without the seed hashes nothing');
});
