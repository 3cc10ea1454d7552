// The reporting dimensions of one lookup, in the order of TUPLE_DIMENSIONS (src/enums.ts):
// one named line per dimension, so a new dimension is one line here and one in enums.ts
// (test/prebid/dimensions.test.ts fails on a position left unwritten). The category comes
// from the score, not the request: the caller passes it in.
// Written out rather than as a table of one small function per dimension: called through
// one site, 19 functions made V8's call megamorphic (a micro-benchmark, 6 December 2026:
// about 265 ns a lookup for the table with clipDim on every value, 145 ns written out).
import { environmentOf } from '../enums.ts';
import { DIM_INDEX as D, clipDim } from '../reporting/tuple.ts';
import type { Category } from '../signals/category.ts';
import type { LookupSignals } from './gather.ts';
import type { LookupRequest } from './validate.ts';

/** Text from a request or a UA (anything): cut to DIM_VALUE_MAX, never holding SEP (clipDim). */
function text(v: string): string {
  return v === '' ? v : clipDim(v);
}

/**
 * Fills `out` (length TUPLE_DIMENSIONS.length) with this lookup's values, each cut to
 * DIM_VALUE_MAX. adt, dvt, env and the category are made here from short fixed sets
 * (numbers, environments, categories): clipDim would return them as they are.
 */
export function fillDimensions(r: LookupRequest, s: LookupSignals, category: Category, out: string[]): string[] {
  out[D.pub] = text(r.pub);
  out[D.sid] = text(r.sid);
  out[D.app] = text(r.app);
  out[D.dmn] = text(r.dmn);
  out[D.node] = text(r.node);
  out[D.adt] = String(r.adt);
  // The caller's country when given, else the IP's.
  out[D.geo] = text(r.geo || s.ip.country);
  out[D.dvt] = String(r.dvt);
  out[D.os] = text(s.ua.os);
  out[D.browser] = text(s.ua.browser);
  out[D.env] = environmentOf(r.app, r.dvt);
  out[D.cmp] = text(r.cmp);
  out[D.adv] = text(r.adv);
  out[D.p1] = text(r.p1);
  out[D.p2] = text(r.p2);
  out[D.p3] = text(r.p3);
  out[D.p4] = text(r.p4);
  out[D.p5] = text(r.p5);
  // Why the transaction is invalid ('none' when valid): categoryOf(…) of its score.
  out[D.category] = category;
  return out;
}
