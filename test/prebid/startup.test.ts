// The pre-bid port opens before the lookup data is in: until the threads have their data,
// /health-check and lookups answer 503 (spec 4.5, 7); once it arrives, 200.
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBundle } from '../../src/data/bundle.ts';
import { LookupServer } from '../../src/server/lookup-threads.ts';
import { planMemory } from '../../src/memory/budget.ts';
import { allocateLookupMemory } from '../../src/prebid/lookup-memory.ts';

t.test('503 until the lookup data is loaded, then 200', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-startup-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const partner = '0b8e9a7e-5b1c-4f7e-9d2a-1c3b5d7f9a2b';
  const key = 'ivp_startup-test-key';
  const keys = [{ customer_id: 'c1', partner_id: partner, key_hash: createHash('sha256').update(key).digest('hex'), expires_at_ms: null }];
  const memory = allocateLookupMemory(planMemory(32, 1));
  const lookups = new LookupServer({ host: '127.0.0.1', port: 0, threads: 1, memory, onCounts: () => undefined });
  const port = await lookups.start(keys);
  t.teardown(() => lookups.stop());

  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const url = `http://127.0.0.1:${port}/api/v1/ivt/lookup?p=${partner}&k=${key}&pub=p&node=n&ip=73.162.10.20&ua=${ua}&uid=u&sid=s.example&adt=1&dvt=2`;
  const health = await fetch(`http://127.0.0.1:${port}/health-check`);
  t.equal(health.status, 503, 'health says it cannot serve lookups yet');
  t.equal(await health.text(), '', 'no body');
  const early = await fetch(url);
  t.equal(early.status, 503);
  t.match(await early.json(), { error: 'unavailable', message: /loading/ });

  t.same(await lookups.reload(loadBundle({ dataDir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined }), 1), []);
  t.equal((await fetch(`http://127.0.0.1:${port}/health-check`)).status, 200, 'healthy once the data is in');
  const ok = await fetch(url);
  t.equal(ok.status, 200, 'keys given at start apply once the data arrives');
  t.match(await ok.json(), { botRisk: { band: 'low' } });
});
