// Percent-decoding (RFC 3986) shared by the lookup's query scanner and the supply-chain
// parser: strict, so a broken escape is an answer ("bad encoding"), never an exception.

export function isHexDigit(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

/** Every '%' in s starts a %XX escape. */
export function wellFormedEscapes(s: string, from = 0): boolean {
  for (let i = s.indexOf('%', from); i !== -1; i = s.indexOf('%', i + 3)) {
    if (i + 2 >= s.length || !isHexDigit(s.charCodeAt(i + 1)) || !isHexDigit(s.charCodeAt(i + 2))) return false;
  }
  return true;
}

/**
 * Percent-decodes s (`+` stays `+`), or null when the encoding is broken: a '%' not
 * followed by two hex digits, or escapes that are not UTF-8 (e.g. %FF, overlong forms).
 */
export function percentDecode(s: string): string | null {
  const pct = s.indexOf('%');
  if (pct === -1) return s;
  // Cheap syntax check first, so the common broken case does not cost an exception.
  if (!wellFormedEscapes(s, pct)) return null;
  return percentDecodeChecked(s);
}

/** percentDecode for a string whose escapes are known to be well formed (the query scanner checked them). */
export function percentDecodeChecked(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null; // escapes that are not UTF-8
  }
}
