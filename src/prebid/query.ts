// One-pass scanner for the raw lookup query string (spec 4.4 rules 2-4). It reads the
// still-encoded text once, rejects what the contract forbids, and decodes only the values
// of known parameters into a reused slot array. No URLSearchParams, no per-parameter objects.
import type { ErrorAnswer } from '../errors.ts';
import { isHexDigit, percentDecodeChecked } from '../http/percent.ts';
import { PARAM_COUNT, PARAM_NAMES, paramIndexAt } from './params.ts';


const AMP = 0x26, EQ = 0x3d, PCT = 0x25, PLUS = 0x2b, HASH = 0x23, AT = 0x40, SEMI = 0x3b;

/**
 * One scanner per lookup thread. `scan(query)` fills `values` (decoded) and `raw` (as sent)
 * by parameter slot (params.ts), both cleared first, and returns null on success or the
 * first contract violation. `raw` serves checks that are about encoding (schain decoding).
 * Both hold the current request's strings only until the next scan.
 */
export class QueryScanner {
  readonly values: (string | undefined)[] = new Array(PARAM_COUNT).fill(undefined);
  readonly raw: (string | undefined)[] = new Array(PARAM_COUNT).fill(undefined);

  /** Null, or the first violation (a 400). */
  scan(query: string): ErrorAnswer | null {
    const values = this.values;
    const raw = this.raw;
    for (let i = 0; i < PARAM_COUNT; i++) {
      values[i] = undefined;
      raw[i] = undefined;
    }
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
    if (!needsDecode) {
      this.values[idx] = rawValue;
      return null;
    }
    // (Its escapes were checked above.)
    const decoded = percentDecodeChecked(rawValue.indexOf('+') === -1 ? rawValue : rawValue.replace(/\+/g, ' '));
    if (decoded === null) {
      return { status: 400, code: 'bad_encoding', message: `Parameter ${PARAM_NAMES[idx]} is not valid percent-encoded UTF-8.` };
    }
    this.values[idx] = decoded;
    return null;
  }
}

function clip(s: string): string {
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}
