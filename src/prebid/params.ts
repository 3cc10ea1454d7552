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

const INDEX = new Map<string, number>(PARAM_NAMES.map((n, i) => [n, i]));
/** Slot of a known parameter name, or -1 (unknown parameters such as `rid` are ignored). */
export function paramIndex(name: string): number {
  return INDEX.get(name) ?? -1;
}
