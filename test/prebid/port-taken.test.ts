// uWebSockets.js listens with SO_REUSEPORT, so a second `ivtd serve` on the same pre-bid
// port (another data dir, other account and metrics ports) used to start and silently take
// about half of the first one's connections. It must refuse to start instead, exit non-zero
// and name the port; the lookup threads of one process still share it.
// A listener that cannot open is about the host, not a bug: the operator reads one line
// that says which port and what to do, not a stack trace.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/ports.ts';
import { startTestServer } from '../helpers/server.ts';
import { runIvtd } from '../cli/run-cli.ts';

t.test('a second ivtd on a pre-bid port in use exits 1 and names the port', async (t) => {
  const port = await freePort();
  const first = await startTestServer({ prebidPort: port, threads: 2 });
  t.teardown(() => first.stop());
  t.equal(first.server.ports.prebid, port, 'the first server (two lookup threads) shares one port');
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-second-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const second = await runIvtd([
    'serve', '--data-dir', dataDir, '--prebid-port', `${port}`,
    '--api-port', `${await freePort()}`, '--reporting-port', `${await freePort()}`, '--metrics-port', `${await freePort()}`,
  ]);
  t.equal(second.code, 1, 'the second instance exits 1');
  t.match(second.stderr + second.stdout, new RegExp(`pre-bid port 127\\.0\\.0\\.1:${port} is already in use`), 'and says which port is taken');
  t.notMatch(second.stderr, STACK, 'in a line, without a stack trace');
  // The first one still answers all of its connections.
  for (let i = 0; i < 10; i++) {
    const r = await fetch(`${first.prebid}/health-check`, { headers: { connection: 'close' } });
    t.equal(r.status, 200);
  }
});

/** A line of a JavaScript stack trace. */
const STACK = /\n\s+at /;

function dataDirFor(t: Test): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-listen-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

t.test('an account API port held by another program: exit 1, one line naming the listener and the port', async (t) => {
  const port = await freePort();
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(port, '127.0.0.1', () => r()));
  t.teardown(() => holder.close());
  const run = await runIvtd([
    'serve', '--data-dir', dataDirFor(t), '--prebid-port', `${await freePort()}`,
    '--api-port', `${port}`, '--reporting-port', `${await freePort()}`, '--metrics-port', `${await freePort()}`,
  ]);
  t.equal(run.code, 1, 'exits 1');
  t.match(run.stderr, new RegExp(`ivtd: account API: cannot listen on 127\\.0\\.0\\.1:${port}: .*address already in use.*another port`), 'names the listener and the port, and what to do');
  t.notMatch(run.stderr, STACK, 'without a stack trace');
});

t.test('a TLS certificate that is not PEM: exit 2, one line naming the file', async (t) => {
  const dataDir = dataDirFor(t);
  const notPem = join(dataDir, 'cert.txt');
  writeFileSync(notPem, 'not a certificate\n');
  const run = await runIvtd([
    'serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0',
    '--tls-cert', notPem, '--tls-key', notPem,
  ]);
  t.equal(run.code, 2, 'exits 2: a value that is not allowed');
  t.match(run.stderr, new RegExp(`ivtd: the TLS certificate ${notPem.replace(/[.]/g, '\\.')} is not a PEM certificate`), 'names the file');
  t.notMatch(run.stderr, STACK, 'without a stack trace');
});

t.test('two listeners given one port: refused at once (exit 2, naming both), before the store opens', async (t) => {
  const port = await freePort();
  const run = await runIvtd([
    'serve', '--data-dir', dataDirFor(t), '--prebid-port', `${port}`, '--api-port', '0', '--reporting-port', '0', '--metrics-port', `${port}`,
  ]);
  t.equal(run.code, 2, 'exits 2');
  t.match(run.stderr, new RegExp(`--prebid-port and --metrics-port \\(IVTD_PREBID_PORT, IVTD_METRICS_PORT\\) are both ${port}`), 'names both flags and the port');
  t.notMatch(run.stdout + run.stderr, /store opened/, 'before the store opens');
  t.notMatch(run.stderr, STACK, 'without a stack trace');
});
