// The reporting dimensions of one lookup, in the order of TUPLE_DIMENSIONS (src/enums.ts):
// one rule per dimension, named, so a new dimension is one line here and one in enums.ts.
// The category comes from the score, not the request: the caller passes it in.
import { TUPLE_DIMENSIONS, environmentOf, type TupleDimension } from '../enums.ts';
import { clipDim } from '../reporting/tuple.ts';
import type { Category } from '../signals/category.ts';
import type { LookupSignals } from './gather.ts';
import type { LookupRequest } from './validate.ts';

type Rule = (r: LookupRequest, s: LookupSignals, category: Category) => string;

const RULES: Readonly<Record<TupleDimension, Rule>> = {
  pub: (r) => r.pub,
  sid: (r) => r.sid,
  app: (r) => r.app,
  dmn: (r) => r.dmn,
  node: (r) => r.node,
  adt: (r) => String(r.adt),
  // The caller's country when given, else the IP's.
  geo: (r, s) => r.geo || s.ip.country,
  dvt: (r) => String(r.dvt),
  os: (_r, s) => s.ua.os,
  browser: (_r, s) => s.ua.browser,
  env: (r) => environmentOf(r.app, r.dvt),
  cmp: (r) => r.cmp,
  adv: (r) => r.adv,
  p1: (r) => r.p1,
  p2: (r) => r.p2,
  p3: (r) => r.p3,
  p4: (r) => r.p4,
  p5: (r) => r.p5,
  // Why the transaction is invalid ('none' when valid): categoryOf(…) of its score.
  category: (_r, _s, c) => c,
};

const ORDERED: readonly Rule[] = TUPLE_DIMENSIONS.map((d) => RULES[d]);

/** Fills `out` (length TUPLE_DIMENSIONS.length) with this lookup's values, each cut to DIM_VALUE_MAX. */
export function fillDimensions(r: LookupRequest, s: LookupSignals, category: Category, out: string[]): string[] {
  for (let i = 0; i < ORDERED.length; i++) out[i] = clipDim(ORDERED[i]!(r, s, category));
  return out;
}
