// A newcomer's first minutes, from a clean clone: the files git would hand over (tracked and
// new, never ignored ones like data/generated/), node_modules as `npm install` left it,
// then exactly the README's commands: `npm run ivtd -- customer create …`, then
// `npm run ivtd -- serve`. The generated data is built on first need; nothing else is run.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.ts';
import { runProcess, type CliRun } from './run-cli.ts';

t.setTimeout(180_000);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The environment of a fresh shell: none of this run's npm, IVTD_* or systemd settings. */
function shellEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|IVTD_)/i.test(k)));
  delete env.STATE_DIRECTORY;
  return env;
}

/** Copies the working tree as a clone would have it; node_modules is linked, as installed. */
function cleanClone(dir: string): void {
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  for (const rel of listed.stdout.split('\0')) {
    if (rel === '' || !existsSync(join(ROOT, rel))) continue; // deleted but not yet committed
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    copyFileSync(join(ROOT, rel), join(dir, rel));
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
}

function npmRun(cwd: string, args: string[], stdin = ''): Promise<CliRun> {
  return runProcess('npm', ['run', 'ivtd', '--', ...args], { cwd, env: shellEnv(), stdin });
}

/** Resolves with the first stdout line matching `re` (the server logs JSON lines). */
function lineMatching(child: ChildProcess, re: RegExp, output: { text: string }, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line matching ${re} within ${ms} ms; output:\n${output.text}`)), ms);
    const check = () => {
      const line = output.text.split('\n').find((l) => re.test(l));
      if (line === undefined) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve(line);
    };
    child.stdout!.on('data', check);
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(`the server exited before ${re}; output:\n${output.text}`));
    });
    check();
  });
}

t.test('README commands work right after npm install, from a clean clone', async (t) => {
  const clone = mkdtempSync(join(tmpdir(), 'ivtd-clone-'));
  t.teardown(() => rmSync(clone, { recursive: true, force: true }));
  cleanClone(clone);
  t.notOk(existsSync(join(clone, 'data/generated')), 'a clone has no generated data');
  const dataDir = join(clone, 'state');

  const created = await npmRun(clone, ['customer', 'create', '--name', 'Acme', '--username', 'alice', '--password-stdin', '--json', '--data-dir', dataDir], 'alice-pass-1\n');
  t.equal(created.code, 0, created.stderr);
  const json = created.stdout.split('\n').find((l) => l.startsWith('{'));
  if (!json) t.comment(created.stdout);
  t.ok(json, "one JSON line among npm's own output");
  const c = JSON.parse(json ?? '{}') as { partner_id: string; prebid_key: string };
  t.match(c, { partner_id: /^[0-9a-f-]{36}$/, prebid_key: /^ivp_/ });
  t.ok(existsSync(join(clone, 'data/generated/asn.bin')), 'the ASN table was built on first need');
  t.ok(existsSync(join(clone, 'data/generated/dashboard/index.html')), 'and the dashboard');
  t.match(created.stderr, /asn table: wrote/, 'saying so on stderr, leaving stdout to the CLI');

  const [prebid, api, reporting, metrics] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const args = ['serve', '--data-dir', dataDir, '--prebid-port', `${prebid}`, '--api-port', `${api}`, '--reporting-port', `${reporting}`, '--metrics-port', `${metrics}`];
  // Its own process group, so that a failed test can end npm, its shell and node alike.
  const server = spawn('npm', ['run', 'ivtd', '--', ...args], { cwd: clone, env: shellEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { text: '' };
  server.stdout.setEncoding('utf8').on('data', (s: string) => (output.text += s));
  server.stderr.setEncoding('utf8').on('data', (s: string) => (output.text += s));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  t.teardown(async () => {
    if (server.exitCode === null && server.signalCode === null) {
      process.kill(-server.pid!, 'SIGKILL');
      await exited;
    }
  });

  const ready = JSON.parse(await lineMatching(server, /"msg":"ivtd ready"/, output, 60_000)) as { pid: number };
  t.equal((await fetch(`http://127.0.0.1:${prebid}/health-check`)).status, 200, 'healthy');
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const lookup = await fetch(
    `http://127.0.0.1:${prebid}/api/v1/ivt/lookup?p=${c.partner_id}&k=${c.prebid_key}&pub=p&node=n&ip=73.162.10.20&ua=${ua}&uid=u&sid=s.example&adt=1&dvt=2`,
  );
  t.equal(lookup.status, 200, 'the customer created before serve can look up');
  t.match(await lookup.json(), { botRisk: { band: /^(low|medium|high)$/ } });
  const dashboard = await fetch(`http://127.0.0.1:${api}/`);
  t.equal(dashboard.status, 200, 'the dashboard is served');
  t.match(await dashboard.text(), /<html/i);

  // SIGTERM to the server itself (its pid is in every log line), as systemd would send it.
  process.kill(ready.pid, 'SIGTERM');
  await lineMatching(server, /"msg":"stopped cleanly"/, output, 30_000).catch((e: Error) => t.fail(e.message));
  await exited;
  t.equal(server.exitCode, 0, 'npm run ends with the server, status 0');
});
