// One-pass scanner for the raw lookup query string (spec 4.4 rules 2-4). It reads the
// still-encoded text once, rejects what the contract forbids, and decodes only the values
// of known parameters into a reused slot array. No URLSearchParams, no per-parameter objects.
import type { ErrorAnswer } from '../base/errors.ts';
import { isHexDigit, percentDecodeChecked } from '../base/percent.ts';
import { ownString } from '../memory/own-string.ts';
import { HASH as HASH_WORDS, hashString } from '../memory/hash.ts';
import { DEFAULT_MEMO_BYTES, StringMemo } from '../memory/string-memo.ts';
import { P, PARAM_COUNT, PARAM_NAMES, paramIndexAt } from './params.ts';
import { QUERY_SCAN_WASM } from './query-scan-wasm.ts';
import { compileWasm, instantiateWasm, wasmGlobal } from '../runtime/wasm.ts';


const AMP = 0x26, EQ = 0x3d, PCT = 0x25, PLUS = 0x2b, HASH = 0x23, AT = 0x40, SEMI = 0x3b;
/** Characters no value may hold raw but '=' (which names end with): '#', '@', ';', controls. */
const UNUSUAL = /[#@;\x00-\x1f\x7f]/;

// The first pass as WebAssembly (src/prebid/wasm/query-scan.ts): one per thread (each loads
// this module), used by every scanner of the thread in turn. Null without WebAssembly or its
// SIMD: the JavaScript pass (a regular expression and native searches) does the same.
interface QueryScanExports {
  memory: WebAssembly.Memory;
  scan(len: number): number;
  addName(len: number, slot: number): number;
  hashRange(start: number, end: number): number;
  uaValue(start: number, end: number, seed: number): number;
}

const encoder = new TextEncoder();
const compiled = compileWasm('the query pass', QUERY_SCAN_WASM);
const wasm = compiled === null ? null : instantiateWasm<QueryScanExports>(compiled);
const at = (name: string): number => (wasm === null ? 0 : wasmGlobal(wasm, name));
const IN = at('IN'), IN_CAPACITY = at('IN_CAPACITY'), SEGS = at('SEGS'), SEG_UPPER = at('UPPER'), SEG_EQ_IN_VALUE = at('EQ_IN_VALUE'), SEG_DECODE = at('DECODE'), SLOT_SHIFT = at('SLOT_SHIFT');
const queryBytes = wasm === null ? new Uint8Array(0) : new Uint8Array(wasm.memory.buffer, IN, IN_CAPACITY);
const segs = wasm === null ? new Int32Array(0) : new Int32Array(wasm.memory.buffer, SEGS, at('SEG_CAPACITY') * 4);
// uaValue's output: the decoded UA's bytes and its four hash words (the memory never grows).
const UA_OUT = at('UA_OUT');
const wasmBytes = wasm === null ? Buffer.alloc(0) : Buffer.from(wasm.memory.buffer);
const uaHashWords = wasm === null ? new Uint32Array(0) : new Uint32Array(wasm.memory.buffer, at('UA_HASH'), 4);
// The parameters' names into its table (a name it cannot hold is a programming error).
PARAM_NAMES.forEach((name, slot) => {
  if (wasm !== null && (encoder.encodeInto(name, queryBytes).written !== name.length || wasm.addName(name.length, slot) !== 0)) throw new Error(`query-scan: cannot hold the parameter name ${name}`);
});

/** Whether lookup queries are read by the WebAssembly pass (tests compare it with the JavaScript one). */
export const queryScanWasm = wasm !== null;

/**
 * One scanner per lookup thread. `scan(query)` fills `values` (decoded) and `raw` (as sent)
 * by parameter slot (params.ts), both cleared first, and returns null on success or the
 * first contract violation. `raw` serves checks that are about encoding (schain decoding).
 * Both hold the current request's strings only until the next scan.
 */
export class QueryScanner {
  readonly values: (string | undefined)[] = new Array(PARAM_COUNT).fill(undefined);
  readonly raw: (string | undefined)[] = new Array(PARAM_COUNT).fill(undefined);
  /**
   * UAs whose decoding the scanner remembers (as sent -> as decoded), bounded by its share of
   * the budget: traffic repeats a few thousand UAs, and the same decoded string object lets
   * the UA cache find its hashes by the string's own (V8-kept) hash (UaCache.hash). Keyed by
   * a hash of the text as sent (uaKey): a V8 map keyed by the new request's string would hash
   * its characters one by one (about 0.28 µs for a 150-character UA, 1.7 % of the lookup
   * thread under GET load), where the WebAssembly pass hashes its bytes eight at a time.
   */
  private readonly uaDecoded: StringMemo<UaDecoding, number>;
  /** The last scan's UA when it was not remembered: its key, raw text (null: none) and value. */
  private pendingKey = 0;
  private pendingRaw: string | null = null;
  private pendingValue = '';
  /**
   * The last scan's UA when the WebAssembly pass decoded it (a UA it did not remember, all
   * ASCII), else null; `uaHash` then holds its hashUa words under `uaSeed`, made in the same
   * pass over its bytes, for the UA cache (UaCache.presetHashes): no second pass over its
   * characters in JavaScript. Under a flood of UAs (bench:flood) the profile put decoding and
   * hashing such a UA in JavaScript at about 1.1 µs of the lookup thread; in process, a scan
   * and UA verdict take about 0.5 µs less this way (scratch measurement, docs/benchmarks.md).
   */
  uaHashed: string | null = null;
  readonly uaHash = new Uint32Array(4);

  /**
   * `useWasm` false: the JavaScript first pass even where the WebAssembly one runs (tests).
   * `uaSeed`: the UA cache's seed, for `uaHash` (null: no UA is hashed here).
   */
  constructor(uaMemoBytes = DEFAULT_MEMO_BYTES, private readonly useWasm = true, private readonly uaSeed: number | null = null) {
    this.uaDecoded = new StringMemo(uaMemoBytes);
  }

  /** Null, or the first violation (a 400). */
  scan(query: string): ErrorAnswer | null {
    this.clear();
    // The common query breaks no rule: checked by one pass in WebAssembly (an ASCII query),
    // else by native searches (a regular expression for the characters no value may hold raw,
    // indexOf for the rest). Anything unusual is scanned again character by character, which
    // finds the first violation exactly.
    if (this.useWasm && wasm !== null && query.length <= IN_CAPACITY) {
      const r = encoder.encodeInto(query, queryBytes);
      if (r.written === query.length && r.read === query.length) {
        if (this.plainWasm(query, wasm.scan(query.length))) return null;
        return this.exact(query);
      }
    }
    if (!UNUSUAL.test(query) && this.plain(query)) return null;
    return this.exact(query);
  }

  /** plain() from the WebAssembly pass's `n` records (a negative n: a violation, or too many parameters). */
  private plainWasm(q: string, n: number): boolean {
    if (n < 0) return false;
    for (let i = 0; i < n; i++) {
      const r = i << 2;
      const start = segs[r]!, eq = segs[r + 1]!, end = segs[r + 2]!, flags = segs[r + 3]!;
      if ((flags & (SEG_UPPER | SEG_EQ_IN_VALUE)) !== 0) return false;
      if (!this.take(q, start, eq, end, (flags & SEG_DECODE) !== 0, (flags >> SLOT_SHIFT) - 1, true)) return false;
    }
    return true;
  }

  private clear(): void {
    this.pendingRaw = null;
    this.uaHashed = null;
    const values = this.values;
    const raw = this.raw;
    if (this.othersWrote) {
      this.othersWrote = false;
      values.fill(undefined);
      raw.fill(undefined);
    } else {
      const filled = this.filled;
      for (let i = 0; i < this.filledCount; i++) {
        const slot = filled[i]!;
        values[slot] = undefined;
        raw[slot] = undefined;
      }
    }
    this.filledCount = 0;
  }

  /** The slots the last scan filled (its first filledCount): clear() empties only those. */
  private readonly filled = new Int32Array(PARAM_COUNT);
  private filledCount = 0;
  private othersWrote = false;

  /**
   * Said by code that writes slots of `values` or `raw` itself (an OpenRTB body's fields,
   * mapBidRequest): the next scan clears every slot, not only those it filled.
   */
  slotsWritten(): void {
    this.othersWrote = true;
  }

  /**
   * Fills the slots when the query breaks no rule and returns true; false as soon as anything
   * could be a violation (the caller then runs `exact`). Known to hold no character UNUSUAL
   * matches. Each of '=', '%', '+' is searched for once over the whole query (a cursor each).
   */
  private plain(q: string): boolean {
    const len = q.length;
    let nextEq = q.indexOf('=');
    let nextPct = q.indexOf('%');
    let nextPlus = q.indexOf('+');
    let start = 0;
    while (start <= len) {
      let end = q.indexOf('&', start);
      if (end === -1) end = len;
      if (end > start) {
        const eq = nextEq !== -1 && nextEq < end ? nextEq : -1;
        const nameEnd = eq === -1 ? end : eq;
        for (let i = start; i < nameEnd; i++) {
          const c = q.charCodeAt(i);
          if (c >= 0x41 && c <= 0x5a) return false;
        }
        if (eq !== -1) {
          nextEq = q.indexOf('=', eq + 1);
          if (nextEq !== -1 && nextEq < end) return false; // a raw '=' in the value
        }
        // A '%' or '+' in the value means decoding it; decodeURIComponent refuses a broken
        // escape as `exact` does (there, with the message saying which).
        let decode = false;
        if (nextPct !== -1 && nextPct < end) {
          if (eq !== -1 && (nextPct > eq || q.lastIndexOf('%', end - 1) > eq)) decode = true;
          nextPct = q.indexOf('%', end);
        }
        if (nextPlus !== -1 && nextPlus < end) {
          if (eq !== -1 && (nextPlus > eq || q.lastIndexOf('+', end - 1) > eq)) decode = true;
          nextPlus = q.indexOf('+', end);
        }
        if (!this.take(q, start, eq, end, decode, paramIndexAt(q, start, nameEnd), false)) return false;
      }
      start = end + 1;
    }
    return true;
  }

  /**
   * One parameter of plain(), [start, end) of the query with its first '=' at eq (-1: none),
   * its name known to be lowercase and its value to hold no raw '=', and its slot (idx, -1
   * for an unknown name): into its slot when it is a known one; false when it could be a
   * violation (an empty name, a duplicate, a broken escape).
   */
  private take(q: string, start: number, eq: number, end: number, decode: boolean, idx: number, inWasm: boolean): boolean {
    if ((eq === -1 ? end : eq) === start) return false;
    if (idx === -1) {
      // An unknown parameter's value is not decoded, but its escapes must still be whole.
      if (decode) {
        for (let i = q.indexOf('%', eq + 1); i !== -1 && i < end; i = q.indexOf('%', i + 3)) {
          if (i + 2 >= end || !isHexDigit(q.charCodeAt(i + 1)) || !isHexDigit(q.charCodeAt(i + 2))) return false;
        }
      }
      return true;
    }
    if (this.raw[idx] !== undefined) return false; // duplicate
    const rawValue = eq === -1 ? '' : q.slice(eq + 1, end);
    this.raw[idx] = rawValue;
    this.filled[this.filledCount++] = idx;
    const value =
      idx !== P.ua ? (decode ? decodeValue(rawValue) : rawValue)
      : inWasm && eq !== -1 ? this.userAgent(rawValue, decode, wasm!.hashRange(eq + 1, end), eq + 1, end)
      : this.userAgent(rawValue, decode, uaKey(rawValue));
    if (value === null) return false;
    this.values[idx] = value;
    return true;
  }

  /**
   * The query read character by character: null, or the first violation (a 400). `scan`
   * must agree with it on every query (the tests compare them on random ones).
   */
  exact(query: string): ErrorAnswer | null {
    this.clear();
    const len = query.length;
    let start = 0;
    while (start <= len) {
      let end = query.indexOf('&', start);
      if (end === -1) end = len;
      if (end > start) {
        const err = this.pair(query, start, end);
        if (err) return err;
      }
      start = end + 1;
    }
    return null;
  }

  private pair(q: string, start: number, end: number): ErrorAnswer | null {
    // Name: up to the first '='; must be lowercase.
    let eq = -1;
    let upper = false;
    for (let i = start; i < end; i++) {
      const c = q.charCodeAt(i);
      if (c === EQ) {
        eq = i;
        break;
      }
      if (c >= 0x41 && c <= 0x5a) upper = true;
    }
    const nameEnd = eq === -1 ? end : eq;
    if (upper) {
      return { status: 400, code: 'uppercase_not_allowed', message: `Parameter names must be lowercase: "${clip(q.slice(start, nameEnd))}".` };
    }
    if (nameEnd === start) return { status: 400, code: 'invalid_request', message: 'A query parameter has an empty name.' };
    // Names are plain ASCII tokens; a percent-encoded name is not a known parameter.
    const idx = paramIndexAt(q, start, nameEnd);
    // Value: raw, still-encoded; the forbidden characters and encoding are checked on it.
    let needsDecode = false;
    if (eq !== -1) {
      for (let i = eq + 1; i < end; i++) {
        const c = q.charCodeAt(i);
        if (c === PCT) {
          if (i + 2 >= end || !isHexDigit(q.charCodeAt(i + 1)) || !isHexDigit(q.charCodeAt(i + 2))) {
            return { status: 400, code: 'bad_encoding', message: `Parameter ${clip(q.slice(start, nameEnd))} has broken percent-encoding.` };
          }
          needsDecode = true;
          i += 2;
        } else if (c === PLUS) {
          needsDecode = true;
        } else if (c === EQ || c === HASH || c === AT || c === SEMI) {
          return {
            status: 400,
            code: 'forbidden_character',
            message: `Parameter ${clip(q.slice(start, nameEnd))} contains a forbidden character "${String.fromCharCode(c)}"; URL-encode the value (# @ = ; are not allowed raw).`,
          };
        } else if (c < 0x20 || c === 0x7f) {
          return { status: 400, code: 'bad_encoding', message: `Parameter ${clip(q.slice(start, nameEnd))} contains a raw control character; URL-encode the value.` };
        }
      }
    }
    if (idx === -1) return null; // unknown parameters (rid, …) are accepted and ignored
    if (this.raw[idx] !== undefined) {
      return { status: 400, code: 'duplicate_parameter', message: `Parameter ${PARAM_NAMES[idx]} is given more than once.` };
    }
    const rawValue = eq === -1 ? '' : q.slice(eq + 1, end);
    this.raw[idx] = rawValue;
    this.filled[this.filledCount++] = idx;
    // (Its escapes were checked above.)
    const value = idx === P.ua ? this.userAgent(rawValue, needsDecode, uaKey(rawValue)) : needsDecode ? decodeValue(rawValue) : rawValue;
    if (value === null) {
      return { status: 400, code: 'bad_encoding', message: `Parameter ${PARAM_NAMES[idx]} is not valid percent-encoded UTF-8.` };
    }
    this.values[idx] = value;
    return null;
  }

  /**
   * The UA's value from its raw text (decoded when `decode`), or null when not valid UTF-8:
   * a string of its own (never a slice holding the query), which the UA cache may keep as
   * its key (UaCache.hash). One remembered (rememberUa) is found by a map probe and is the
   * same string object every time. `key`: the raw text's hash (the pass's hashRange, or uaKey).
   * [from, to): where the value is in the WebAssembly pass's bytes (-1: not read by it); one
   * not remembered is then decoded and hashed there (uaHashed), unless it is not all ASCII.
   */
  private userAgent(rawValue: string, decode: boolean, key: number, from = -1, to = -1): string | null {
    const known = this.uaDecoded.get(key);
    if (known !== undefined && known.raw === rawValue) return known.value;
    let value: string | null = null;
    if (from >= 0 && this.uaSeed !== null) {
      const n = wasm!.uaValue(from, to, this.uaSeed);
      if (n >= 0) {
        value = wasmBytes.toString('latin1', UA_OUT, UA_OUT + n);
        this.uaHash.set(uaHashWords);
        this.uaHashed = value;
      }
    }
    if (value === null) value = decode ? decodeValue(rawValue) : ownString(rawValue);
    if (value === null) return null;
    this.pendingKey = key;
    this.pendingRaw = rawValue;
    this.pendingValue = value;
    return value;
  }

  /**
   * Remembers the last scan's UA (as sent -> its value) when it was not yet: called once the
   * UA cache has found the UA worth remembering (seen twice lately), so a stream of one-off
   * UAs does not churn the map.
   */
  rememberUa(): void {
    const raw = this.pendingRaw;
    if (raw === null) return;
    this.pendingRaw = null;
    const value = this.pendingValue;
    // Sent without escapes, the value is already the raw text's own copy: one string for both.
    // (Another UA of the same key, remembered before, gives way: put replaces it.)
    const same = value === raw;
    if (this.uaDecoded.reserve(UA_DECODING_CHARS + (same ? raw.length : raw.length + value.length)) >= 0) {
      this.uaDecoded.put(this.pendingKey, { raw: same ? value : ownString(raw), value });
    }
  }
}

/** A remembered UA: its text as sent (own string) and as decoded (the same string when sent without escapes). */
interface UaDecoding {
  raw: string;
  value: string;
}

/** What a UaDecoding object adds to a memo entry, in the characters' measure (2 bytes each). */
const UA_DECODING_CHARS = 16;

/**
 * The memo's key of a UA read by the JavaScript pass (a query the WebAssembly pass leaves
 * to it): not hashRange's function, so such a UA and the same one read by the WebAssembly
 * pass are two entries at worst; 30 bits, like hashRange's.
 */
function uaKey(raw: string): number {
  hashString(raw, 0);
  return HASH_WORDS[0]! & 0x3fffffff;
}

/** A value with '+' for space and %XX escapes decoded, or null when they are not UTF-8. */
function decodeValue(rawValue: string): string | null {
  return percentDecodeChecked(rawValue.indexOf('+') === -1 ? rawValue : rawValue.replace(/\+/g, ' '));
}

function clip(s: string): string {
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}
