// Builds the single executable with the probe entry and runs it alone, in an empty
// folder with an empty environment: worker threads answer /ping through uWebSockets.js,
// the main thread queries DuckDB, SIGTERM ends it with code 0.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { repoRoot } from '../../src/runtime/assets.ts';
import { freePort } from '../helpers/ports.ts';

t.setTimeout(300_000);

const root = repoRoot();
const built = join(root, 'dist/probe/ivtd-probe');
const mmdbSize = statSync(join(root, 'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb')).size;
const scratch = mkdtempSync(join(tmpdir(), 'ivtd-sea-test-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

interface Ping {
  status: number;
  body: { pong: boolean; worker: number; sea: boolean; mmdbBytes: number };
}

/** One GET; by default on a fresh connection, so SO_REUSEPORT can hand it to either thread. */
function ping(port: number, agent: Agent | false = false): Promise<Ping> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/ping', agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Ping['body'] }));
    }).on('error', reject);
  });
}


interface Run {
  child: ChildProcess;
  events: Array<Record<string, unknown>>;
  stderr: () => string;
  /** Resolves with the first event of that name. */
  event: (name: string) => Promise<Record<string, unknown>>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(binary: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Run {
  const child = spawn(binary, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const events: Array<Record<string, unknown>> = [];
  const waiting: Array<{ name: string; resolve: (e: Record<string, unknown>) => void }> = [];
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    let nl: number;
    while ((nl = out.indexOf('\n')) >= 0) {
      const e = JSON.parse(out.slice(0, nl)) as Record<string, unknown>;
      out = out.slice(nl + 1);
      events.push(e);
      for (const w of waiting.filter((w) => w.name === e.event)) w.resolve(e);
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const event = (name: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const seen = events.find((e) => e.event === name);
      if (seen) return resolve(seen);
      waiting.push({ name, resolve });
      void exit.then((x) => reject(new Error(`exited (${x.code ?? x.signal}) before ${name}: ${err}`)));
    });
  return { child, events, stderr: () => err, event, exit };
}

t.before(async () => {
  const started = Date.now();
  const build = spawn(join(root, 'build.sh'), [], {
    cwd: root,
    env: { ...process.env, IVTD_ENTRY: 'tools/probe.ts', IVTD_OUT: 'dist/probe/ivtd-probe' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  build.stderr.setEncoding('utf8').on('data', (c: string) => (log += c));
  const [code] = (await once(build, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`build.sh failed (${code}):\n${log}`);
  t.comment(`build: ${((Date.now() - started) / 1000).toFixed(1)} s, ${(statSync(built).size / 1e6).toFixed(1)} MB`);
});

t.test('build.sh leaves only the bundle in its work dir (it left ~100 MB: the blob, every asset)', async (t) => {
  t.same(readdirSync(`${built}.build`), ['ivtd.cjs'], 'only the bundle bench:profile reads');
});

/** Runs the binary copied alone into a fresh folder; checks pings, DuckDB and a clean SIGTERM exit. */
async function exercise(t: Test, env: NodeJS.ProcessEnv): Promise<void> {
  const dir = mkdtempSync(join(scratch, 'run-'));
  const binary = join(dir, 'ivtd-probe');
  copyFileSync(built, binary);
  t.same(readdirSync(dir), ['ivtd-probe'], 'the binary is alone in its folder');

  const port = await freePort();
  const dataDir = join(scratch, `data-${port}`);
  const spawned = Date.now();
  const p = run(binary, ['--port', String(port), '--threads', '2', '--data-dir', dataDir], env, dir);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });

  // Poll until a worker answers: start-to-first-answer as the operator sees it.
  let first: Ping | undefined;
  while (!first) {
    first = await ping(port).catch(() => undefined);
    if (!first) await new Promise((r) => setTimeout(r, 5));
    if (Date.now() - spawned > 30_000) throw new Error(`no answer within 30 s: ${p.stderr()}`);
  }
  t.comment(`start to first answer: ${Date.now() - spawned} ms`);

  const ready = await p.event('ready');
  t.equal(ready.sea, true, 'runs as a single executable');
  t.equal(ready.threads, 2);

  const answers = await Promise.all(Array.from({ length: 32 }, () => ping(port)));
  t.ok(answers.every((a) => a.status === 200 && a.body.pong), 'every /ping answered 200 pong');
  t.ok(answers.every((a) => a.body.sea && a.body.mmdbBytes === mmdbSize), 'workers read the embedded MMDB');
  t.same([...new Set(answers.map((a) => a.body.worker))].sort(), [0, 1], 'both worker threads served connections');

  const duck = await p.event('duckdb');
  t.match(duck, { memory: { answer: 42, version: /^v1\./ }, file: { rows: 3, total: 6 } }, 'DuckDB answered in memory and from a file');
  t.ok(statSync(join(dataDir, 'probe.duckdb')).isFile(), 'DuckDB file written');

  // A bidder's idle keep-alive connection must not turn shutdown into an abort.
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => keepAlive.destroy());
  t.equal((await ping(port, keepAlive)).status, 200);
  t.equal(Object.values(keepAlive.freeSockets).flat().length, 1, 'a keep-alive connection is open');

  p.child.kill('SIGTERM');
  const exit = await p.exit;
  t.same(exit, { code: 0, signal: null }, 'SIGTERM ends it with code 0');
  t.ok(p.events.some((e) => e.event === 'stopped'), 'shut down in order');
  t.equal(p.stderr(), '', 'nothing on stderr');
}

t.test('runs alone with an empty environment', async (t) => {
  await exercise(t, {});
});

t.test('writes native addons once per content hash into a private cache', async (t) => {
  const cache = join(scratch, 'xdg');
  await exercise(t, { XDG_CACHE_HOME: cache });
  const base = join(cache, 'ivtd');
  t.equal(statSync(base).mode & 0o777, 0o700, 'cache folder is private');
  const folders = readdirSync(base).sort();
  t.match(folders, [/^duckdb-[0-9a-f]{16}$/, /^uws-[0-9a-f]{16}$/], 'one folder per addon, named by content hash');
  const lib = join(base, folders[0] ?? '', 'libduckdb.so');
  const before = statSync(lib);
  t.equal(before.size, statSync(join(root, 'node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so')).size);

  await exercise(t, { XDG_CACHE_HOME: cache });
  const after = statSync(lib);
  t.same([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'second start reuses the written files');
});
