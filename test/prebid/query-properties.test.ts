// Properties of the lookup query's scanner (src/prebid/query.ts), drawn by fast-check (seeded:
// test/helpers/property.ts): the WebAssembly first pass, the JavaScript one and the
// character-by-character reading agree on every query; what they accept reads as
// URLSearchParams reads it (the reference decoding, where it agrees with spec 4.4's rules:
// names are matched as sent, never decoded); what URLSearchParams writes is read back.
import t from 'tap';
import fc from 'fast-check';
import { HASH } from '../../src/memory/hash.ts';
import { QueryScanner, queryScanWasm } from '../../src/prebid/query.ts';
import { PARAM_NAMES } from '../../src/prebid/params.ts';
import { hashUa } from '../../src/signals/ua-cache.ts';
import { checkProperty } from '../helpers/property.ts';

const UA_SEED = 0x5eed1234;
const wasmScanner = new QueryScanner(undefined, true, UA_SEED);
const jsScanner = new QueryScanner(undefined, false, UA_SEED);
const exactScanner = new QueryScanner();

/** The codes a refusal may carry (spec 4.4). */
const CODES = new Set(['uppercase_not_allowed', 'invalid_request', 'bad_encoding', 'forbidden_character', 'duplicate_parameter']);

// Pieces that reach every rule: known and unknown names in any case, escapes good and broken,
// '+', the forbidden characters raw and encoded, controls, non-ASCII, long runs (the
// WebAssembly pass steps 16 bytes at a time).
const name = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PARAM_NAMES) },
  { weight: 2, arbitrary: fc.constantFrom('rid', 'foo', 'x', '%75a', 'u%61', 'ué', 'p1x', 'schai', 'schainx', '') },
  { weight: 1, arbitrary: fc.mixedCase(fc.constantFrom(...PARAM_NAMES)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 9 }) },
);
const valuePiece = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: fc.constantFrom(...'abcXYZ019-._~*!$\'(),/:?[]'), maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent) },
  { weight: 2, arbitrary: fc.constantFrom('+', '%20', '%2B', '%25', '%3D', '%23', '%40', '%3B', '%C3%A9', '%F0%9F%98%80', '%E2%82%AC') },
  { weight: 1, arbitrary: fc.constantFrom('%', '%4', '%zz', '%FF', '%C3', '%E2%82', '%ED%A0%80', '%C0%AF', '=', '#', '@', ';', '\u0000', '\u001f', '\u007f', 'é', '\u{1F600}', '&') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
);
const value = fc.array(valuePiece, { maxLength: 6 }).map((a) => a.join(''));
const pair = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(name, value).map(([n, v]) => `${n}=${v}`) },
  { weight: 1, arbitrary: name },
  { weight: 1, arbitrary: fc.constant('') },
);
const query = fc.array(pair, { minLength: 1, maxLength: 14 }).map((ps) => ps.join('&'));

/** The slots' values and raw texts as one comparable string. */
const slots = (s: QueryScanner): string => JSON.stringify([s.values, s.raw]);

/**
 * The reference reading of an accepted query: each known parameter's value as URLSearchParams
 * decodes it, the parameter found by its name as sent (the scanner never decodes a name; an
 * encoded one is an unknown parameter, where URLSearchParams would decode it).
 */
function reference(q: string): (string | undefined)[] {
  const out: (string | undefined)[] = new Array(PARAM_NAMES.length).fill(undefined);
  for (const part of q.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const n = eq === -1 ? part : part.slice(0, eq);
    const slot = (PARAM_NAMES as readonly string[]).indexOf(n);
    if (slot === -1) continue;
    out[slot] = new URLSearchParams(`v=${eq === -1 ? '' : part.slice(eq + 1)}`).get('v')!;
  }
  return out;
}

t.test('the WebAssembly pass, the JavaScript pass and the exact reading agree on every query', async (t) => {
  if (queryScanWasm) t.pass('this Node reads queries with the WebAssembly pass');
  else t.comment('no WebAssembly here: the JavaScript pass against the exact reading only');
  let refused = 0;
  let accepted = 0;
  checkProperty(
    t,
    'three first passes agree',
    fc.property(query, fc.boolean(), (q, remember) => {
      const a = wasmScanner.scan(q);
      if (remember) wasmScanner.rememberUa();
      const b = jsScanner.scan(q);
      const c = exactScanner.exact(q);
      const verdicts = [a, b, c].map((x) => JSON.stringify(x));
      if (verdicts[0] !== verdicts[2] || verdicts[1] !== verdicts[2]) throw new Error(`verdicts differ: ${verdicts.join(' / ')}`);
      if (c !== null) {
        refused++;
        if (c.status !== 400 || !CODES.has(c.code)) throw new Error(`an unknown refusal ${JSON.stringify(c)}`);
        return;
      }
      accepted++;
      if (slots(wasmScanner) !== slots(exactScanner) || slots(jsScanner) !== slots(exactScanner)) throw new Error('the slots differ');
      // A UA the WebAssembly pass decoded itself carries hashUa's words of its value.
      const ua = wasmScanner.uaHashed;
      if (ua !== null) {
        hashUa(ua, UA_SEED);
        if (wasmScanner.uaHash.some((w, i) => w !== HASH[i])) throw new Error('the pass\'s UA hash is not hashUa\'s');
      }
    }),
    4000,
  );
  t.ok(refused > 200 && accepted > 200, `both verdicts were drawn (${accepted} accepted, ${refused} refused)`);
});

t.test('an accepted query reads as URLSearchParams decodes it', async (t) => {
  checkProperty(
    t,
    'accepted values are the reference decoding',
    fc.property(query, (q) => {
      if (exactScanner.exact(q) !== null) return;
      const want = reference(q);
      if (JSON.stringify(exactScanner.values) !== JSON.stringify(want)) throw new Error(`read ${JSON.stringify(exactScanner.values)}, reference ${JSON.stringify(want)}`);
    }),
    3000,
  );
});

t.test('what URLSearchParams writes (and encodeURIComponent) is read back exactly', async (t) => {
  // Distinct known names, any well-formed text as their values.
  const text = fc
    .array(fc.oneof(fc.constantFrom(' ', '+', '%', '=', '&', '#', ';', '@', '%41'), fc.string({ unit: 'grapheme', maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 6 })), { maxLength: 12 })
    .map((a) => a.join(''))
    .filter((s) => s.isWellFormed());
  const params = fc.uniqueArray(fc.tuple(fc.constantFrom(...PARAM_NAMES), text), { selector: ([n]) => n, minLength: 1, maxLength: 12 });
  checkProperty(
    t,
    'written by URLSearchParams or encodeURIComponent, read back',
    fc.property(params, fc.boolean(), (ps, form) => {
      const q = form ? new URLSearchParams(ps).toString() : ps.map(([n, v]) => `${n}=${encodeURIComponent(v)}`).join('&');
      for (const s of [wasmScanner, jsScanner]) {
        const err = s.scan(q);
        if (err !== null) throw new Error(`refused ${JSON.stringify(q)}: ${err.message}`);
        for (const [n, v] of ps) {
          const got = s.values[(PARAM_NAMES as readonly string[]).indexOf(n)];
          if (got !== v) throw new Error(`${n}: read ${JSON.stringify(got)}, written ${JSON.stringify(v)}`);
        }
      }
    }),
    3000,
  );
});
