// Where a lookup thread's time goes in the shipped binary, by Linux `perf`: the binary runs
// with V8 writing its JIT's symbols (NODE_OPTIONS=--perf-basic-prof-only-functions, which a
// Node single-executable honours), one lookup thread, driven at saturation by wrk; `perf
// record -g` samples the process for `--seconds`, and the busiest thread's samples (the
// lookup thread) are counted by where they fall: the kernel's send (and, within it, waking
// the client), its recv, the garbage collector, JavaScript by source module (the bundle's
// `// src/…` lines), the event loop. Each share is also given in µs of the thread's CPU per
// request (the samples' periods over the requests wrk counted while perf ran).
// `bench:flood --cpu-prof` profiles a checkout through tsx; this profiles the code that ships.
//   node --import tsx bench/profile.ts [--ivtd dist/ivtd] [--bundle dist/ivtd.build/ivtd.cjs]
//        [--loads get,ortb,flood] [--seconds 8] [--frequency 999] [--connections 50] [--top 15]
// Needs Linux `perf` (Debian: linux-perf) allowed to sample the process (root, or
// kernel.perf_event_paranoid <= 1) and Debian's wrk. perf takes CPU of its own (on 2 cores,
// about a quarter fewer lookups/s while it records): read shares, and compare builds with
// bench:versus.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { floodScript } from './flood-script.ts';
import { BundleIndex, busiestThread, parsePerfScript, profileThread, type Share } from './perf-samples.ts';
import { numArg, ROOT, sleep, startIvtd, strArg } from './processes.ts';
import { lookupPaths, ortbRequests } from './requests.ts';
import { generateUas } from './ua-gen.ts';
import { bodiesScript, pathsScript, wrkAsync, wrkAvailable } from './wrk.ts';

const BINARY = resolve(strArg('ivtd', join(ROOT, 'dist/ivtd')));
const BUNDLE = resolve(strArg('bundle', `${BINARY}.build/ivtd.cjs`));
const LOADS = strArg('loads', 'get,ortb,flood').split(',');
const SECONDS = numArg('seconds', 8);
const FREQUENCY = numArg('frequency', 999);
const CONNECTIONS = numArg('connections', 50);
const TOP = numArg('top', 15);
for (const l of LOADS) if (!['get', 'ortb', 'flood'].includes(l)) throw new Error(`--loads takes get, ortb, flood (got ${l})`);

function fail(msg: string): never {
  console.error(`profile: ${msg}`);
  process.exit(1);
}

const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1).padStart(5)} %`;

function table(title: string, rows: Share[], total: number, usPerSample: number): void {
  console.log(`  ${title}`);
  for (const r of rows) {
    if (r.samples === 0) continue;
    console.log(`    ${r.label.slice(0, 78).padEnd(78)} ${pct(r.samples, total)}  ${(r.samples * usPerSample).toFixed(2).padStart(6)} µs`);
  }
}

async function profileLoad(load: string, bundle: BundleIndex | null): Promise<object> {
  const server = await startIvtd({ label: BINARY, binary: BINARY }, { threads: 1, env: { NODE_OPTIONS: '--perf-basic-prof-only-functions' } });
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-profile-'));
  try {
    const [script, connections, scriptArgs] =
      load === 'get'
        ? [pathsScript(lookupPaths(server.partnerId, server.key, 2000)), CONNECTIONS, undefined]
        : load === 'ortb'
          ? [bodiesScript(ortbRequests(server.partnerId, server.key, 2000)), CONNECTIONS, undefined]
          : [floodScript('flood', generateUas(20_000), server), 32, ['0', '1', '7']];
    const run = (seconds: number) => wrkAsync({ port: server.prebidPort, script, connections, seconds, scriptArgs });
    await run(3); // the JIT, the caches
    // perf runs a second longer than wrk and starts first, so it sees every request wrk counts
    // (the thread is not sampled while idle: perf counts its time on the CPU).
    const data = join(dir, 'perf.data');
    const rec = spawn('perf', ['record', '-F', String(FREQUENCY), '-g', '-p', String(server.pid), '-o', data, '--', 'sleep', String(SECONDS + 1)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let recErr = '';
    rec.stderr.on('data', (d: Buffer) => (recErr += d.toString()));
    const recorded = new Promise<number | null>((r) => rec.once('exit', r));
    await sleep(300);
    const w = await run(SECONDS);
    const status = await recorded;
    if (status !== 0) throw new Error(`perf record failed (${status}): ${recErr.trim().split('\n').slice(-3).join(' ')} — root, or sysctl kernel.perf_event_paranoid=1`);
    const scriptOut = spawnSync('perf', ['script', '-i', data, '-F', 'tid,period,ip,sym'], { encoding: 'utf8', maxBuffer: 1 << 30 });
    if (scriptOut.status !== 0) throw new Error(`perf script failed: ${scriptOut.stderr.trim().split('\n').slice(-3).join(' ')}`);
    const samples = parsePerfScript(scriptOut.stdout);
    const lookupThread = busiestThread(samples);
    if (lookupThread.samples === 0) throw new Error('perf recorded no samples of the server');
    const p = profileThread(samples, lookupThread.tid, bundle);
    // µs a request: the thread's time on the CPU that the samples cover (each sample's period,
    // so a rate perf lowered on a busy host still adds up) over the requests wrk counted.
    const usPerSample = p.ns / 1e3 / (w.rps * SECONDS) / p.samples;
    console.log(
      `\n${load}: ${Math.round(w.rps)} req/s while sampled (wrk, ${connections} connections, non-2xx ${w.non2xx + w.errors}); ` +
        `the lookup thread: ${p.samples} samples, ${(p.samples * usPerSample).toFixed(2)} µs of its CPU a request`,
    );
    if (bundle !== null && p.bundleAgreement < 0.95)
      console.log(`  warning: only ${(100 * p.bundleAgreement).toFixed(0)} % of the JS frames' names stand at their line in ${bundle.path}: not this binary's bundle (--bundle), modules below are wrong`);
    table('where (each sample once)', p.categories, p.samples, usPerSample);
    const js = p.categories.find((c) => c.label.startsWith('JavaScript'))!.samples;
    table(`JavaScript by source module (${pct(js, p.samples).trim()} of the thread)`, p.modules.slice(0, TOP), p.samples, usPerSample);
    table('innermost frames (self)', p.functions.slice(0, TOP), p.samples, usPerSample);
    return { load, rps: Math.round(w.rps), samples: p.samples, us_per_request: +(p.samples * usPerSample).toFixed(2), categories: p.categories, modules: p.modules.slice(0, TOP), bundle_agreement: +p.bundleAgreement.toFixed(3) };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
  }
}

async function main(): Promise<void> {
  if (process.platform !== 'linux') fail('needs Linux perf');
  if (spawnSync('perf', ['--version']).status !== 0) fail('needs Linux perf on PATH (Debian: apt-get install linux-perf)');
  if (!wrkAvailable()) fail("needs Debian's wrk (apt-get install wrk)");
  if (!existsSync(BINARY)) fail(`no binary at ${BINARY}: build it (./build.sh) or give --ivtd PATH`);
  let bundle: BundleIndex | null = null;
  if (existsSync(BUNDLE)) bundle = new BundleIndex(BUNDLE, readFileSync(BUNDLE, 'utf8'));
  else console.log(`profile: no bundle at ${BUNDLE} (--bundle): JavaScript is given by function, not by module`);
  console.log(`profile: ${BINARY}, one lookup thread, ${SECONDS} s of perf at ${FREQUENCY} Hz per load`);
  const results = [];
  for (const load of LOADS) results.push(await profileLoad(load, bundle));
  console.log(JSON.stringify({ bench: 'profile', binary: BINARY, seconds: SECONDS, frequency: FREQUENCY, results }));
}

// A failure after a server started stops it first (the finally in profileLoad), then says why.
await main().catch((e: unknown) => fail(e instanceof Error ? e.message : String(e)));
