// `ivtd reload` against a real `ivtd serve` child process: the same reload as SIGHUP,
// asked over the control socket, with its outcome as output and exit code. And
// `ivtd data update` without a sources file says that it fetched and reloaded nothing.
import t from 'tap';
import { startServe, type ServeProcess } from '../helpers/serve-process.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runCli } from '../../src/cli/commands.ts';
import { sendControl, startControlServer } from '../../src/provisioning/control.ts';
import { Store } from '../../src/store/db.ts';
import { runIvtd } from './run-cli.ts';


/** Runs the CLI in this process (cheap cases that need no server). */
async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from(['']),
  });
  return { code, stdout, stderr };
}

function serve(dataDir: string, configFile: string): ServeProcess {
  return startServe(['--config', configFile, '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0']);
}

t.test('ivtd reload: applied (exit 0), refused with the reason (exit 1), no server (exit 1)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-reload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const none = await runIvtd(['reload', '--data-dir', dir]);
  t.equal(none.code, 1, 'no server: a failure');
  t.match(none.stderr, /no ivtd server is running on .*nothing was reloaded/);
  t.equal(none.stdout, '');

  const configFile = join(dir, 'ivtd.json');
  writeFileSync(configFile, JSON.stringify({ logLevel: 'info' }));
  const p = serve(dir, configFile);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  await p.waitFor(/"msg":"ivtd ready"/);

  let mark = p.out().length;
  const ok = await runIvtd(['reload', '--data-dir', dir]);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /^Reloaded: the server applied the config and data files\.\n$/);
  await p.waitFor(/"msg":"ivtd reload: reloading config and data files"/, mark);
  await p.waitFor(/"msg":"data file reloaded"/, mark);

  // The config is re-read as on SIGHUP: live options apply, others wait for a restart.
  writeFileSync(configFile, JSON.stringify({ logLevel: 'debug', threads: 2 }));
  const changed = await runIvtd(['reload', '--json', '--data-dir', dir]);
  t.equal(changed.code, 0, changed.stderr);
  t.same(JSON.parse(changed.stdout), { ok: true, errors: [], changed: ['logLevel'], restart: ['threads'] });
  writeFileSync(configFile, JSON.stringify({ logLevel: 'info', threads: 2 }));
  const text = await runIvtd(['reload', '--data-dir', dir]);
  t.match(text.stdout, /changed now: +--log-level\n/);

  // A data file that does not load: refused whole, the reason names the file, exit 1.
  writeFileSync(join(dir, 'hosting-asns.txt'), 'AS-not-a-number  hosting  # broken\n');
  mark = p.out().length;
  const bad = await runIvtd(['reload', '--data-dir', dir]);
  t.equal(bad.code, 1, 'a refused reload is a failure');
  t.match(bad.stderr, /reload refused, the server keeps its running config and data: .*hosting-asns\.txt/);
  t.equal(bad.stdout, '');
  await p.waitFor(/reload refused/, mark);
  rmSync(join(dir, 'hosting-asns.txt'));

  writeFileSync(configFile, '{ not json');
  const badConfig = await runIvtd(['reload', '--json', '--data-dir', dir]);
  t.equal(badConfig.code, 1);
  t.match(JSON.parse(badConfig.stdout), { ok: false, errors: [/ivtd\.json is not valid JSON/] });
  t.match(badConfig.stderr, /ivtd\.json is not valid JSON/);

  const exit = new Promise<number | null>((r) => p.child.once('exit', (code) => r(code)));
  p.child.kill('SIGTERM');
  t.equal(await exit, 0);
  const gone = await cli(['reload', '--data-dir', dir]);
  t.equal(gone.code, 1, 'after the server stopped: nothing to reload');
  t.match(gone.stderr, /no ivtd server is running/);
  t.match(await cli(['reload', '--grace', '5', '--data-dir', dir]), { code: 2, stderr: /unknown flag --grace for "reload"/ });
});

t.test('ivtd data update without a sources file says it fetched and reloaded nothing, exit 0', async (t) => {
  const dir = t.testdir();
  const r = await cli(['data', 'update', '--data-dir', dir]);
  t.equal(r.code, 0, 'nothing configured is not a failure (fetching is off until a sources file asks for it)');
  t.match(r.stdout, /there is no sources file .*nothing was fetched\nand no running server was told to reload/);
  t.match(r.stdout, /run "ivtd reload"/);
  const j = await cli(['data', 'update', '--json', '--data-dir', dir]);
  t.match(JSON.parse(j.stdout), { sourcesFile: null, server: null, report: { changed: false, items: [] } });
  // A sources file that exists but names nothing: named, and still no reload.
  writeFileSync(join(dir, 'sources.json'), '{}');
  const empty = await cli(['data', 'update', '--data-dir', dir]);
  t.equal(empty.code, 0);
  t.match(empty.stdout, `the sources file ${join(dir, 'sources.json')} names no source`);
  t.match(empty.stdout, /No file changed, so no running server was told to reload\./);
});

t.test('the control socket: server.reload reaches the server’s reload hook, also where provisioning is refused (a fleet edge)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-rl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = await Store.open(dir);
  let reloads = 0;
  const server = await startControlServer({
    dataDir: dir,
    store,
    onKeysChanged: () => undefined,
    onReload: async () => ({ ok: ++reloads > 1, errors: reloads > 1 ? [] : ['bad file x'], changed: [], restart: [] }),
    refuse: 'this ivtd is a fleet edge',
  });
  t.teardown(async () => {
    await server.close();
    store.close();
  });
  t.same(await sendControl(dir, 'server.reload', {}), { ok: false, errors: ['bad file x'], changed: [], restart: [] }, 'a refused reload comes back as such');
  t.same(await sendControl(dir, 'server.reload', {}), { ok: true, errors: [], changed: [], restart: [] });
  await t.rejects(sendControl(dir, 'customer.list', {}), /fleet edge/, 'provisioning is still refused');
  t.equal(reloads, 2);
});
