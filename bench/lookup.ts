// Lookup throughput and latency: ivtd's pre-bid listener against a bare uWebSockets.js
// handler returning a same-size body, driven by the same autocannon client in one run.
// Reports ratios (the machine is shared and noisy; absolute numbers move, ratios less).
//   node --import tsx bench/lookup.ts [--duration 8] [--connections 50] [--threads 1]
import autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { resolveConfig } from '../src/config.ts';
import { startServer } from '../src/server.ts';
import { createCustomer } from '../src/store/customers.ts';
import { paced } from './paced.ts';
import { LATENCY_BUCKETS_US } from '../src/prebid/messages.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const DURATION = arg('duration', 8);
const CONNECTIONS = arg('connections', 50);
const THREADS = arg('threads', 1);

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

interface Run {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function hammer(port: number, paths: string[], opts: { duration: number }): Promise<Run> {
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: opts.duration,
    requests: paths.map((p) => ({ method: 'GET', path: p })),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ivtd-bench-'));
  const config = { ...resolveConfig({}, {}), dataDir, prebidPort: 0, apiPort: 0, reportingPort: 0, threads: THREADS, logLevel: 'silent' };
  const server = await startServer(config);
  const c = await createCustomer(server.store, { name: 'bench', username: 'bench', password: 'bench-password-1' });
  await server.refreshKeys();
  // In-thread lookup time (parse → JSON), from the histogram the lookup threads report.
  const hist = new Array(LATENCY_BUCKETS_US.length + 1).fill(0) as number[];
  let histSum = 0;
  server.countSinks.push((_rows, stats) => {
    stats.latency.forEach((n, i) => (hist[i]! += n));
    histSum += stats.latencySumUs;
  });
  const histReset = () => {
    hist.fill(0);
    histSum = 0;
  };
  const histSummary = () => {
    const total = hist.reduce((a, b) => a + b, 0);
    const upTo = (q: number) => {
      let acc = 0;
      for (let i = 0; i < hist.length; i++) {
        acc += hist[i]!;
        if (acc >= q * total) return i < LATENCY_BUCKETS_US.length ? `<= ${LATENCY_BUCKETS_US[i]} us` : `> ${LATENCY_BUCKETS_US.at(-1)} us`;
      }
      return 'n/a';
    };
    return { lookups: total, mean_us: total ? +(histSum / total).toFixed(1) : 0, p50: upTo(0.5), p99: upTo(0.99), p999: upTo(0.999) };
  };
  await new Promise((r) => setTimeout(r, 300));
  const paths = lookupPaths(c.partner_id, c.prebid_key, 2000);

  // A real response body fixes the baseline's body size.
  const sample = await fetch(`http://127.0.0.1:${server.ports.prebid}${paths[0]}`);
  const body = await sample.text();
  if (sample.status !== 200) throw new Error(`sample lookup failed: ${sample.status} ${body}`);
  // tsx's hooks are not inherited by worker threads on Node 20: register them in the thread.
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((api) => { api.register(); return import(${JSON.stringify(new URL('./bare-worker.ts', import.meta.url).href)}); });`;
  const bare = new Worker(boot, { eval: true, workerData: { body } });
  const barePort = await new Promise<number>((r) => bare.once('message', (m: { port: number }) => r(m.port)));

  // Warm both (JIT, caches), then measure alternately.
  await hammer(barePort, paths, { duration: 2 });
  await hammer(server.ports.prebid, paths, { duration: 2 });
  const base = await hammer(barePort, paths, { duration: DURATION });
  histReset();
  const ivtd = await hammer(server.ports.prebid, paths, { duration: DURATION });
  await new Promise((r) => setTimeout(r, 1200)); // the threads report once a second
  const inThread = histSummary();
  const halfRate = Math.round(ivtd.rps / 2);
  // Latency at half of ivtd's saturation, constant rate, same paced client for both.
  const half = await paced({ port: server.ports.prebid, paths, rate: halfRate, seconds: DURATION, connections: 16 });
  const baseHalf = await paced({ port: barePort, paths, rate: halfRate, seconds: DURATION, connections: 16 });

  const summary = {
    threads: THREADS,
    connections: CONNECTIONS,
    bare: base,
    ivtd,
    throughput_ratio: +(ivtd.rps / base.rps).toFixed(3),
    in_thread_latency_at_saturation: inThread,
    half_saturation: { rate: halfRate, ivtd: half, bare: baseHalf, p99_ratio: +(half.p99Ms / baseHalf.p99Ms).toFixed(3) },
    targets: { throughput_ratio: '>= 0.6', half_saturation_p99_ms: '<= 1' },
  };
  console.log(`bare uWS   ${base.rps.toFixed(0)} req/s  p50 ${base.p50} ms  p99 ${base.p99} ms`);
  console.log(`ivtd       ${ivtd.rps.toFixed(0)} req/s  p50 ${ivtd.p50} ms  p99 ${ivtd.p99} ms  non-2xx ${ivtd.non2xx}`);
  console.log(`ratio      ${summary.throughput_ratio} (target >= 0.6)`);
  console.log(`in-thread  mean ${inThread.mean_us} us, p50 ${inThread.p50}, p99 ${inThread.p99}, p99.9 ${inThread.p999} (${inThread.lookups} lookups)`);
  console.log(`half load  ${halfRate} req/s: ivtd p50 ${half.p50Ms} ms p99 ${half.p99Ms} ms (target <= 1 ms); bare p50 ${baseHalf.p50Ms} ms p99 ${baseHalf.p99Ms} ms`);
  console.log(JSON.stringify(summary));
  const bareExit = new Promise((r) => bare.once('exit', r));
  bare.postMessage('stop');
  await bareExit;
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

await main();
