// Bid requests in the shapes real clients send (learned from the IAB's OpenRTB 2.5/2.6 and
// DOOH examples and Prebid Server's request fixtures; written here, with invented values,
// since material fetched from others stays out of this repository): thin ones with only
// `id` and `imp`, `sua` without `ua`, IPv6 only, app and CTV with typed IFAs, video, audio,
// native, DOOH, and the supply chain in its three places. Each is sent unchanged with the
// documented query: every one is spec-valid, so every one gets a 200 verdict.
// tools/ortb-corpus.ts runs any directory of real bid requests the same way.
import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';

t.test('every client-shaped bid request gets a verdict, sent as it is', async (t) => {
  const s = await startTestServer({ threads: 1 });
  t.teardown(() => s.stop());
  const url = `${s.prebid}/api/v1/ivt/ortb?p=${s.customer.partner_id}&k=${s.customer.prebid_key}&node=bidder-1`;
  const seen = { ip: 0, noIp: 0, schain: 0 };
  for (const [name, bid] of Object.entries(SHAPES)) {
    const text = JSON.stringify(bid);
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    const body = await r.text();
    t.equal(r.status, 200, `${name}: ${body.slice(0, 300)}`);
    if (r.status !== 200) continue;
    const j = JSON.parse(body) as { id: string; botRisk: { band: string; confidence: number }; missing: string[]; reasons: unknown[] };
    const sent = bid as { id: string; device?: { ip?: string; ipv6?: string } };
    t.equal(j.id, sent.id, `${name}: id echoed`);
    t.match(j.botRisk.band, /^(low|medium|high)$/, `${name}: a band`);
    t.ok(j.botRisk.confidence > 0 && j.botRisk.confidence <= 1, `${name}: a confidence`);
    t.ok(Array.isArray(j.missing) && Array.isArray(j.reasons), `${name}: missing and reasons`);
    // What the request lacks is listed, what it has is not.
    const hasIp = typeof sent.device?.ip === 'string' || typeof sent.device?.ipv6 === 'string';
    t.equal(j.missing.includes('device.ip'), !hasIp, `${name}: device.ip listed as missing exactly when absent`);
    if (hasIp) seen.ip++;
    else seen.noIp++;
    if (!j.missing.includes('source.schain')) seen.schain++;
  }
  t.ok(seen.ip > 0 && seen.noIp > 0, 'with and without an IP');
  t.ok(seen.schain >= 3, 'the supply chain found in its three places');
});
