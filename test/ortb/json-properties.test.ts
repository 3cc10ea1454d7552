// Properties of the bid request's JSON readers, drawn by fast-check (seeded:
// test/helpers/property.ts), against JSON.parse as the reference:
// - the WebAssembly scan (src/prebid/ortb/pruned-json.ts) accepts nothing the bounded reader refuses,
//   and builds what JSON.parse builds, read by the shape;
// - the bounded reader (src/base/bounded-json.ts) and its JS parser give one verdict, and
//   what they accept is JSON.parse's value (lone surrogates read as U+FFFD);
// - the limits (depth, array length, keys per object, duplicate and prototype keys) are
//   exactly where they are said to be, in both readers.
// Bodies are the third-party fixtures (test/fixtures/ortb) with arbitrary JSON put in, and
// the same bytes mutated.
import t from 'tap';
import fc from 'fast-check';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isJsonObject, parseBoundedJson, strictParse, type JsonLimits, type JsonValue } from '../../src/base/bounded-json.ts';
import { parsePruned, jsonScanWasm } from '../../src/prebid/ortb/pruned-json.ts';
import { compileShape, Fields, type Compiled, type Pruned } from '../../src/base/shape.ts';
import { BID_REQUEST_SHAPE } from '../../src/prebid/ortb/map.ts';
import { bidRequestFrom, ORTB_JSON_LIMITS } from '../../src/prebid/ortb/body.ts';
import { checkProperty } from '../helpers/property.ts';

const BID_REQUEST = compileShape(BID_REQUEST_SHAPE);
const enc = new TextEncoder();
const utf8 = new TextDecoder('utf-8', { fatal: true });

const DIR = join(import.meta.dirname, '..', 'fixtures', 'ortb');
const FIXTURES: JsonValue[] = [];
for (const kind of ['exemplary', 'supplemental']) {
  for (const f of readdirSync(join(DIR, kind)).sort()) FIXTURES.push((JSON.parse(readFileSync(join(DIR, kind, f), 'utf8')) as { request: JsonValue }).request);
}

/** A value read by `shape` as a plain JSON value (each Fields an object of the keys it has). */
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
  return v as JsonValue;
}

/** JSON.parse's value read by `shape` (null: whole), as a plain value. */
function pruned(v: JsonValue, shape: Compiled | null): JsonValue {
  if (shape === null) return v;
  if (shape.elem !== undefined) return Array.isArray(v) ? v.map((e) => pruned(e, shape.elem!)) : v;
  if (!isJsonObject(v)) return v;
  const o: Record<string, JsonValue> = {};
  shape.keys.forEach((k, i) => {
    if (Object.hasOwn(v, k)) o[k] = pruned(v[k]!, shape.shapes[i]!);
  });
  return o;
}

/** The value with every string (keys too) made well-formed, as the bounded reader builds it. */
function wellFormed(v: JsonValue): JsonValue {
  if (typeof v === 'string') return v.toWellFormed();
  if (Array.isArray(v)) return v.map(wellFormed);
  if (!isJsonObject(v)) return v;
  const o: Record<string, JsonValue> = {};
  for (const k of Object.keys(v)) Object.defineProperty(o, k.toWellFormed(), { value: wellFormed(v[k]!), enumerable: true, writable: true, configurable: true });
  return o;
}

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

/** Whether a value JSON.parse built is within `lim` (top level at depth 1) with no prototype key: the rules, written once more. */
function within(v: JsonValue, lim: JsonLimits, depth = 1): boolean {
  if (typeof v !== 'object' || v === null) return true;
  if (depth > lim.maxDepth) return false;
  if (Array.isArray(v)) return v.length <= lim.maxArrayLength && v.every((e) => within(e, lim, depth + 1));
  const keys = Object.keys(v);
  return keys.length <= lim.maxObjectKeys && keys.every((k) => !FORBIDDEN.has(k) && within(v[k]!, lim, depth + 1));
}

/** The same JSON values (the JS parser's objects have no prototype, JSON.parse's have Object's: not a difference here). */
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** JSON.parse, or undefined when it throws. */
function reference(text: string): JsonValue | undefined {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}

/** Puts `v` at a place chosen by `pick` (a path of indexes into the fixture's containers). */
function plant(doc: JsonValue, v: JsonValue, path: number[], key: string): JsonValue {
  const copy = JSON.parse(JSON.stringify(doc)) as JsonValue;
  let at: JsonValue = copy;
  for (const step of path) {
    if (Array.isArray(at) && at.length > 0) at = at[step % at.length]!;
    else if (isJsonObject(at)) {
      const ks = Object.keys(at).filter((k) => typeof at === 'object' && at !== null);
      if (ks.length === 0) break;
      const next: JsonValue = at[ks[step % ks.length]!]!;
      if (typeof next !== 'object' || next === null) {
        at[ks[step % ks.length]!] = v; // replace a leaf the mapping may read with any JSON
        return copy;
      }
      at = next;
    } else break;
  }
  if (Array.isArray(at)) at.push(v);
  else if (isJsonObject(at)) at[key] = v;
  return copy;
}

const anyJson = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' });
const keyName = fc.oneof(fc.constantFrom('ext', 'ua', 'ip', 'id', 'schain', 'nodes', 'sua', 'ifa', 'publisher', '__proto__', 'constructor'), fc.string({ unit: 'binary', maxLength: 8 }));
const layout = fc.constantFrom<(v: JsonValue) => string>(
  (v) => JSON.stringify(v),
  (v) => JSON.stringify(v, null, 2),
  (v) => JSON.stringify(v).replaceAll('/', '\\/'),
  // every non-ASCII character as \u escapes (surrogate pairs among them)
  (v) => JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
);

/** One body read by every reader; throws on the first disagreement. */
function agree(bytes: Uint8Array, lim: JsonLimits = ORTB_JSON_LIMITS): 'fast' | 'reference' | 'refused' {
  let text: string | null = null;
  try {
    text = utf8.decode(bytes);
  } catch {
    text = null;
  }
  const fast = parsePruned(bytes, lim, BID_REQUEST);
  if (text === null) {
    if (fast !== null) throw new Error('the scan accepted bytes that are not UTF-8');
    return 'refused';
  }
  const bounded = parseBoundedJson(text, lim);
  const strict = strictParse(text, lim);
  if (bounded.ok !== strict.ok) throw new Error(`the bounded reader says ${bounded.ok}, its JS parser ${strict.ok} (${strict.ok ? '' : strict.message})`);
  if (bounded.ok && strict.ok && !same(bounded.value, strict.value)) throw new Error('the bounded reader and its JS parser built different values');
  const ref = reference(text);
  if (bounded.ok) {
    if (ref === undefined) throw new Error('the bounded reader accepted what JSON.parse refuses');
    if (!same(bounded.value, wellFormed(ref))) throw new Error('the bounded reader built another value than JSON.parse');
    if (!within(ref, lim)) throw new Error('the bounded reader accepted a value past its limits');
  }
  if (fast !== null) {
    if (!bounded.ok) throw new Error(`the scan accepted what the reference refuses: ${bounded.message}`);
    const want = pruned(ref!, BID_REQUEST);
    if (!same(plain(fast, BID_REQUEST), want)) throw new Error('the scan built another value than JSON.parse read by the shape');
  }
  // The whole body path never throws and answers a 4xx when it refuses.
  const r = bidRequestFrom(bytes, false);
  if (!r.ok && (r.error.status < 400 || r.error.status > 499)) throw new Error(`bidRequestFrom answered ${r.error.status}`);
  return fast !== null ? 'fast' : bounded.ok ? 'reference' : 'refused';
}

t.test('third-party bid requests with any JSON put anywhere: every reader agrees with JSON.parse', async (t) => {
  t.ok(FIXTURES.length >= 10, `${FIXTURES.length} fixtures`);
  if (!jsonScanWasm) t.comment('no WebAssembly here: the scan bails on every body');
  const seen = { fast: 0, reference: 0, refused: 0 };
  checkProperty(
    t,
    'planted JSON, every reader',
    fc.property(fc.constantFrom(...FIXTURES), anyJson, fc.array(fc.nat(), { maxLength: 5 }), keyName, layout, (doc, v, path, key, write) => {
      seen[agree(enc.encode(write(plant(doc, v, path, key))))]++;
    }),
    1500,
  );
  t.ok(!jsonScanWasm || seen.fast > 100, `the scan took most (${JSON.stringify(seen)})`);
  t.ok(seen.refused > 0, 'and some were refused (a prototype key, a limit)');
});

// Mutations of the bytes: what the readers disagree on is found at the edges of tokens.
const TOKEN_BYTES = [...'{}[]:,"\\ 0123456789-+.eEtrufalsn/'].map((c) => c.charCodeAt(0)).concat([0x00, 0x0a, 0x7f, 0x80, 0xc3, 0xa9, 0xed, 0xa0, 0xf0, 0xff]);
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.array(fc.constantFrom(...TOKEN_BYTES), { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), byte: fc.oneof(fc.constantFrom(...TOKEN_BYTES), fc.integer({ min: 0, max: 255 })) }),
  fc.record({ kind: fc.constant('copy' as const), at: fc.nat(), from: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant('escape' as const), at: fc.nat(), code: fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0xd800, 0xdbff, 0xdc00, 0xdfff, 0x3a, 0x22, 0x5c)) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(bytes: Uint8Array, ms: Mutation[]): Uint8Array {
  let b = Array.from(bytes);
  for (const m of ms) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === 'delete') b.splice(at, m.len);
    else if (m.kind === 'insert') b.splice(at, 0, ...m.bytes);
    else if (m.kind === 'replace') b[at] = m.byte;
    else if (m.kind === 'copy') {
      const from = b.length === 0 ? 0 : m.from % b.length;
      b.splice(at, 0, ...b.slice(from, from + m.len)); // a duplicate key, a repeated member
    } else b.splice(at, 0, ...enc.encode(`\\u${m.code.toString(16).padStart(4, '0')}`));
  }
  return Uint8Array.from(b);
}

t.test('mutated third-party bid requests: the scan accepts nothing the reference refuses; the reference is JSON.parse', async (t) => {
  const seen = { fast: 0, reference: 0, refused: 0 };
  const texts = FIXTURES.map((f) => enc.encode(JSON.stringify(f)));
  checkProperty(
    t,
    'mutated bytes, every reader',
    fc.property(fc.constantFrom(...texts), fc.array(mutation, { minLength: 1, maxLength: 3 }), (bytes, ms) => {
      seen[agree(mutate(bytes, ms))]++;
    }),
    3000,
  );
  t.ok(seen.refused > 300 && seen.fast + seen.reference > 100, `both verdicts were drawn (${JSON.stringify(seen)})`);
});

t.test('the limits are where they are said to be, in both readers', async (t) => {
  // Small limits and values built around them: nesting, arrays, keys per object.
  const limits = fc.record({ maxDepth: fc.integer({ min: 2, max: 8 }), maxArrayLength: fc.integer({ min: 1, max: 6 }), maxObjectKeys: fc.integer({ min: 1, max: 6 }) });
  const { tree } = fc.letrec<{ tree: JsonValue; node: JsonValue }>((tie) => ({
    tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.constantFrom<JsonValue>(1, 'x', null, true), tie('node')),
    node: fc.oneof(
      fc.array(tie('tree'), { maxLength: 8 }),
      fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'ua', 'ext'), tie('tree')), { selector: ([k]) => k, maxLength: 8 }).map((es) => Object.fromEntries(es) as JsonValue),
    ),
  }));
  let inside = 0;
  let outside = 0;
  checkProperty(
    t,
    'limits',
    fc.property(limits, tree, (lim, v) => {
      const doc = { id: 'r', ext: v };
      const text = JSON.stringify(doc);
      const want = within(doc, lim);
      if (want) inside++;
      else outside++;
      const bounded = parseBoundedJson(text, lim);
      if (bounded.ok !== want) throw new Error(`the bounded reader says ${bounded.ok} of a value ${want ? 'within' : 'past'} ${JSON.stringify(lim)}`);
      if (parsePruned(enc.encode(text), lim, BID_REQUEST) !== null && !want) throw new Error('the scan accepted a value past the limits');
      if (want) agree(enc.encode(text), lim);
    }),
    3000,
  );
  t.ok(inside > 300 && outside > 300, `values within and past the limits were drawn (${inside} within, ${outside} past)`);

  checkProperty(
    t,
    'a duplicate key is refused',
    fc.property(fc.constantFrom(...FIXTURES), fc.array(fc.nat(), { maxLength: 4 }), (doc, path) => {
      // The same key written twice in one object, anywhere in the document.
      const text = JSON.stringify(plant(doc, '§DUP§', path, 'dupkey')).replace('"dupkey":"§DUP§"', '"dupkey":1,"dupkey":2');
      if (!text.includes('"dupkey":1,"dupkey":2')) return; // the value replaced a leaf instead
      const bytes = enc.encode(text);
      if (parsePruned(bytes, ORTB_JSON_LIMITS, BID_REQUEST) !== null) throw new Error('the scan accepted a duplicate key');
      const r = parseBoundedJson(text, ORTB_JSON_LIMITS);
      if (r.ok || !/duplicate/i.test(r.message)) throw new Error(`the reference said ${JSON.stringify(r)}`);
    }),
    500,
  );
});
