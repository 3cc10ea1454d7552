// Nothing lost on a graceful stop: the lookup threads hand over their last counts, the
// writer flushes them, and a server started again on the same data dir reports them.
// Both in-process (stop()) and as `ivtd serve` child processes ended by SIGTERM / SIGINT,
// or by a failure nothing caught on the main thread (stopped the same way, exit 1).
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

/**
 * `ivtd serve` on `dataDir` with an hour-long flush interval; resolves once it is ready.
 * `fault`: loads test/helpers/fault-on-signal.ts (SIGUSR2 makes the main thread fail).
 */
async function serve(dataDir: string, opts: { fault?: 'throw' | 'reject'; threads?: number } = {}) {
  const preload = opts.fault ? ['--import', join(ROOT, 'test', 'helpers', 'fault-on-signal.ts')] : [];
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', ...preload, 'src/cli/main.ts', 'serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0', '--flush-interval', '3600', '--threads', String(opts.threads ?? 1)],
    { cwd: ROOT, env: { ...process.env, IVTD_LOG_LEVEL: 'info', TEST_FAULT: opts.fault ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
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
  const exited = new Promise<number | string | null>((r) => child.once('exit', (code, signal) => r(code ?? signal)));
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

t.test('a failure nothing caught on the main thread: logged, lookups stopped, counts flushed, exit 1 (no abort)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-fatal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const base = fixtureQuery('residential-desktop-chrome');
  let customer: Record<string, string> | undefined;
  for (const fault of ['throw', 'reject'] as const) {
    // Two lookup threads holding their uWebSockets.js sockets: a plain exit here aborts Node.
    const p = await serve(dir, { fault, threads: 2 });
    t.teardown(() => void (p.child.exitCode === null && p.child.kill('SIGKILL')));
    const cred = (name: string) => new RegExp(`${name} +(\\S+)`).exec(p.out())?.[1];
    customer ??= { customer_id: cred('customer_id')!, partner_id: cred('partner_id')!, prebid_key: cred('prebid_key')!, reporting_key: cred('reporting_key')! };
    const q = withParams(base, { pub: `pub-${fault}` }).replace('{p}', customer.partner_id!).replace('{k}', customer.prebid_key!);
    for (let i = 0; i < 3; i++) t.equal((await fetch(`http://127.0.0.1:${p.port}/api/v1/ivt/lookup?${q}`)).status, 200);
    p.child.kill('SIGUSR2');
    t.equal(await p.exited, 1, `${fault}: exit status 1 (not an abort)`);
    const kind = fault === 'throw' ? 'uncaught exception' : 'unhandled promise rejection';
    t.match(p.out(), new RegExp(`"level":60,.*"message":"injected [^"]*".*"msg":"${kind} on the main thread; stopping"`), `${fault}: logged as fatal with the error`);
    t.match(p.out(), /"msg":"shutting down: draining lookups and flushing reporting"/);
    t.match(p.out(), /"msg":"stopped after a failure; exiting 1"/);
    t.notMatch(p.out(), /CheckedUvLoopClose|Assertion failed/);
  }

  const reader = await startTestServer({}, dir);
  t.teardown(() => reader.stop());
  const r = await report(reader, { ...recentDays(), group_by: 'pub' }, { customer: customer as never });
  t.same(
    r.body.rows.map((x: any) => [x.pub, x.total_transactions]),
    [['pub-reject', 3], ['pub-throw', 3]],
    'the counts of both runs were flushed on the way out',
  );
});
