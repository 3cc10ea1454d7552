// A fleet host rebooted while ClickHouse is away must come up and serve lookups: nothing
// listening on the ClickHouse port, a host name that does not resolve, or a port where
// something that is not ClickHouse answers. Run as a real `ivtd serve` process, as systemd
// would start it: the start used to wait on unref'd timers only, so Node ran out of work
// mid-start and the process ended with status 0 (which Restart=on-failure does not restart)
// before any listener opened. An edge started on an empty data dir has no key set to serve
// (a restarted one serves the set it kept: test/fleet/fleet.test.ts): it comes up all the
// same, and says it cannot serve lookups yet (503) instead of refusing every key.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.ts';
import { healthStatus as health, startServe } from '../helpers/serve-process.ts';

async function startsDuringOutage(t: Test, role: 'all' | 'edge', clickhouseUrl: string): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-outage-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const [prebid, api, reporting, metrics] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const server = startServe([
    '--data-dir', dataDir, '--role', role, '--clickhouse-url', clickhouseUrl,
    '--prebid-port', `${prebid}`, '--api-port', `${api}`, '--reporting-port', `${reporting}`, '--metrics-port', `${metrics}`,
  ]);
  const { child } = server;
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await server.exited;
  });
  const agent = new Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());

  // Role all: healthy. A new edge: up, its lookups saying it has no key set yet.
  const ready = async (): Promise<boolean> => {
    if (role === 'all') return (await health(prebid, agent)) === 200;
    const r = await fetch(`http://127.0.0.1:${prebid}/api/v1/ivt/lookup`).catch(() => null);
    return r !== null && r.status === 503 && /no key set yet/.test(((await r.json()) as { message: string }).message);
  };
  const deadline = Date.now() + 60_000;
  while (!(await ready())) {
    if (child.exitCode !== null) {
      t.fail(`ivtd exited with status ${child.exitCode} while starting; output:\n${server.out()}`);
      return;
    }
    if (Date.now() > deadline) throw new Error(`never ready; output:\n${server.out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const expected = role === 'all' ? 200 : 503;
  t.equal(await health(prebid, agent), expected, `${role} host up with ClickHouse at ${clickhouseUrl} unreachable: /health-check ${expected}`);
  t.match(server.out(), /ClickHouse not ready/, 'the outage is logged');
  // Healthy means every listener is open (they keep Node alive from then on); a moment more
  // shows it does not end right after.
  await new Promise((r) => setTimeout(r, 1_500));
  t.equal(child.exitCode, null, 'still running after the start-up waits');
  t.equal(await health(prebid, agent), expected, 'still answering');
  child.kill('SIGTERM');
  t.equal(await server.exited, 0, 'a SIGTERM stops it with status 0');
}

t.test('role all, nothing listening on the ClickHouse port', async (t) => {
  await startsDuringOutage(t, 'all', `http://127.0.0.1:${await freePort()}`);
});

t.test('role edge, a ClickHouse host name that does not resolve', async (t) => {
  await startsDuringOutage(t, 'edge', 'http://ivtd-no-such-clickhouse.invalid:8123');
});

t.test('role edge, a port where something else answers', async (t) => {
  const other = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not ClickHouse');
  }).listen(0, '127.0.0.1');
  await once(other, 'listening');
  t.teardown(() => other.close());
  const addr = other.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  await startsDuringOutage(t, 'edge', `http://127.0.0.1:${addr.port}`);
});
