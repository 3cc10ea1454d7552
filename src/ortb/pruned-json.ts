// The fast path of a bid request's JSON: one validating pass over the body's bytes that builds
// only what the mapping reads (a "shape": src/ortb/map.ts's BID_REQUEST_SHAPE) and steps over the
// rest (Prebid `ext` trees, consent strings, eids: most of a bid request's bytes) without
// making an object or a string of it. Everything it steps over is still checked against the
// same rules as bounded-json.ts (grammar, nesting, array length, keys per object, duplicate
// and prototype keys, escapes, number range).
//
// It never says what is wrong: on anything it does not accept, or does not handle (a key with
// an escape, an object with many keys, a \u escape of a surrogate, a fault anywhere) it
// answers null and the caller reads the text again with parseBoundedJson, the reference,
// which gives the verdict and the message. So it may bail on a valid text, never accept an
// invalid one (test/ortb/pruned-json.test.ts holds it to that on mutated bid requests).
//
// What it builds is what JSON.parse would give with the keys outside the shape left out:
// arrays keep every element (each pruned by the element shape), a value whose type is not
// the one the shape expects (an array where an object is read, an object where a string is)
// is built whole, so the mapping sees the same types and values either way. Strings are
// slices of the body's text: whatever keeps one past the request copies it (ownString).
import type { JsonLimits, JsonObject, JsonValue } from './bounded-json.ts';

/** Build this value whole. */
export const WHOLE = 0;
/** An object of which only these keys are built (each by its shape), or an array whose every element is built by the one shape in it. */
export type JsonShape = typeof WHOLE | { readonly [key: string]: JsonShape } | readonly [JsonShape];

/** A shape as the scanner reads it (compileShape): wanted keys by length, then text. */
export interface Compiled {
  /** An object shape's keys, their lengths and shapes (parallel arrays). */
  keys: string[];
  lens: number[];
  /** The keys' bytes, one after another, and where each starts. */
  bytes: Uint8Array;
  at: number[];
  shapes: Array<Compiled | null>;
  /** An array shape's element shape (null: whole); undefined for an object shape. */
  elem: Compiled | null | undefined;
}

const EMPTY = new Uint8Array(0);

/** An object shape as parsePruned reads it: made once (the body's at module load), not per body. */
export function compileShape(shape: { readonly [key: string]: JsonShape }): Compiled {
  return compile(shape)!;
}

function compile(shape: JsonShape): Compiled | null {
  if (shape === WHOLE) return null;
  let c: Compiled;
  if (Array.isArray(shape)) c = { keys: [], lens: [], bytes: EMPTY, at: [], shapes: [], elem: compile((shape as readonly [JsonShape])[0]) };
  else {
    const keys = Object.keys(shape);
    const at: number[] = [];
    let n = 0;
    for (const k of keys) {
      at.push(n);
      n += k.length;
    }
    const bytes = new TextEncoder().encode(keys.join(''));
    if (bytes.length !== n) throw new Error('a shape key must be ASCII');
    c = { keys, lens: keys.map((k) => k.length), bytes, at, shapes: keys.map((k) => compile((shape as Record<string, JsonShape>)[k]!)), elem: undefined };
  }
  return c;
}

/** Objects with more keys than this go to the reference (duplicates are checked pairwise here). */
const MAX_KEYS_HERE = 64;

/** Thrown to leave the scan: the reference reads the text. */
const BAIL = { bail: true };

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a;
const LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
const MINUS = 0x2d, PLUS = 0x2b, DOT = 0x2e, ZERO = 0x30, NINE = 0x39;

/** Bytes that end the plain run of a string: the quote, a backslash, control characters, and bytes past ASCII (noted). */
const STOPS = new Uint8Array(256);
for (let c = 0; c < 256; c++) STOPS[c] = c === QUOTE || c === BACKSLASH || c < 0x20 || c >= 0x80 ? 1 : 0;

// The scan's state (one thread, synchronous, not re-entered): the body's bytes and the same
// body as text with a character per byte, where values are cut.
let b: Uint8Array = EMPTY;
let s = '';
let i = 0;
let limits: JsonLimits = { maxDepth: 0, maxArrayLength: 0, maxObjectKeys: 0 };
/** Most keys an object may have here: the limit's, or fewer (MAX_KEYS_HERE). */
let maxKeys = 0;
/** Start and length of each key of the open objects, for the duplicate check; `top` is the next free pair. */
let spans = new Int32Array(2 * MAX_KEYS_HERE * 8);
let top = 0;
/** The last string stepped over had an escape; a character past ASCII. */
let escaped = false;
let wide = false;
/** The body has a character past ASCII: `s` is its bytes as Latin-1 (offsets agree), values are decoded from the bytes. */
let wideBody = false;
/** The last key read: where it starts and how long it is. */
let keyStart = 0;
let keyLen = 0;
/** skip()'s open containers: 1 an object (aux: where its keys' spans start), 2 an array (aux: elements so far). */
const kinds = new Uint8Array(64);
const aux = new Int32Array(64);
const OBJ = 1, ARR = 2;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body's bytes from `from` to `to` as text. */
function decode(from: number, to: number): string {
  return wideBody ? utf8.decode(b.subarray(from, to)) : s.slice(from, to);
}

const isWs = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * Parses the body's `bytes` (valid UTF-8: checked before; `ascii` when they are all ASCII) as
 * one JSON object within `lim`, building only what `shape` names. The pruned object, or null
 * when the reference must read the body: a fault, or a case this path leaves to it. Never throws.
 */
export function parsePruned(bytes: Uint8Array, ascii: boolean, lim: JsonLimits, shape: Compiled): JsonObject | null {
  if (lim.maxDepth > kinds.length || lim.maxArrayLength < 1) return null;
  b = bytes;
  // One character per byte (Latin-1): ASCII values are cut from it; past ASCII, a byte's
  // offset is not its character's, so a value holding such a character is decoded from the bytes.
  wideBody = !ascii;
  s = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  limits = lim;
  maxKeys = Math.min(MAX_KEYS_HERE, lim.maxObjectKeys);
  top = 0;
  try {
    i = 0;
    while (isWs(b[i])) i++;
    if (b[i] !== LBRACE) return null;
    const v = buildObject(1, shape);
    while (isWs(b[i])) i++;
    return i === b.length ? v : null;
  } catch (e) {
    if (e === BAIL) return null;
    throw e;
  } finally {
    s = '';
    b = EMPTY;
  }
}

/** The value at `i` (after whitespace), built by `c` (null: whole); `depth` is its container's. */
function buildValue(depth: number, c: Compiled | null): JsonValue {
  while (isWs(b[i])) i++;
  const ch = b[i];
  const start = i;
  if (ch === LBRACE && c !== null && c.elem === undefined) return buildObject(depth + 1, c);
  if (ch === LBRACKET && c !== null && c.elem !== undefined) return buildArray(depth + 1, c.elem);
  skip(depth);
  if (ch === QUOTE) {
    if (escaped) return JSON.parse(wide ? decode(start, i) : s.slice(start, i)) as string;
    return wide ? decode(start + 1, i - 1) : s.slice(start + 1, i - 1);
  }
  if (ch === MINUS || (ch !== undefined && ch >= ZERO && ch <= NINE)) return Number(s.slice(start, i));
  // A literal, or a container built whole: checked by skip, made by JSON.parse.
  return JSON.parse(decode(start, i)) as JsonValue;
}

function buildObject(depth: number, c: Compiled): JsonObject {
  if (depth > limits.maxDepth) throw BAIL;
  i++; // {
  const o: JsonObject = {};
  while (isWs(b[i])) i++;
  if (b[i] === RBRACE) {
    i++;
    return o;
  }
  const base = top;
  for (;;) {
    i = key(i, base);
    let want = -1;
    const lens = c.lens;
    for (let k = 0; k < lens.length; k++) {
      if (lens[k] === keyLen && same(c.at[k]!, keyStart, keyLen, c.bytes)) {
        want = k;
        break;
      }
    }
    if (want === -1) skip(depth);
    else o[c.keys[want]!] = buildValue(depth, c.shapes[want]!);
    while (isWs(b[i])) i++;
    const ch = b[i++];
    if (ch === RBRACE) break;
    if (ch !== COMMA) throw BAIL;
  }
  top = base;
  return o;
}

function buildArray(depth: number, elem: Compiled | null): JsonValue[] {
  if (depth > limits.maxDepth) throw BAIL;
  i++; // [
  const a: JsonValue[] = [];
  while (isWs(b[i])) i++;
  if (b[i] === RBRACKET) {
    i++;
    return a;
  }
  for (;;) {
    if (a.length === limits.maxArrayLength) throw BAIL;
    a.push(buildValue(depth, elem));
    while (isWs(b[i])) i++;
    const ch = b[i++];
    if (ch === RBRACKET) return a;
    if (ch !== COMMA) throw BAIL;
  }
}

/**
 * Steps over the value at `k` (after whitespace) and everything in it, checking it all;
 * `depth` is its container's. Iterative: its own stack of open containers. Leaves `i` after
 * the value (and `escaped` set for a string value).
 */
function skip(depth: number): void {
  const bytes = b;
  let k = i;
  let sp = 0;
  for (;;) {
    // A value at k.
    let c = bytes[k];
    while (isWs(c)) c = bytes[++k];
    if (c === LBRACE || c === LBRACKET) {
      if (++depth > limits.maxDepth) throw BAIL;
      const close = c + 2; // '}' after '{', ']' after '['
      c = bytes[++k];
      while (isWs(c)) c = bytes[++k];
      if (c === close) {
        k++;
        depth--;
      } else {
        // An open object (aux: where its keys' spans start) reads its first key; an array its first element.
        const obj = close === RBRACE;
        kinds[sp] = obj ? OBJ : ARR;
        aux[sp++] = obj ? top : 1;
        if (obj) k = key(k, top);
        continue;
      }
    } else if (c === QUOTE) k = skipString(k);
    else if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) k = skipNumber(k);
    else if (c === 0x74 && bytes[k + 1] === 0x72 && bytes[k + 2] === 0x75 && bytes[k + 3] === 0x65) k += 4;
    else if (c === 0x66 && bytes[k + 1] === 0x61 && bytes[k + 2] === 0x6c && bytes[k + 3] === 0x73 && bytes[k + 4] === 0x65) k += 5;
    else if (c === 0x6e && bytes[k + 1] === 0x75 && bytes[k + 2] === 0x6c && bytes[k + 3] === 0x6c) k += 4;
    else throw BAIL;
    // After a value: close what ends here, up to the next value.
    for (;;) {
      if (sp === 0) {
        i = k;
        return;
      }
      c = bytes[k++];
      while (isWs(c)) c = bytes[k++];
      if (kinds[sp - 1] === OBJ) {
        if (c === COMMA) {
          k = key(k, aux[sp - 1]!);
          break;
        }
        if (c !== RBRACE) throw BAIL;
        top = aux[sp - 1]!;
      } else {
        if (c === COMMA) {
          if (aux[sp - 1]!++ === limits.maxArrayLength) throw BAIL;
          break;
        }
        if (c !== RBRACKET) throw BAIL;
      }
      sp--;
      depth--;
    }
  }
}

/**
 * Reads the key at `k` (after whitespace) of an object whose keys start at `spans[base]`, and
 * its colon: where the value starts. Leaves the key in keyStart/keyLen and its span on the
 * stack. Bails on a key with an escape, a prototype's name, a duplicate, one key too many.
 */
function key(k: number, base: number): number {
  const bytes = b;
  while (isWs(bytes[k])) k++;
  if (bytes[k] !== QUOTE) throw BAIL;
  const start = k + 1;
  k = skipString(k);
  if (escaped) throw BAIL; // the reference compares what escaped keys mean
  const len = k - 1 - start;
  if ((len === 9 || len === 11) && isPrototypeKey(start, len)) throw BAIL;
  for (let at = base; at < top; at += 2) {
    if (spans[at + 1] === len && same(spans[at]!, start, len, bytes)) throw BAIL;
  }
  if (top - base >= 2 * maxKeys) throw BAIL;
  if (top + 2 > spans.length) {
    const grown = new Int32Array(spans.length * 2);
    grown.set(spans);
    spans = grown;
  }
  spans[top++] = start;
  spans[top++] = len;
  while (isWs(bytes[k])) k++;
  if (bytes[k] !== COLON) throw BAIL;
  keyStart = start;
  keyLen = len;
  return k + 1;
}

const PROTO_KEYS = ['__proto__', 'prototype', 'constructor'].map((k) => new TextEncoder().encode(k));

function isPrototypeKey(start: number, len: number): boolean {
  for (const k of PROTO_KEYS) if (k.length === len && same(0, start, len, k)) return true;
  return false;
}

/** The `len` bytes at `a` in `in_` and at `at` in the body are the same. */
function same(a: number, at: number, len: number, in_: Uint8Array): boolean {
  const bytes = b;
  for (let k = 0; k < len; k++) if (in_[a + k] !== bytes[at + k]) return false;
  return true;
}

/** Steps over the string whose opening quote is at `k`: where it ends. Sets `escaped` and `wide`. */
function skipString(k: number): number {
  const bytes = b;
  k++;
  escaped = false;
  wide = false;
  for (;;) {
    while (STOPS[bytes[k]!] === 0) k++;
    const ch = bytes[k];
    if (ch === QUOTE) return k + 1;
    if (ch !== undefined && ch >= 0x80) {
      wide = true; // (the body is valid UTF-8: decoded before)
      k++;
      continue;
    }
    if (ch !== BACKSLASH) throw BAIL; // a raw control character, or the end of the body
    escaped = true;
    const e = bytes[k + 1];
    if (e === 0x75) {
      // \uXXXX: four hex digits, and not a surrogate (a pair is left to the reference).
      let u = 0;
      for (let h = k + 2; h < k + 6; h++) {
        const x = bytes[h]!;
        const d = x >= 0x30 && x <= 0x39 ? x - 0x30 : x >= 0x61 && x <= 0x66 ? x - 0x57 : x >= 0x41 && x <= 0x46 ? x - 0x37 : -1;
        if (d < 0) throw BAIL;
        u = u * 16 + d;
      }
      if (u >= 0xd800 && u <= 0xdfff) throw BAIL;
      k += 6;
      continue;
    }
    // \" \\ \/ \b \f \n \r \t
    if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) throw BAIL;
    k += 2;
  }
}

/** Steps over the number at `k`: where it ends. Bails on one out of range. */
function skipNumber(k: number): number {
  const bytes = b;
  const start = k;
  let ch = bytes[k]!;
  if (ch === MINUS) ch = bytes[++k]!;
  if (ch === ZERO) ch = bytes[++k]!;
  else if (ch > ZERO && ch <= NINE) do ch = bytes[++k]!; while (ch >= ZERO && ch <= NINE);
  else throw BAIL;
  if (ch === DOT) {
    ch = bytes[++k]!;
    if (!(ch >= ZERO && ch <= NINE)) throw BAIL;
    do ch = bytes[++k]!; while (ch >= ZERO && ch <= NINE);
  }
  let plain = true;
  if (ch === 0x65 || ch === 0x45) {
    plain = false;
    ch = bytes[++k]!;
    if (ch === PLUS || ch === MINUS) ch = bytes[++k]!;
    if (!(ch >= ZERO && ch <= NINE)) throw BAIL;
    do ch = bytes[++k]!; while (ch >= ZERO && ch <= NINE);
  }
  // Without an exponent, fewer than 300 characters cannot pass Number.MAX_VALUE.
  if (!(plain && k - start < 300) && !Number.isFinite(Number(s.slice(start, k)))) throw BAIL;
  return k;
}
