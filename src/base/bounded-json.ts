// Strict JSON (RFC 8259) for request bodies a stranger sends: bounded nesting, array length
// and keys per object, duplicate keys refused, no key that names a prototype (`__proto__`,
// `constructor`, `prototype`), no number out of range. A lone surrogate in a \u escape (RFC
// 8259 grammar allows one; a sender that cut a string inside an emoji writes one) is read as
// U+FFFD, as a UTF-8 decoder reads a broken sequence: every string built is well-formed.
// Two paths to one verdict. The fast one is V8's JSON.parse (iterative, native: about twice
// as fast as any parser in JS on a 2 KB bid request) followed by a walk that checks the
// limits on what it built, and a count of the keys in the text against the keys it built
// (JSON.parse keeps the last of duplicates silently). Whatever that path refuses (a lone
// surrogate among it), the JS parser below reads again, to say what and where, or to build
// the strings well-formed; it stops at the first fault and its recursion depth is the
// nesting limit. The size of the text bounds what either allocates.
// Parsed objects are ordinary objects that hold only checked own keys: read them by fixed,
// non-prototype names (as src/prebid/ortb/map.ts does), never copy them with Object.assign.

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A parsed object: checked own keys only (none names a prototype member). */
export interface JsonObject {
  [key: string]: JsonValue | undefined;
}

export interface JsonLimits {
  /** Objects and arrays nested deeper than this are refused (the top level is depth 1). */
  maxDepth: number;
  maxArrayLength: number;
  maxObjectKeys: number;
}

/**
 * For documents whose size is bounded already (the account API's bodies, the operator's
 * files, control requests): nesting is what is limited, so that no walk of one recurses
 * past it; their lengths and key counts are the size's business.
 */
export const DOCUMENT_LIMITS: JsonLimits = { maxDepth: 64, maxArrayLength: Number.MAX_SAFE_INTEGER, maxObjectKeys: Number.MAX_SAFE_INTEGER };

export type JsonResult = { ok: true; value: JsonValue } | { ok: false; message: string };

// (9 and 11 characters long: a cheap test before the set's.)
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

class JsonError extends Error {}

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a;
const LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
const MINUS = 0x2d, PLUS = 0x2b, DOT = 0x2e, ZERO = 0x30, NINE = 0x39;

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

function hex4(s: string, at: number): number {
  let n = 0;
  for (let k = 0; k < 4; k++) {
    const c = s.charCodeAt(at + k);
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (d < 0) return -1;
    n = n * 16 + d;
  }
  return n;
}

class Parser {
  i = 0;
  constructor(
    private readonly s: string,
    private readonly limits: JsonLimits,
  ) {}

  fail(what: string): never {
    throw new JsonError(`${what} at character ${this.i}`);
  }

  ws(): void {
    const s = this.s;
    let i = this.i;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
    this.i = i;
  }

  value(depth: number): JsonValue {
    this.ws();
    const c = this.s.charCodeAt(this.i);
    if (c === LBRACE) return this.object(depth + 1);
    if (c === LBRACKET) return this.array(depth + 1);
    if (c === QUOTE) return this.string();
    if (c === MINUS || (c >= ZERO && c <= NINE)) return this.number();
    if (this.s.startsWith('true', this.i)) { this.i += 4; return true; }
    if (this.s.startsWith('false', this.i)) { this.i += 5; return false; }
    if (this.s.startsWith('null', this.i)) { this.i += 4; return null; }
    return this.fail(Number.isNaN(c) ? 'unexpected end of the body' : 'unexpected character');
  }

  object(depth: number): JsonObject {
    if (depth > this.limits.maxDepth) this.fail(`objects and arrays nested deeper than ${this.limits.maxDepth}`);
    this.i++; // {
    const o = Object.create(null) as JsonObject; // (the error path only: its objects are dropped)
    this.ws();
    if (this.s.charCodeAt(this.i) === RBRACE) { this.i++; return o; }
    let keys = 0;
    for (;;) {
      this.ws();
      if (this.s.charCodeAt(this.i) !== QUOTE) this.fail('expected a string key');
      const at = this.i;
      const key = this.string();
      if (FORBIDDEN_KEYS.has(key)) { this.i = at; this.fail(`key "${key}" is not allowed`); }
      if (o[key] !== undefined) { this.i = at; this.fail(`duplicate key "${key.length > 40 ? key.slice(0, 40) + '…' : key}"`); }
      if (++keys > this.limits.maxObjectKeys) { this.i = at; this.fail(`an object with more than ${this.limits.maxObjectKeys} keys`); }
      this.ws();
      if (this.s.charCodeAt(this.i) !== COLON) this.fail('expected ":"');
      this.i++;
      o[key] = this.value(depth);
      this.ws();
      const c = this.s.charCodeAt(this.i++);
      if (c === RBRACE) return o;
      if (c !== COMMA) { this.i--; this.fail('expected "," or "}"'); }
    }
  }

  array(depth: number): JsonValue[] {
    if (depth > this.limits.maxDepth) this.fail(`objects and arrays nested deeper than ${this.limits.maxDepth}`);
    this.i++; // [
    const a: JsonValue[] = [];
    this.ws();
    if (this.s.charCodeAt(this.i) === RBRACKET) { this.i++; return a; }
    for (;;) {
      if (a.length === this.limits.maxArrayLength) this.fail(`an array with more than ${this.limits.maxArrayLength} elements`);
      a.push(this.value(depth));
      this.ws();
      const c = this.s.charCodeAt(this.i++);
      if (c === RBRACKET) return a;
      if (c !== COMMA) { this.i--; this.fail('expected "," or "]"'); }
    }
  }

  string(): string {
    const s = this.s;
    const start = ++this.i;
    let i = start;
    // Fast path: no escapes, the common case.
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === QUOTE) { this.i = i + 1; return s.slice(start, i); }
      if (c === BACKSLASH) break;
      if (c < 0x20 || Number.isNaN(c)) { this.i = i; this.fail(Number.isNaN(c) ? 'unterminated string' : 'raw control character in a string'); }
      i++;
    }
    let out = s.slice(start, i);
    let c2 = 0;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === QUOTE) { this.i = i + 1; return out; }
      if (c < 0x20 || Number.isNaN(c)) { this.i = i; this.fail(Number.isNaN(c) ? 'unterminated string' : 'raw control character in a string'); }
      if (c !== BACKSLASH) {
        const from = i;
        while ((c2 = s.charCodeAt(++i)) !== QUOTE && c2 !== BACKSLASH && c2 >= 0x20);
        out += s.slice(from, i);
        continue;
      }
      const e = s[i + 1] ?? '';
      if (e !== 'u') {
        const r = ESCAPES[e];
        if (r === undefined) { this.i = i; this.fail('invalid escape'); }
        out += r;
        i += 2;
        continue;
      }
      const u = hex4(s, i + 2);
      if (u < 0) { this.i = i; this.fail('invalid \\u escape'); }
      if (u >= 0xd800 && u <= 0xdbff) {
        const lo = s.charCodeAt(i + 6) === BACKSLASH && s[i + 7] === 'u' ? hex4(s, i + 8) : -1;
        if (lo >= 0xdc00 && lo <= 0xdfff) {
          out += String.fromCharCode(u, lo);
          i += 12;
        } else {
          // A high half alone (a string cut inside an emoji): U+FFFD; what follows is read on its own.
          out += '\ufffd';
          i += 6;
        }
      } else if (u >= 0xdc00 && u <= 0xdfff) {
        out += '\ufffd'; // a low half alone
        i += 6;
      } else {
        out += String.fromCharCode(u);
        i += 6;
      }
    }
  }

  number(): number {
    const s = this.s;
    const start = this.i;
    let i = start;
    if (s.charCodeAt(i) === MINUS) i++;
    let c = s.charCodeAt(i);
    if (c === ZERO) i++;
    else if (c > ZERO && c <= NINE) while ((c = s.charCodeAt(++i)) >= ZERO && c <= NINE);
    else { this.i = i; this.fail('invalid number'); }
    if (s.charCodeAt(i) === DOT) {
      c = s.charCodeAt(++i);
      if (!(c >= ZERO && c <= NINE)) { this.i = i; this.fail('invalid number'); }
      while ((c = s.charCodeAt(++i)) >= ZERO && c <= NINE);
    }
    c = s.charCodeAt(i);
    if (c === 0x65 || c === 0x45) {
      c = s.charCodeAt(++i);
      if (c === PLUS || c === MINUS) c = s.charCodeAt(++i);
      if (!(c >= ZERO && c <= NINE)) { this.i = i; this.fail('invalid number'); }
      while ((c = s.charCodeAt(++i)) >= ZERO && c <= NINE);
    }
    this.i = i;
    const n = Number(s.slice(start, i));
    if (!Number.isFinite(n)) { this.i = start; this.fail('number out of range'); }
    return n;
  }
}

/** Parses `text` as one JSON value within `limits`. Never throws. */
export function parseBoundedJson(text: string, limits: JsonLimits): JsonResult {
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    return strictParse(text, limits);
  }
  // Only a \u escape can make a lone surrogate (JSON.parse keeps it; the JS parser below reads
  // it as U+FFFD), or a colon that is not one in the text.
  const escapes = text.indexOf('\\') !== -1;
  const walk: Walk = { keys: 0, colons: 0, escapes, limits };
  if (checked(value, 1, walk) && walk.keys === keysIn(text, walk, escapes)) return { ok: true, value };
  // The JS parser is the reference: it says what is wrong, and where.
  return strictParse(text, limits);
}

interface Walk {
  /** Keys built, and colons in the strings and keys built. */
  keys: number;
  colons: number;
  /** The text has escapes: strings may hold lone surrogates. */
  readonly escapes: boolean;
  readonly limits: JsonLimits;
}

/**
 * How many keys the text has, for a walk that has counted what JSON.parse built (it keeps
 * the last of duplicate keys silently, so a duplicate leaves fewer keys built than written).
 * A text's colons are its keys' and those inside its strings; without an escaped colon
 * (`\u003a`), those inside its strings are the ones in the strings built, unless a duplicate
 * dropped some, which only makes the count larger than the keys built. So the colons less
 * the ones in built strings are the keys written, or a duplicate: one native search per
 * colon. With an escaped colon the text is read string by string instead (keysInText).
 */
function keysIn(text: string, walk: Walk, escapes: boolean): number {
  if (escapes && ESCAPED_COLON.test(text)) return keysInText(text);
  return colons(text) - walk.colons;
}

const ESCAPED_COLON = /\\u003a/i;

function colons(s: string): number {
  let n = 0;
  for (let at = s.indexOf(':'); at !== -1; at = s.indexOf(':', at + 1)) n++;
  return n;
}

/** The value and everything in it are within the limits; counts the keys and the colons in strings met in `walk`. */
function checked(v: JsonValue, depth: number, walk: Walk): boolean {
  if (typeof v === 'string') {
    if (v.indexOf(':') !== -1) walk.colons += colons(v);
    return !walk.escapes || v.isWellFormed();
  }
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v !== 'object' || v === null) return true;
  if (depth > walk.limits.maxDepth) return false;
  if (Array.isArray(v)) {
    if (v.length > walk.limits.maxArrayLength) return false;
    for (let i = 0; i < v.length; i++) if (!checked(v[i]!, depth + 1, walk)) return false;
    return true;
  }
  let n = 0;
  for (const key in v) {
    if (++n > walk.limits.maxObjectKeys || ((key.length === 9 || key.length === 11) && FORBIDDEN_KEYS.has(key))) return false;
    if (key.indexOf(':') !== -1) walk.colons += colons(key);
    if (walk.escapes && !key.isWellFormed()) return false;
    if (!checked(v[key]!, depth + 1, walk)) return false;
  }
  // JSON.parse makes "__proto__" an own key that for-in lists like any other.
  walk.keys += n;
  return true;
}

/**
 * How many object keys the JSON text has: its colons outside strings. Linear: each string
 * is skipped by its quotes, and the next colon is searched for only once it is passed.
 */
function keysInText(s: string): number {
  let n = 0;
  let colon = s.indexOf(':');
  let i = 0;
  for (;;) {
    const q = s.indexOf('"', i);
    const end = q === -1 ? s.length : q;
    while (colon !== -1 && colon < end) {
      n++;
      colon = s.indexOf(':', colon + 1);
    }
    if (q === -1) return n;
    // The closing quote: the first one not escaped (preceded by an even run of backslashes).
    let close = q;
    for (;;) {
      close = s.indexOf('"', close + 1);
      if (close === -1) return n; // unterminated: JSON.parse refused it already
      let b = close - 1;
      while (s.charCodeAt(b) === BACKSLASH) b--;
      if ((close - 1 - b) % 2 === 0) break;
    }
    i = close + 1;
    if (colon !== -1 && colon < i) colon = s.indexOf(':', i);
  }
}

/** The JS parser alone (the reference the fast path is tested against): the first fault, with where it is. */
export function strictParse(text: string, limits: JsonLimits): JsonResult {
  const p = new Parser(text, limits);
  try {
    const value = p.value(0);
    p.ws();
    if (p.i !== text.length) p.fail('text after the JSON value');
    return { ok: true, value };
  } catch (e) {
    if (e instanceof JsonError) return { ok: false, message: e.message };
    throw e;
  }
}

/**
 * What strict reading refuses in a text JSON.parse has already read as `value`: nesting,
 * sizes, a duplicate key (JSON.parse keeps the last silently) or a key naming a prototype
 * member, with where it is; null when there is nothing. Lone surrogates are left to the
 * caller (one refuses them, one repairs them). Its walk recurses no deeper than the limit.
 */
export function jsonFault(text: string, value: JsonValue, limits: JsonLimits): string | null {
  const walk: Walk = { keys: 0, colons: 0, escapes: false, limits };
  if (checked(value, 1, walk) && walk.keys === keysIn(text, walk, text.indexOf('\\') !== -1)) return null;
  const strict = strictParse(text, limits);
  return strict.ok ? null : strict.message;
}

/** The value is a parsed JSON object (not an array, not null). */
export function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
