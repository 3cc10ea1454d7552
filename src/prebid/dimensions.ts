// The reporting dimensions of one lookup, in the order of TUPLE_DIMENSIONS (src/base/enums.ts):
// one named line per dimension, so a new dimension is one line here and one in enums.ts
// (test/prebid/dimensions.test.ts fails on a position left unwritten). The category comes
// from the score, not the request: the caller passes it in.
// Written out rather than as a table of one small function per dimension: called through
// one site, 19 functions made V8's call megamorphic (a micro-benchmark, 6 December 2026:
// about 265 ns a lookup for the table with clipDim on every value, 145 ns written out).
import { environmentOf } from '../base/enums.ts';
import { DIM_INDEX as D, clipDim } from '../counts/tuple.ts';
import type { Category } from '../signals/category.ts';
import type { LookupSignals } from './gather.ts';
import type { LookupRequest } from './validate.ts';

/**
 * Fills `out` (length TUPLE_DIMENSIONS.length) with this lookup's values: request and UA
 * text through clipDim (cut to DIM_VALUE_MAX, never holding SEP); adt, dvt, env and the
 * category are made here from short fixed sets (numbers, environments, categories), which
 * clipDim would return as they are.
 */
export function fillDimensions(r: LookupRequest, s: LookupSignals, category: Category, out: string[]): string[] {
  out[D.pub] = clipDim(r.pub);
  out[D.sid] = clipDim(r.sid);
  out[D.app] = clipDim(r.app);
  out[D.dmn] = clipDim(r.dmn);
  out[D.node] = clipDim(r.node);
  out[D.adt] = String(r.adt);
  // The caller's country when given, else the IP's.
  out[D.geo] = clipDim(r.geo || s.ip.country);
  out[D.dvt] = String(r.dvt);
  out[D.os] = clipDim(s.ua.os);
  out[D.browser] = clipDim(s.ua.browser);
  out[D.env] = environmentOf(r.app, r.dvt);
  out[D.cmp] = clipDim(r.cmp);
  out[D.adv] = clipDim(r.adv);
  out[D.p1] = clipDim(r.p1);
  out[D.p2] = clipDim(r.p2);
  out[D.p3] = clipDim(r.p3);
  out[D.p4] = clipDim(r.p4);
  out[D.p5] = clipDim(r.p5);
  // Why the transaction is invalid ('none' when valid): categoryOf(…) of its score.
  out[D.category] = category;
  return out;
}
