// Lookup throughput and latency: ivtd's pre-bid listener against a bare uWebSockets.js
// handler returning a same-size body, driven by the same client in one run. Both servers
// run as processes of their own, so the client's clock shares no event loop with them.
// Reports ratios (the machine is shared and noisy; absolute numbers move, ratios less).
//   node --import tsx bench/lookup.ts [--duration 8] [--connections 50] [--threads 1]
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LATENCY_BUCKETS_US } from '../src/prebid/messages.ts';
import { paced } from './paced.ts';
import { wrk, wrkAtRate, wrkAvailable } from './wrk.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const DURATION = arg('duration', 8);
const CONNECTIONS = arg('connections', 50);
const THREADS = arg('threads', 1);
const ROOT = join(import.meta.dirname, '..');

const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36',
];
const IP_PREFIXES = ['73.162', '86.1', '81.2', '159.89', '89.238', '3.5', '24.5', '98.210'];

function lookupPaths(partnerId: string, key: string, n: number): string[] {
  const out: string[] = [];
  let seed = 42;
  const rnd = (m: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % m;
  };
  for (let i = 0; i < n; i++) {
    const ip = `${IP_PREFIXES[rnd(IP_PREFIXES.length)]}.${rnd(256)}.${1 + rnd(254)}`;
    const ua = encodeURIComponent(UAS[rnd(UAS.length)]!);
    out.push(
      `/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1,req-${i},pub,pub.example&p=${partnerId}&k=${key}` +
        `&pub=pub-${rnd(50)}&node=bidder-1&ip=${ip}&ua=${ua}&uid=u-${rnd(5000)}&sid=exchange1.example&adt=1&dvt=2&geo=us&p1=${rnd(10)}`,
    );
  }
  return out;
}

/** Starts a child process and resolves when its output matches every pattern. */
function startProcess(args: string[], patterns: RegExp[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; matches: RegExpExecArray[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')} did not start:\n${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const matches = patterns.map((p) => p.exec(out));
      if (matches.every((m) => m !== null)) {
        clearTimeout(timer);
        resolve({ child, matches: matches as RegExpExecArray[] });
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}:\n${out}`)));
  });
}

async function stopProcess(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function hammer(port: number, paths: string[], duration: number): Promise<Run> {
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration,
    requests: paths.map((p) => ({ method: 'GET', path: p })),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

/** Scrapes the in-thread lookup latency histogram from /metrics (cumulative buckets). */
async function inThreadLatency(metricsPort: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^ivtd_lookup_duration_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

function latencySummary(before: Map<string, number>, after: Map<string, number>) {
  const les = [...after.keys()];
  const delta = les.map((le) => (after.get(le) ?? 0) - (before.get(le) ?? 0));
  const total = delta.at(-1) ?? 0;
  const q = (p: number) => {
    const i = delta.findIndex((c) => c >= p * total);
    return i < 0 ? 'n/a' : les[i] === '+Inf' ? `> ${LATENCY_BUCKETS_US.at(-1)} us` : `<= ${Math.round(Number(les[i]) * 1e6)} us`;
  };
  return { lookups: total, p50: q(0.5), p99: q(0.99), p999: q(0.999) };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-'));
  const ivtd = await startProcess(
    ['src/cli/main.ts', 'serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0', '--threads', String(THREADS)],
    [/"port":(\d+),"threads":\d+,"msg":"pre-bid lookups listening"/, /partner_id +([0-9a-f-]{36})/, /prebid_key +(\S+)/, /"ports":\{[^}]*"metrics":(\d+)/],
    { IVTD_LOG_LEVEL: 'info' },
  );
  const [portM, partnerM, keyM, metricsM] = ivtd.matches;
  const port = Number(portM![1]);
  const metricsPort = Number(metricsM![1]);
  const paths = lookupPaths(partnerM![1]!, keyM![1]!, 2000);

  // A real response fixes the baseline's body size.
  const sample = await fetch(`http://127.0.0.1:${port}${paths[0]}`);
  const sampleBody = await sample.text();
  if (sample.status !== 200) throw new Error(`sample lookup failed: ${sample.status} ${sampleBody}`);
  const bare = await startProcess(['bench/bare-server.ts', String(Buffer.byteLength(sampleBody))], [/\{"port":(\d+)\}/]);
  const barePort = Number(bare.matches[0]![1]);

  // Warm both (JIT, caches), then measure.
  await hammer(barePort, paths, 2);
  await hammer(port, paths, 2);
  const base = await hammer(barePort, paths, DURATION);
  const before = await inThreadLatency(metricsPort);
  const sat = await hammer(port, paths, DURATION);
  await new Promise((r) => setTimeout(r, 1200)); // the threads report once a second
  const inThread = latencySummary(before, await inThreadLatency(metricsPort));
  const halfRate = Math.round(sat.rps / 2);
  // Latency at half of ivtd's saturation: constant rate, the same paced client for both.
  const half = await paced({ port, paths, rate: halfRate, seconds: DURATION, connections: 16 });
  const baseHalf = await paced({ port: barePort, paths, rate: halfRate, seconds: DURATION, connections: 16 });

  // Microsecond-resolution latency at about half of saturation, when Debian's wrk is installed.
  let wrkHalf: { ivtd: ReturnType<typeof wrk>; bare: ReturnType<typeof wrk> } | null = null;
  if (wrkAvailable()) {
    const i = wrkAtRate(port, paths, halfRate, DURATION);
    wrkHalf = { ivtd: i, bare: wrk(barePort, paths, i.connections, DURATION) };
  }

  const summary = {
    threads: THREADS,
    connections: CONNECTIONS,
    bare: base,
    ivtd: sat,
    throughput_ratio: +(sat.rps / base.rps).toFixed(3),
    in_thread_latency_at_saturation: inThread,
    half_saturation: { rate: halfRate, ivtd: half, bare: baseHalf, p99_ratio: +(half.p99Ms / baseHalf.p99Ms).toFixed(3) },
    half_saturation_wrk: wrkHalf ?? 'wrk not installed (apt-get install wrk)',
    targets: { throughput_ratio: '>= 0.6', half_saturation_p99_ms: '<= 1' },
  };
  console.log(`bare uWS   ${base.rps.toFixed(0)} req/s  p50 ${base.p50} ms  p99 ${base.p99} ms`);
  console.log(`ivtd       ${sat.rps.toFixed(0)} req/s  p50 ${sat.p50} ms  p99 ${sat.p99} ms  non-2xx ${sat.non2xx}`);
  console.log(`ratio      ${summary.throughput_ratio} (target >= 0.6)`);
  console.log(`in-thread  p50 ${inThread.p50}, p99 ${inThread.p99}, p99.9 ${inThread.p999} (${inThread.lookups} lookups)`);
  console.log(`half load  ${halfRate} req/s: ivtd p50 ${half.p50Ms} ms p99 ${half.p99Ms} ms (target <= 1 ms); bare p50 ${baseHalf.p50Ms} ms p99 ${baseHalf.p99Ms} ms`);
  if (wrkHalf) {
    console.log(
      `wrk        ${wrkHalf.ivtd.connections} conns: ivtd ${wrkHalf.ivtd.rps.toFixed(0)} req/s p50 ${wrkHalf.ivtd.p50Ms} ms p99 ${wrkHalf.ivtd.p99Ms} ms (target <= 1 ms); ` +
        `bare ${wrkHalf.bare.rps.toFixed(0)} req/s p99 ${wrkHalf.bare.p99Ms} ms`,
    );
  } else console.log('wrk        not installed (apt-get install wrk) — no microsecond latency figures');
  console.log(JSON.stringify(summary));
  await stopProcess(bare.child);
  const code = await stopProcess(ivtd.child);
  if (code !== 0) console.error(`ivtd exited with ${code}`);
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
