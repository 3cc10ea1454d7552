// A fleet host rebooted while ClickHouse is away must come up and serve lookups: nothing
// listening on the ClickHouse port, a host name that does not resolve, or a port where
// something that is not ClickHouse answers. Run as a real `ivtd serve` process, as systemd
// would start it: the start used to wait on unref'd timers only, so Node ran out of work
// mid-start and the process ended with status 0 (which Restart=on-failure does not restart)
// before any listener opened.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, get } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function health(port: number, agent: Agent): Promise<number> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/health-check', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

async function startsDuringOutage(t: Test, role: 'all' | 'edge', clickhouseUrl: string): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-outage-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const [prebid, api, reporting, metrics] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('IVTD_')));
  const args = [
    'serve', '--data-dir', dataDir, '--role', role, '--clickhouse-url', clickhouseUrl,
    '--prebid-port', `${prebid}`, '--api-port', `${api}`, '--reporting-port', `${reporting}`, '--metrics-port', `${metrics}`,
  ];
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  server.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
  server.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  t.teardown(async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    await exited;
  });
  const agent = new Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());

  const deadline = Date.now() + 60_000;
  let status = 0;
  while (status !== 200) {
    if (server.exitCode !== null) {
      t.fail(`ivtd exited with status ${server.exitCode} while starting; output:\n${output}`);
      return;
    }
    if (Date.now() > deadline) throw new Error(`never healthy; output:\n${output}`);
    status = await health(prebid, agent);
    if (status !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  t.pass(`${role} host healthy with ClickHouse at ${clickhouseUrl} unreachable`);
  t.match(output, /ClickHouse not ready/, 'the outage is logged');
  // Healthy means every listener is open (they keep Node alive from then on); a moment more
  // shows it does not end right after.
  await new Promise((r) => setTimeout(r, 1_500));
  t.equal(server.exitCode, null, 'still running after the start-up waits');
  t.equal(await health(prebid, agent), 200, 'still answering');
  server.kill('SIGTERM');
  await exited;
  t.equal(server.exitCode, 0, 'a SIGTERM stops it with status 0');
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
