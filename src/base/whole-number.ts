// The one rule for whole numbers given as text (flags, IVTD_* variables, query
// parameters) or as JSON values (API bodies, control-socket arguments): decimal digits
// with an optional minus, within the safe-integer range. Callers word their own errors.

const WHOLE_NUMBER_RE = /^-?\d+$/;

/** The value of `text` when it is a whole number, else undefined ("-0" is 0). */
export function parseWholeNumber(text: string): number | undefined {
  if (!WHOLE_NUMBER_RE.test(text)) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n)) return undefined;
  return n === 0 ? 0 : n;
}

/** True when `v` is a whole number from `min` to `max` (inclusive). */
export function isWholeNumberIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;
}
