// Customers' policies across a fleet, against a real ClickHouse: a policy changed on the
// full instance reaches an edge's lookups within 5 s (and a removal too), and an edge
// restarted while ClickHouse is down keeps serving the policies it took.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sendControl } from '../../src/provisioning/control.ts';
import { startServer, type RunningServer } from '../../src/server/serve.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

t.test('policies reach the edges', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const ch = await startClickHouse();
  t.teardown(() => ch.destroy());
  const url = ch.url('fleet_policies');
  const full = await startTestServer({ clickhouseUrl: url, flushInterval: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-edge-'));
  let edge: RunningServer = await startServer(testConfig(dir, { role: 'edge', clickhouseUrl: url, flushInterval: 1 }));
  t.teardown(async () => {
    await edge.stop();
    await full.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const c = full.customer;
  let n = 0;
  const band = async (server: RunningServer, pub: string): Promise<string> => {
    const q = new URLSearchParams({ p: c.partner_id, k: c.prebid_key, pub, node: 'n', ip: '73.162.10.20', ua: CHROME, uid: `u${n++}`, sid: 'ok.example', adt: '1', dvt: '2' });
    const r = await fetch(`http://127.0.0.1:${server.ports.prebid}/api/v1/ivt/lookup?${q}`, { headers: { connection: 'close' } });
    if (r.status !== 200) return String(r.status);
    return ((await r.json()) as { botRisk: { band: string } }).botRisk.band;
  };
  await until('the edge knows the key', async () => (await band(edge, 'pub-x')) === 'low');

  const setAt = Date.now();
  await sendControl(full.dataDir, 'policy.add', { customer: c.customer_id, entries: [{ kind: 'publisher', value: 'pub-x', action: 'deny' }] });
  t.equal(await band(full.server, 'pub-x'), 'high', 'the full instance applies it at once');
  await until('the edge denies pub-x', async () => (await band(edge, 'pub-x')) === 'high');
  t.ok(Date.now() - setAt <= 5000, `the edge applies it ${Date.now() - setAt} ms after the change`);
  t.equal(await band(edge, 'pub-y'), 'low', 'and only it');

  const removedAt = Date.now();
  await sendControl(full.dataDir, 'policy.remove', { customer: c.customer_id, entries: [{ kind: 'publisher', value: 'pub-x' }] });
  await sendControl(full.dataDir, 'policy.add', { customer: c.customer_id, entries: [{ kind: 'publisher', value: 'pub-z', action: 'deny' }] });
  await until('the edge follows the removal', async () => (await band(edge, 'pub-x')) === 'low' && (await band(edge, 'pub-z')) === 'high');
  t.ok(Date.now() - removedAt <= 5000, `a removal reaches the edge ${Date.now() - removedAt} ms after it`);

  // The edge restarts while ClickHouse is down: its own store still has the policy.
  await ch.stop();
  await edge.stop();
  edge = await startServer(testConfig(dir, { role: 'edge', clickhouseUrl: url, flushInterval: 1 }));
  t.equal(await band(edge, 'pub-z'), 'high', 'the restarted edge applies the policy it kept');
  await ch.start();
});
