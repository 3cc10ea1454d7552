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

/** The answer's middle, ipReputation to schain: seven flags, so at most 128 texts, each made once. */
const MIDDLE: Array<string | undefined> = new Array<string | undefined>(128).fill(undefined);
const BOT = 1, HOSTING = 2, VPN = 4, UA_VALID = 8, SCHAIN_VALID = 16, SCHAIN_VERIFIED = 32, SCHAIN_COMPLETE = 64;

function middleText(f: number): string {
  const b = (bit: number) => (f & bit) !== 0;
  return (
    `"ipReputation":{"ipBotActivity":${b(BOT)},"ipHosting":${b(HOSTING)},"ipVpn":${b(VPN)}},` +
    `"uaValid":${b(UA_VALID)},` +
    `"schain":{"valid":${b(SCHAIN_VALID)},"verified":${b(SCHAIN_VERIFIED)},"complete":${b(SCHAIN_COMPLETE) ? 1 : 0}}`
  );
}

/**
 * ipReputation.ipHosting says what the address is, also when an SSAI spoof (ssai_spoof) stands
 * for it among the reasons. `lid`: the lookup id (src/prebid/lid.ts), '' for none (the admin
 * explain makes none). `tail`: more members (`,"id":…`, the OpenRTB answer's), '' for none.
 * The flags' part comes from a table: fewer pieces to join here and to flatten when sent.
 */
export function responseJson(s: LookupSignals, r: ScoreResult, lid = '', tail = ''): string {
  const f =
    (s.ipBotActivity ? BOT : 0) |
    (s.ipHosting || s.ip.hosting ? HOSTING : 0) |
    (s.ipVpn || s.ipProxy || s.ipTor ? VPN : 0) |
    (uaValid(s) ? UA_VALID : 0) |
    (s.schainValid ? SCHAIN_VALID : 0) |
    (s.schainVerified ? SCHAIN_VERIFIED : 0) |
    (s.schainCompleteFlag === 1 ? SCHAIN_COMPLETE : 0);
  // Joined with + on strings, not a template, whose every part went through a ToString call
  // (0.8 % of the lookup thread under GET load in bench:profile; in process the two forms
  // differ by about 10 ns).
  return (
    '{"botRisk":{"score":' + num4(r.score) + ',"band":"' + r.band + '","confidence":' + num4(r.confidence) +
    '},"components":{"p_hard":' + num4(r.p_hard) + ',"p_givt":' + num4(r.p_givt) + ',"p_sivt":' + num4(r.p_sivt) + ',"p_hist":' + num4(r.p_hist) +
    '},' + (MIDDLE[f] ??= middleText(f)) +
    (lid === '' ? '' : ',"lid":"' + lid + '"') +
    tail +
    '}'
  );
}
