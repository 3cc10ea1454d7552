// Step 4 of a lookup: the spec 2.2 response, written straight to JSON text (numbers are
// already rounded by the score; every field is a number or a boolean, and the lid is
// base64url, so no escaping).
import type { ScoreResult } from '../signals/score.ts';
import type { LookupSignals } from './gather.ts';

/** `uaValid`: false when the UA is malformed, automated, inconsistent with the request or contradicted by its client hints. */
export function uaValid(s: LookupSignals): boolean {
  return !(s.uaMalformed || s.automation || s.uaInconsistent || s.suaMismatch);
}

/**
 * ipReputation.ipHosting says what the address is, also when an SSAI spoof (ssai_spoof) stands
 * for it among the reasons. `lid`: the lookup id (src/prebid/lid.ts), '' for none (the admin
 * explain makes none). `tail`: more members (`,"id":…`, the OpenRTB answer's), '' for none.
 */
export function responseJson(s: LookupSignals, r: ScoreResult, lid = '', tail = ''): string {
  return (
    `{"botRisk":{"score":${r.score},"band":"${r.band}","confidence":${r.confidence}},` +
    `"components":{"p_hard":${r.p_hard},"p_givt":${r.p_givt},"p_sivt":${r.p_sivt},"p_hist":${r.p_hist}},` +
    `"ipReputation":{"ipBotActivity":${s.ipBotActivity},"ipHosting":${s.ipHosting || s.ip.hosting},"ipVpn":${s.ipVpn || s.ipProxy || s.ipTor}},` +
    `"uaValid":${uaValid(s)},` +
    `"schain":{"valid":${s.schainValid},"verified":${s.schainVerified},"complete":${s.schainCompleteFlag}}` +
    (lid === '' ? '' : `,"lid":"${lid}"`) +
    tail +
    '}'
  );
}
