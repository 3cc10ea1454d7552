// Step 4 of a lookup: the spec 2.2 response, written straight to JSON text (numbers are
// already rounded by the score; every field is a number or a boolean, and the lid is
// base64url, so no escaping).
import type { ScoreResult } from '../signals/score.ts';
import type { LookupSignals } from './gather.ts';

/** `uaValid`: false when the UA is malformed, automated, inconsistent with the request or contradicted by its client hints. */
export function uaValid(s: LookupSignals): boolean {
  return !(s.uaMalformed || s.automation || s.uaInconsistent || s.suaMismatch);
}

/** Text of k / 10 000 by k, filled as used (at most 10 001 short strings per thread). */
const FOUR_DECIMALS: Array<string | undefined> = new Array<string | undefined>(10_001).fill(undefined);

/**
 * String(x), from a table for the values the score rounds to (four decimals in [0, 1]): V8
 * caches few number strings, and under traffic with varied scores each miss formats a double
 * (~0.3 µs a lookup measured under the flood). Any other number is formatted as usual.
 */
export function num4(x: number): string {
  const k = Math.round(x * 10_000);
  if (k >= 0 && k <= 10_000 && k / 10_000 === x) return (FOUR_DECIMALS[k] ??= String(x));
  return String(x);
}

/**
 * ipReputation.ipHosting says what the address is, also when an SSAI spoof (ssai_spoof) stands
 * for it among the reasons. `lid`: the lookup id (src/prebid/lid.ts), '' for none (the admin
 * explain makes none). `tail`: more members (`,"id":…`, the OpenRTB answer's), '' for none.
 */
export function responseJson(s: LookupSignals, r: ScoreResult, lid = '', tail = ''): string {
  return (
    `{"botRisk":{"score":${num4(r.score)},"band":"${r.band}","confidence":${num4(r.confidence)}},` +
    `"components":{"p_hard":${num4(r.p_hard)},"p_givt":${num4(r.p_givt)},"p_sivt":${num4(r.p_sivt)},"p_hist":${num4(r.p_hist)}},` +
    `"ipReputation":{"ipBotActivity":${s.ipBotActivity},"ipHosting":${s.ipHosting || s.ip.hosting},"ipVpn":${s.ipVpn || s.ipProxy || s.ipTor}},` +
    `"uaValid":${uaValid(s)},` +
    `"schain":{"valid":${s.schainValid},"verified":${s.schainVerified},"complete":${s.schainCompleteFlag}}` +
    (lid === '' ? '' : `,"lid":"${lid}"`) +
    tail +
    '}'
  );
}
