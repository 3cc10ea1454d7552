// The OpenRTB lookup on one LookupEngine, without a listener: what a lookup without an IP
// leaves behind in the thread's state (a fleet host's bot-IP report, history).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { loadBundle } from '../../src/data/bundle.ts';
import { buildLookupData } from '../../src/prebid/lookup-data.ts';
import { planMemory } from '../../src/memory/budget.ts';
import { allocateLookupMemory } from '../../src/prebid/lookup-memory.ts';
import { LookupEngine } from '../../src/prebid/pipeline.ts';
import { bidRequestOf } from '../../src/prebid/ortb/body.ts';

t.test('a bid request without an IP is judged, and never reported as a bot IP', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-ortb-engine-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const data = buildLookupData(loadBundle({ dataDir: dir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined }), 1).data;
  const engine = new LookupEngine(data, allocateLookupMemory(planMemory(64, 1)), { trackBotIps: true });
  const partner = '6f1c2f9e-8a4b-4c7d-9e2f-1a2b3c4d5e6f';
  engine.keys.replace([{ customer_id: 'c1', partner_id: partner, key_hash: createHash('sha256').update('key-1').digest('hex'), expires_at_ms: null }]);
  const query = `p=${partner}&k=key-1&node=n`;
  const crawler = { id: 'r1', imp: [{ id: '1', banner: { w: 300, h: 250 } }], device: { ua: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' } };
  for (let i = 0; i < 3; i++) {
    const out = engine.lookupOrtb(query, bidRequestOf(crawler), Date.now());
    t.equal(out.status, 200, out.body);
    t.match(JSON.parse(out.body), { botRisk: { band: 'high' }, nbr: 3, missing: ['device.ip', 'device.devicetype', 'user.id', 'site.publisher.id', 'source.schain'] });
  }
  t.same(engine.botIps!.take(), [], 'no IP, no bot IP (not an empty string)');
  const withIp = { ...crawler, device: { ...crawler.device, ip: '73.162.10.50' } };
  engine.lookupOrtb(query, bidRequestOf(withIp), Date.now());
  t.match(engine.botIps!.take(), [{ ip: '73.162.10.50' }], 'with one, as before');
  const bare = engine.lookupOrtb(query, bidRequestOf({ id: 'r2', imp: [{ id: '1' }] }), Date.now());
  t.match(JSON.parse(bare.body), { botRisk: { band: 'low' }, uaValid: true, reasons: [] }, 'nothing at all: an answer, no signal fired');
  t.ok((JSON.parse(bare.body) as { botRisk: { confidence: number } }).botRisk.confidence < 0.1, 'with a low confidence');
  // The filter's call (verdictOnly): the same verdict in lastOrtb, no body built.
  const full = engine.lookupOrtb(query, bidRequestOf(crawler), Date.now());
  const fullVerdict = { ...engine.lastOrtb };
  const only = engine.lookupOrtb(query, bidRequestOf(crawler), Date.now(), null, true);
  t.same(only, { status: 200, body: '', band: full.band }, 'verdictOnly: a 200 without a body');
  t.same({ ...engine.lastOrtb, score: 0 }, { ...fullVerdict, score: 0 }, 'the same band, nbr and lid in lastOrtb');
  t.match(fullVerdict, { band: 'high', nbr: 3 });
  const refused = engine.lookupOrtb('p=nobody&k=x', bidRequestOf(crawler), Date.now(), null, true);
  t.not(refused.status, 200, 'a refusal is still a refusal, with its body');
  t.not(refused.body, '');
});
