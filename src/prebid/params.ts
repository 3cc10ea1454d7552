// The lookup's query parameters (spec 4.4) as fixed slots, so the scanner can fill a
// reused array instead of building an object per request.

export const PARAM_NAMES = [
  'p', 'k', 'pub', 'node', 'ip', 'ua', 'uid', 'ifa', 'app', 'sid', 'adt', 'dvt', 'rat', 'adv',
  'plc', 'cre', 'cb', 'dim', 'aid', 'geo', 'p1', 'p2', 'p3', 'p4', 'p5', 'schain', 'dmn', 'cmp',
] as const;
export type ParamName = (typeof PARAM_NAMES)[number];

export const P = Object.fromEntries(PARAM_NAMES.map((n, i) => [n, i])) as { readonly [K in ParamName]: number };
export const PARAM_COUNT = PARAM_NAMES.length;

/** Required on every lookup (k and p are checked first, as authentication). */
export const REQUIRED: readonly number[] = [P.pub, P.node, P.ip, P.ua, P.uid, P.sid, P.adt, P.dvt];

/** The names of up to 4 characters, packed (packName). */
const PACKED = new Map<number, number>();
for (let i = 0; i < PARAM_NAMES.length; i++) {
  const n = PARAM_NAMES[i]!;
  if (n.length <= 4) PACKED.set(packName(n, 0, n.length), i);
}
const LONG_NAMES = PARAM_NAMES.map((n, i) => [n, i] as const).filter(([n]) => n.length > 4);

/** The length, then each character's byte: distinct for distinct ASCII names up to 4 characters (NUL included). */
function packName(s: string, start: number, end: number): number {
  let key = end - start;
  for (let i = start; i < end; i++) key = key * 256 + (s.charCodeAt(i) & 0xff);
  return key;
}

/**
 * Slot of the parameter named between `start` and `end` in `s` (the query), or -1 (unknown
 * parameters such as `rid` are ignored); the name is never taken out of `s` as a string.
 */
export function paramIndexAt(s: string, start: number, end: number): number {
  const len = end - start;
  if (len <= 4) {
    for (let i = start; i < end; i++) if (s.charCodeAt(i) > 0x7f) return -1; // (packing keeps a byte of each)
    return PACKED.get(packName(s, start, end)) ?? -1;
  }
  for (const [n, i] of LONG_NAMES) if (n.length === len && s.startsWith(n, start)) return i;
  return -1;
}
