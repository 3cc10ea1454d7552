// Every `npm run bench:*` script the README and docs/benchmarks.md list runs, at its smallest settings, to its end
// (`bench:fleet` failed at once for weeks: "the generator lists 18 tuple dimensions", the
// tuple having gained a column, and nothing ran it). Each command of the script's line in
// package.json is run as npm would, with the arguments below; a script the README lists
// without arguments here fails the test, so a new one gets its smoke run too.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLICKHOUSE_BINARY, clickhouseAvailable } from '../helpers/clickhouse.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// About 12 minutes on a quiet 2-core host, all scripts one after another, before the seven
// added for issue 58 (fuzz, hostile, kill and kill --fleet, soak, props, filter, fleet-activity:
// 4.5 minutes more on the loaded VM, hostile 66-76 s and filter 64 s the longest).
t.setTimeout(45 * 60_000);

/** The smallest settings of each benchmark file: a second or two of load, one round (bench:props at ×1, npm test's own size: its checks that both verdicts were drawn need that many cases). */
const SMALLEST: Record<string, string[]> = {
  'bench/lookup.ts': ['--duration', '1', '--connections', '4', '--rounds', '1', '--rates', '200', '--policy-entries', '100', '--policy-rounds', '1', '--ortb-rounds', '1', '--beacon-rounds', '1'],
  'bench/versus.ts': ['--baseline-checkout', '.', '--processes', '1', '--rounds', '1', '--duration', '1', '--connections', '4'],
  'bench/first-lookups.ts': ['--rounds', '1', '--steady', '1'],
  'bench/profile.ts': ['--seconds', '1', '--loads', 'get', '--top', '3'],
  'bench/memory.ts': ['--checkout', '.', '--seconds', '2'],
  'bench/lid.ts': [],
  'bench/lid-lookup.ts': ['--rounds', '1', '--lookups', '1000'],
  'bench/flood.ts': ['--seconds', '2', '--phase-seconds', '1', '--phist-seconds', '1', '--connections', '4'],
  'bench/reporting.ts': ['--rows', '2000', '--runs', '1', '--rate', '200', '--duration', '1'],
  'bench/detect.ts': ['--per-class', '5', '--real', '5', '--concurrency', '2'],
  'bench/latency-clients.ts': ['--rate', '200', '--seconds', '1', '--rounds', '1'],
  'bench/fleet.ts': ['--rows', '2000', '--runs', '2', '--rate', '200', '--duration', '1'],
  'bench/login.ts': ['--baseline-checkout', '.', '--rounds', '1', '--logins', '2'],
  'bench/fleet-activity.ts': ['--hosts', '2', '--rate', '20', '--bot-rate', '5', '--seconds', '3', '--pool', '200'],
  'bench/filter.ts': ['--rate', '200', '--seconds', '1', '--rounds', '1', '--connections', '2'],
  'bench/filter-memory.ts': ['--seconds', '2', '--connections', '4', '--answer-mb', '1'],
  'bench/properties.ts': ['--scale', '1', '--seed', '5858'],
  'bench/fuzz.ts': ['--seconds', '5', '--connections', '4', '--threads', '1', '--seed', '5858'],
  'bench/hostile.ts': ['--phases', 'slow,idle,unread,emfile', '--slow', '3', '--slow-wait', '1', '--idle', '20', '--unread-seconds', '1', '--fd-limit', '64'],
  'bench/kill.ts': ['--cycles', '1', '--min-load', '1', '--max-load', '1.5', '--connections', '2'],
  'bench/soak.ts': ['--minutes', '1', '--minute-seconds', '3', '--rate', '100', '--connections', '2'],
};

/** More runs of a file beyond its smallest settings: another mode of it (by file). */
const ALSO: Record<string, string[][]> = {
  // The fleet phase: an edge and its spool on a real ClickHouse, killed once (ClickHouse up).
  'bench/kill.ts': [['--fleet', '--cycles', '1', '--min-load', '1', '--max-load', '1.5', '--connections', '2']],
};

/** Files that start clickhouse-server (test/helpers/clickhouse.ts): skipped, saying so, only where it is not installed. */
const NEEDS_CLICKHOUSE = new Set(['bench/fleet.ts', 'bench/fleet-activity.ts', 'kill.ts --fleet']);

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
// The README names the benchmarks' page, docs/benchmarks.md, which lists every benchmark it
// documents (the README itself names bench:versus).
const readme = ['README.md', 'docs/benchmarks.md'].map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
const listed = [...new Set([...readme.matchAll(/npm run (bench:[a-z-]+)/g)].map((m) => m[1]!))];
/** Every `bench:*` script of package.json: each is run below, and must be listed in the docs. */
const scripts = Object.keys(pkg.scripts).filter((name) => name.startsWith('bench:'));

function newest(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n = Math.max(n, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return n;
}

function run(command: string, args: string[], ms: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      // A busy host (the suite beside it) starts servers slowly.
      env: { ...process.env, IVTD_BENCH_START_MS: '180000' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    const timer = setTimeout(() => {
      out += `\n(killed after ${ms / 1000} s)`;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
    }, ms);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

t.test('the README and docs/benchmarks.md list the benchmarks, and each has its smallest settings here', async (t) => {
  t.ok(listed.length >= 10, `${listed.length} bench scripts listed`);
  for (const name of scripts) t.ok(listed.includes(name), `${name} (package.json) is listed in the README or docs/benchmarks.md`);
  for (const name of new Set([...listed, ...scripts])) {
    const line = pkg.scripts[name];
    t.ok(line, `${name} is a script of package.json`);
    for (const file of (line ?? '').matchAll(/bench\/[a-z-]+\.ts/g)) t.ok(SMALLEST[file[0]], `${file[0]} (of ${name}) has its smallest settings in this test`);
  }
});

t.before(async () => {
  // bench:profile measures the built binary (and reads the bundle build.sh keeps beside it).
  const binary = join(ROOT, 'dist/ivtd');
  if (!existsSync(binary) || statSync(binary).mtimeMs < newest(join(ROOT, 'src'))) {
    const b = await run(join(ROOT, 'build.sh'), [], 600_000);
    if (b.code !== 0) throw new Error(`build.sh failed:\n${b.out}`);
  }
});

for (const name of new Set([...listed, ...scripts])) {
  t.test(`npm run ${name}, smallest settings: runs to its end`, async (t) => {
    const line = pkg.scripts[name] ?? '';
    for (const part of line.split('&&').map((s) => s.trim())) {
      const m = /^node --import tsx (bench\/[a-z-]+\.ts)(.*)$/.exec(part);
      if (!m) {
        t.fail(`${name}: "${part}" is not "node --import tsx bench/FILE.ts …"`);
        continue;
      }
      const fixed = m[2]!.trim().split(/\s+/).filter(Boolean);
      const runs: Array<[string, string[]]> = [[m[1]!, SMALLEST[m[1]!] ?? []], ...(ALSO[m[1]!] ?? []).map((a): [string, string[]] => [`${m[1]!.slice(6)} ${a[0]}`, a])];
      for (const [label, extra] of runs) {
        if ((NEEDS_CLICKHOUSE.has(label) || NEEDS_CLICKHOUSE.has(m[1]!)) && !clickhouseAvailable()) {
          t.pass(label, { skip: `needs clickhouse-server (${CLICKHOUSE_BINARY}), which is not installed here` });
          continue;
        }
        const args = [...fixed, ...extra];
        const t0 = Date.now();
        const r = await run(process.execPath, ['--import', 'tsx', m[1]!, ...args], 8 * 60_000);
        t.equal(r.code, 0, `${m[1]} ${args.join(' ')} exits 0 (${((Date.now() - t0) / 1000).toFixed(0)} s)`, { output: r.code === 0 ? undefined : r.out.slice(-4000) });
        t.notMatch(r.out, /^(Error|TypeError|RangeError)\b|\n\s+at .*\.ts:\d+:\d+\)?\n/m, `${m[1]}: no stack trace in its output`);
      }
    }
  });
}
