// Why lookup latency figures disagree (issue 14): the same fixed rate, the same lookups,
// measured by every client at hand against ivtd and against the bare uWS handler, plus the
// in-thread histogram. Each client is a process of its own; ivtd and bare alternate.
//   autocannon  overallRate: a per-second request budget per connection (a saturating
//               burst, then idle), whole-millisecond latencies, and HdrHistogram's
//               coordinated-omission back-fill applied to those bursts;
//   paced-due   bench/paced.ts timed from when each request was due (the old figure):
//               counts the client's own timer lateness as latency;
//   paced       bench/paced.ts as used now: its timer lateness excluded, a server stall
//               still charged from the due time;
//   hey         Debian's hey, when installed (Go, closed loop with a per-worker rate limit);
//   wrk         Debian's wrk paced by think time (C, µs), as bench/latency.ts uses it.
//   node --import tsx bench/latency-clients.ts [--rate 2000] [--seconds 6] [--rounds 2] [--threads 1]
import { spawnSync } from 'node:child_process';
import { runClient } from './client.ts';
import { inThreadBuckets, inThreadLatency, numArg, sleep, startBare, startIvtd, targetFromArgs, thisCheckout } from './processes.ts';
import { lookupPaths } from './requests.ts';
import { pacingLua, pathsScript, wrkAsync, wrkAvailable } from './wrk.ts';

const RATE = numArg('rate', 2000);
const SECONDS = numArg('seconds', 6);
const ROUNDS = numArg('rounds', 2);
const THREADS = numArg('threads', 1);

interface Figure {
  p50Ms: number;
  p99Ms: number;
  rps: number;
}

const heyAvailable = () => spawnSync('hey', ['-h']).error === undefined;

function hey(port: number, path: string): Figure {
  const connections = 16;
  const r = spawnSync('hey', ['-z', `${SECONDS}s`, '-c', String(connections), '-q', String(RATE / connections), `http://127.0.0.1:${port}${path}`], { encoding: 'utf8' });
  const pct = (q: string) => Number(new RegExp(`${q}% in ([\\d.]+) secs`).exec(r.stdout)?.[1]) * 1000;
  return { p50Ms: pct('50'), p99Ms: pct('99'), rps: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1])) };
}

const CLIENTS: Record<string, { available: () => boolean; run: (port: number, paths: string[]) => Promise<Figure> }> = {
  autocannon: {
    available: () => true,
    run: async (port, paths) => runClient({ kind: 'autocannon', port, paths, rate: RATE, seconds: SECONDS, connections: 8 }),
  },
  'paced-due': {
    available: () => true,
    run: async (port, paths) => {
      const r = await runClient({ kind: 'paced', port, paths, rate: RATE, seconds: SECONDS, connections: 16 });
      return { p50Ms: NaN, p99Ms: r.fromDueP99Ms, rps: r.rps };
    },
  },
  paced: {
    available: () => true,
    run: async (port, paths) => runClient({ kind: 'paced', port, paths, rate: RATE, seconds: SECONDS, connections: 16 }),
  },
  // hey sends one URL: a lookup from the same set.
  hey: { available: heyAvailable, run: async (port, paths) => hey(port, paths[1]!) },
  wrk: {
    available: wrkAvailable,
    run: async (port, paths) => {
      const connections = Math.max(2, Math.ceil((RATE * 10) / 1000));
      const w = await wrkAsync({ port, script: pathsScript(paths) + pacingLua((1000 * connections) / RATE), connections, seconds: SECONDS });
      return { p50Ms: w.p50Ms, p99Ms: w.p99Ms, rps: Math.round(w.rps) };
    },
  },
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

async function main(): Promise<void> {
  const ivtd = await startIvtd(targetFromArgs(process.argv) ?? thisCheckout(), { threads: THREADS });
  const paths = lookupPaths(ivtd.partnerId, ivtd.key, 2000);
  const sample = await (await fetch(`http://127.0.0.1:${ivtd.prebidPort}${paths[0]}`)).text();
  const bare = await startBare(Buffer.byteLength(sample));
  const rows: Record<string, { ivtd: Figure; bare: Figure }> = {};
  try {
    await CLIENTS.paced!.run(ivtd.prebidPort, paths); // warm-up
    const before = await inThreadBuckets(ivtd.metricsPort);
    for (const [name, c] of Object.entries(CLIENTS)) {
      if (!c.available()) {
        console.log(`${name.padEnd(10)} not installed`);
        continue;
      }
      const got: { ivtd: Figure[]; bare: Figure[] } = { ivtd: [], bare: [] };
      for (let r = 0; r < ROUNDS; r++) {
        const order = r % 2 ? (['bare', 'ivtd'] as const) : (['ivtd', 'bare'] as const);
        for (const which of order) got[which].push(await c.run(which === 'ivtd' ? ivtd.prebidPort : bare.port, paths));
      }
      const med = (xs: Figure[]): Figure => ({ p50Ms: median(xs.map((x) => x.p50Ms)), p99Ms: median(xs.map((x) => x.p99Ms)), rps: median(xs.map((x) => x.rps)) });
      rows[name] = { ivtd: med(got.ivtd), bare: med(got.bare) };
      const { ivtd: i, bare: b } = rows[name]!;
      console.log(`${name.padEnd(10)} ivtd p50 ${i.p50Ms} p99 ${i.p99Ms} ms (${i.rps} req/s) | bare p50 ${b.p50Ms} p99 ${b.p99Ms} ms (${b.rps} req/s)`);
    }
    await sleep(1200);
    const inThread = inThreadLatency(before, await inThreadBuckets(ivtd.metricsPort));
    console.log(`in-thread  p50 ${inThread.p50}, p99 ${inThread.p99}, p99.9 ${inThread.p999} (${inThread.lookups} lookups, all clients)`);
    console.log(JSON.stringify({ bench: 'latency-clients', rate: RATE, seconds: SECONDS, rounds: ROUNDS, clients: rows, in_thread: inThread }));
  } finally {
    await bare.stop();
    await ivtd.stop();
  }
}

await main();
