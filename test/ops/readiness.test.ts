// /health-check is the readiness signal: once it answers 200, every listener is open (a
// script that waits for health and then logs in must not get "connection refused"), while
// the pre-bid port still opens first and answers 503 until then. Run as a real `ivtd serve`
// process, polled from outside as an operator's script would.
import { healthStatus } from '../helpers/serve-process.ts';
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Status of GET /health-check, or 0 when nothing accepts the connection yet. */
const health = healthStatus;

/** Whether a TCP connection to `port` is accepted right now. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

t.test('health turns 200 only once the account, reporting and metrics listeners are open', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-ready-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const [prebid, api, reporting, metrics] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('IVTD_')));
  const args = ['serve', '--data-dir', dataDir, '--prebid-port', `${prebid}`, '--api-port', `${api}`, '--reporting-port', `${reporting}`, '--metrics-port', `${metrics}`];
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  server.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
  server.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
  const exited = new Promise((resolve) => server.once('exit', resolve));
  t.teardown(async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    await exited;
  });

  const agent = new Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());
  const seen = new Set<number>();
  const deadline = Date.now() + 60_000;
  let status = 0;
  while (status !== 200) {
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`never healthy; output:\n${output}`);
    status = await health(prebid, agent);
    seen.add(status);
  }
  // Checked the moment health said 200, before anything else.
  const [apiOpen, reportingOpen, metricsOpen] = await Promise.all([accepts(api), accepts(reporting), accepts(metrics)]);
  t.ok(seen.has(503), 'the pre-bid port opened first and answered 503 while starting');
  t.ok(apiOpen, 'account API accepts connections once health is 200');
  t.ok(reportingOpen, 'reporting API accepts connections once health is 200');
  t.ok(metricsOpen, '/metrics accepts connections once health is 200');
  // The ready line follows at once, with the bound ports.
  while (!output.includes('"msg":"ivtd ready"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const ready = output.split('\n').find((l) => l.includes('"msg":"ivtd ready"'));
  t.match(JSON.parse(ready ?? '{}'), { ports: { prebid, api, reporting, metrics } }, 'the ready line names every port');

  server.kill('SIGTERM');
  await exited;
  t.equal(server.exitCode, 0, 'clean stop');
});
