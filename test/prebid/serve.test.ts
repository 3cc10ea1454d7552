// `ivtd serve` as a real child process: prints first-start credentials, answers lookups,
// reloads data and config on SIGHUP without dropping a lookup, refuses a bad data file or
// config on reload while the old ones keep serving, and exits 0 on SIGTERM.
import t from 'tap';
import { startServe, type ServeProcess } from '../helpers/serve-process.ts';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');

function start(dataDir: string, configFile: string): ServeProcess {
  return startServe(['--config', configFile, '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0']);
}

t.test('serve: first start, lookups through SIGHUP reloads, bad reload refused, SIGTERM exits 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-serve-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const configFile = join(dataDir, 'ivtd.json');
  writeFileSync(configFile, JSON.stringify({ logLevel: 'info' }));
  const p = start(dataDir, configFile);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  const listening = await p.waitFor(/"port":(\d+),"threads":1,"warmUpMs":\[(\d+)\],"msg":"pre-bid lookups listening"/);
  const port = Number(listening[1]);
  t.ok(Number(listening[2]) > 0, `the lookup thread warmed up before health turned 200 (${listening[2]} ms)`);
  const partner = (await p.waitFor(/partner_id +([0-9a-f-]{36})/))[1]!;
  const key = (await p.waitFor(/prebid_key +(\S+)/))[1]!;
  t.match(p.out(), /"msg":"data file loaded"/, 'startup log names the data files');
  t.match(p.out(), /embedded:data\/hosting-asns\.txt/, 'and where they came from');
  t.match(p.out(), /curl '/, 'prints a ready-to-paste curl lookup');

  const url = (i: number) =>
    `http://127.0.0.1:${port}/api/v1/ivt/lookup?p=${partner}&k=${key}&pub=p1&node=n1&ip=73.162.10.${1 + (i % 250)}&ua=${UA}&uid=u${i}&sid=ex.example&adt=1&dvt=2`;
  t.equal((await fetch(`http://127.0.0.1:${port}/health-check`)).status, 200, 'healthy');
  t.equal((await fetch(url(0))).status, 200, 'the printed credentials work');

  // Lookups keep flowing while the data is reloaded twice.
  let stop = false;
  const statuses = new Map<number, number>();
  const loop = (async () => {
    let i = 0;
    while (!stop) {
      const r = await fetch(url(i++));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      await r.arrayBuffer();
    }
  })();
  p.child.kill('SIGHUP');
  await p.waitFor(/"msg":"data file reloaded"/);
  // A corrupt override in the data dir: the reload is refused, the old data keeps serving.
  writeFileSync(join(dataDir, 'hosting-asns.txt'), 'AS-not-a-number  hosting  # broken\n');
  p.child.kill('SIGHUP');
  await p.waitFor(/reload refused/);
  t.match(p.out(), /hosting-asns\.txt/, 'the refusal names the file');
  rmSync(join(dataDir, 'hosting-asns.txt')); // a reload is all or nothing: config changes wait for good data
  // The config is re-read too: live options apply, others are named as needing a restart.
  writeFileSync(configFile, JSON.stringify({ logLevel: 'debug', threads: 2 }));
  p.child.kill('SIGHUP');
  await p.waitFor(/"changed":\["logLevel"\],"msg":"config reloaded"/);
  await p.waitFor(/"changed":\["threads"\],"msg":"config changes that take effect only after a restart"/);
  writeFileSync(configFile, '{ not json');
  p.child.kill('SIGHUP');
  await p.waitFor(/config reload refused/);
  t.match(p.out(), /ivtd\.json is not valid JSON/, 'the refusal names the config file');
  // A value outside the allowed ones (pino would throw on it inside the signal handler).
  writeFileSync(configFile, JSON.stringify({ logLevel: 'verbose', threads: 2 }));
  p.child.kill('SIGHUP');
  await p.waitFor(/log-level must be one of fatal, error, warn, info, debug, trace, silent, got \\"verbose\\".*config reload refused/);
  t.equal((await fetch(`http://127.0.0.1:${port}/health-check`)).status, 200, 'still healthy after the refused reload');
  // A reload is all or nothing: a log level with a data file that does not load changes neither.
  const mark = p.out().length;
  writeFileSync(configFile, JSON.stringify({ logLevel: 'warn', threads: 2, mmdbAsn: join(dataDir, 'missing.mmdb') }));
  p.child.kill('SIGHUP');
  await p.waitFor(/missing\.mmdb[^\n]*reload refused/);
  writeFileSync(configFile, JSON.stringify({ logLevel: 'debug', threads: 2 }));
  p.child.kill('SIGHUP');
  await p.waitFor(/"msg":"data file reloaded"/, mark);
  t.notMatch(p.out().slice(mark), /"changed":\["logLevel"\]/, 'the refused reload left the log level as it was (debug)');
  await new Promise((r) => setTimeout(r, 300));
  stop = true;
  await loop;
  t.ok((statuses.get(200) ?? 0) > 10, `lookups answered during reloads (${statuses.get(200)})`);
  t.same([...statuses.keys()], [200], 'no lookup failed during the reloads');

  const exit = new Promise<number | null>((r) => p.child.once('exit', (code) => r(code)));
  p.child.kill('SIGTERM');
  t.equal(await exit, 0, 'SIGTERM exits 0');
  t.match(p.out(), /stopped cleanly/);
});

t.test('serve: a config path that blocks (a FIFO) never freezes the main thread on SIGHUP', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-serve-fifo-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const configFile = join(dataDir, 'ivtd.json');
  writeFileSync(configFile, JSON.stringify({ logLevel: 'info' }));
  const p = start(dataDir, configFile);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  const ready = JSON.parse((await p.waitFor(/\{[^\n]*"msg":"ivtd ready"\}/))[0]) as { ports: { metrics: number; api: number } };
  rmSync(configFile);
  execFileSync('mkfifo', [configFile]);
  const mark = p.out().length;
  p.child.kill('SIGHUP');
  await p.waitFor(/SIGHUP: reloading/, mark);
  // While the reload waits on the FIFO, the account API and /metrics answer at once.
  for (const url of [`http://127.0.0.1:${ready.ports.metrics}/metrics`, `http://127.0.0.1:${ready.ports.api}/`]) {
    const t0 = Date.now();
    const r = await fetch(url);
    await r.arrayBuffer();
    t.ok(Date.now() - t0 < 1000, `${url} answered in ${Date.now() - t0} ms during the blocked reload`);
  }
  await p.waitFor(/ivtd\.json: not a regular file[^\n]*config reload refused/, mark, 15_000);
  t.pass('the reload refuses the FIFO, names it, and keeps the running config');
  const exit = new Promise<number | null>((r) => p.child.once('exit', (code) => r(code)));
  p.child.kill('SIGTERM');
  t.equal(await exit, 0, 'SIGTERM exits 0');
});
