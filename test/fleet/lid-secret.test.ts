// A fleet signs lids with one secret: the full instance offers its lid.key to ClickHouse,
// an edge (with a lid.key of its own from an earlier start) takes the fleet's, keeps it in
// its lid.key, and each host's beacon takes the other's lids.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../../src/server/serve.ts';
import { loadOrCreateLidSecret, lidKeyPath } from '../../src/server/lid-secret.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { fixtureQuery } from '../reporting/client.ts';

t.test('one lookup-id secret across the fleet', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const ch = await startClickHouse();
  t.teardown(() => ch.destroy());
  const url = ch.url('fleet');
  const full = await startTestServer({ clickhouseUrl: url });
  t.teardown(() => full.stop());
  const edgeDir = mkdtempSync(join(tmpdir(), 'ivtd-edge-lid-'));
  t.teardown(() => rmSync(edgeDir, { recursive: true, force: true }));
  const own = Buffer.from(loadOrCreateLidSecret(edgeDir)); // the edge's own, from an earlier start
  const edge = await startServer(testConfig(edgeDir, { role: 'edge', clickhouseUrl: url }));
  t.teardown(() => edge.stop());
  const fullKey = readFileSync(lidKeyPath(full.dataDir));
  t.same(readFileSync(lidKeyPath(edgeDir)), fullKey, "the edge keeps the fleet's secret in its lid.key");
  t.notSame(own, fullKey, 'not its own any more');

  const c = full.customer;
  const q = fixtureQuery('residential-desktop-chrome').replace('{p}', c.partner_id).replace('{k}', c.prebid_key);
  const edgePrebid = `http://127.0.0.1:${edge.ports.prebid}`;
  // The edge learns the customer's key from ClickHouse within seconds.
  let edgeLid = '';
  await until('the edge serves the customer', async () => {
    const r = await fetch(`${edgePrebid}/api/v1/ivt/lookup?${q}`);
    const body = (await r.json()) as { lid?: string };
    edgeLid = body.lid ?? '';
    return r.status === 200;
  }, 20_000);
  const fullLid = ((await (await fetch(`${full.prebid}/api/v1/ivt/lookup?${q}`)).json()) as { lid: string }).lid;
  t.equal((await fetch(`${full.prebid}/api/v1/ivt/imp?lid=${edgeLid}`)).status, 204, "the full instance takes the edge's lid");
  t.equal((await fetch(`${edgePrebid}/api/v1/ivt/imp?lid=${fullLid}`)).status, 204, "the edge takes the full instance's lid");
});
