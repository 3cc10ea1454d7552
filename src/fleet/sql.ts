// The one place where values become ClickHouse SQL text. ClickHouse 18.16 has no query
// parameters ({x:String} fails with "Unknown setting param_x"), so every value that is
// not a constant of this code reaches SQL through these functions and nowhere else:
// strings as escaped literals, numbers as checked integers, names as checked identifiers.
// Bulk rows never go through SQL text: they travel as JSONEachRow insert bodies.
import { isIdentifier } from '../base/clickhouse-url.ts';
import { toStoredString } from '../base/text.ts';

/**
 * A single-quoted ClickHouse string literal holding exactly `value`.
 *
 * ClickHouse reads `\` escapes inside quotes; the rule here is the smallest one that is
 * unambiguous on 18.16 and on current releases: `\` → `\\`, `'` → `\'`, every control
 * character (U+0000–U+001F, U+007F) → `\xHH`, everything else as is (UTF-8 on the wire).
 * A lone UTF-16 surrogate cannot be sent as UTF-8 and becomes U+FFFD, the same character
 * the JSON insert path stores for it (see toStoredString).
 */
export function sqlString(value: string): string {
  if (typeof value !== 'string') throw new TypeError(`sqlString wants a string, got ${typeof value}`);
  let out = "'";
  const s = toStoredString(value);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x5c) out += '\\\\';
    else if (c === 0x27) out += "\\'";
    else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else out += s[i];
  }
  return out + "'";
}

/** A whole number as SQL text; anything else (NaN, fractions, beyond 2^53) is a programming error. */
export function sqlInt(n: number): string {
  if (!Number.isSafeInteger(n)) throw new RangeError(`sqlInt wants a safe integer, got ${n}`);
  return String(n);
}

/** `(a, b, c)` of literals, for IN. */
export function sqlList(values: ReadonlyArray<string | number>): string {
  if (values.length === 0) throw new RangeError('sqlList wants at least one value');
  return '(' + values.map((v) => (typeof v === 'number' ? sqlInt(v) : sqlString(v))).join(', ') + ')';
}

/** A database or table name, checked: letters, digits and `_`, not starting with a digit. */
export function sqlIdentifier(name: string): string {
  if (!isIdentifier(name)) throw new RangeError(`"${name}" is not a plain identifier (letters, digits, _; not starting with a digit)`);
  return name;
}

export { toStoredString };
