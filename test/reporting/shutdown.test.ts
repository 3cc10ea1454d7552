// Nothing lost on a graceful stop: the lookup threads hand over their last counts, the
// writer flushes them, and a server started again on the same data dir reports them.
// Both in-process (stop()) and as `ivtd serve` child processes ended by SIGTERM / SIGINT.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.ts';
import { fixtureQuery, lookup, recentDays, report, withParams } from './client.ts';

t.test('stop flushes the last counts; a restart reads them back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  // An hour-long flush interval: only the shutdown path can write these counts.
  const first = await startTestServer({ flushInterval: 3600 }, dir);
  const base = fixtureQuery('residential-desktop-chrome');
  for (let i = 0; i < 4; i++) await lookup(first, base);
  await lookup(first, withParams(base, { pub: 'pub-late' }));
  await first.stop();

  const second = await startTestServer({}, dir);
  t.teardown(() => second.stop());
  const r = await report(second, { ...recentDays(), group_by: 'pub' }, { customer: first.customer });
  t.equal(r.status, 200, "the first run's customer and key still work");
  t.same(
    r.body.rows.map((x: any) => [x.pub, x.total_transactions]),
    [['pub-123', 4], ['pub-late', 1]],
    'every lookup of the first run was written on stop',
  );
});

const ROOT = join(import.meta.dirname, '..', '..');

/** `ivtd serve` on `dataDir` with an hour-long flush interval; resolves once it is ready. */
async function serve(dataDir: string) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--flush-interval', '3600'],
    { cwd: ROOT, env: { ...process.env, IVTD_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 30_000;
  while (!/"msg":"ivtd ready"/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`serve did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const port = Number(/"ports":\{"prebid":(\d+)/.exec(out)![1]);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, port, out: () => out, exited };
}

t.test('SIGTERM and SIGINT flush the last counts before ivtd serve exits', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-signal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const base = fixtureQuery('residential-desktop-chrome');

  const first = await serve(dir);
  t.teardown(() => void (first.child.exitCode === null && first.child.kill('SIGKILL')));
  const cred = (name: string) => new RegExp(`${name} +(\\S+)`).exec(first.out())![1]!;
  const customer = { customer_id: cred('customer_id'), partner_id: cred('partner_id'), prebid_key: cred('prebid_key'), reporting_key: cred('reporting_key') };
  const get = (port: number, q: string) =>
    fetch(`http://127.0.0.1:${port}/api/v1/ivt/lookup?${q.replace('{p}', customer.partner_id).replace('{k}', customer.prebid_key)}`).then((r) => r.status);
  for (let i = 0; i < 3; i++) t.equal(await get(first.port, base), 200);
  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0, 'SIGTERM: exit 0');

  const second = await serve(dir);
  t.teardown(() => void (second.child.exitCode === null && second.child.kill('SIGKILL')));
  for (let i = 0; i < 2; i++) t.equal(await get(second.port, withParams(base, { pub: 'pub-sigint' })), 200);
  second.child.kill('SIGINT');
  t.equal(await second.exited, 0, 'SIGINT: exit 0');

  const reader = await startTestServer({}, dir);
  t.teardown(() => reader.stop());
  const r = await report(reader, { ...recentDays(), group_by: 'pub' }, { customer });
  t.same(
    r.body.rows.map((x: any) => [x.pub, x.total_transactions]),
    [['pub-123', 3], ['pub-sigint', 2]],
    'both runs\' lookups were written before exit',
  );
});
