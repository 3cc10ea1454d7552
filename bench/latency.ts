// End-to-end lookup latency at a fixed request rate, always against the bare uWS baseline
// measured by the same client in the same run: rounds alternate ivtd and bare, and each
// percentile is the median over rounds, so a stall of the (shared) host during one round
// does not decide the figure. Two clients, both separate processes:
//  - wrk (when installed): C, µs timestamps; each connection waits a fixed think time
//    after a response (Lua delay()), so the rate is set by pacing, not by saturation;
//  - bench/paced.ts: Node, scheduled sends, µs timestamps, coordinated-omission-corrected,
//    its own timer lateness excluded (see there).
// The in-thread histogram over the ivtd rounds says how much of the figure is ivtd's
// handler; the rest is the socket path (kernel, uWS, the client), which the bare server
// pays too.
import { runClient } from './client.ts';
import { inThreadBuckets, inThreadLatency, sleep, type InThreadLatency } from './processes.ts';
import { pacingLua, pathsScript, wrkAsync } from './wrk.ts';

export type LatencyClient = 'wrk' | 'paced';

export interface Percentiles {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface LatencyFigures {
  client: LatencyClient;
  rate: number;
  rounds: number;
  seconds_per_round: number;
  ivtd: Percentiles;
  bare: Percentiles;
  /** ivtd minus bare, the latency ivtd adds over a do-nothing uWS handler. */
  p50_excess_ms: number;
  p99_excess_ms: number;
  p99_ratio: number;
  /** Spread of p99 over rounds (min–max) for each server: how noisy the host was. */
  p99_range_ms: { ivtd: [number, number]; bare: [number, number] };
  in_thread: InThreadLatency | null;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : +((s[s.length / 2 - 1]! + s[s.length / 2]!) / 2).toFixed(3);
};

async function once(client: LatencyClient, port: number, paths: string[], rate: number, seconds: number): Promise<Percentiles> {
  if (client === 'paced') {
    const r = await runClient({ kind: 'paced', port, paths, rate, seconds, connections: 16 });
    return { rps: r.rps, p50Ms: r.p50Ms, p99Ms: r.p99Ms, maxMs: r.maxMs };
  }
  // ~10 ms of think time per connection, so wrk's 1 ms timer granularity stays small.
  const connections = Math.max(2, Math.ceil((rate * 10) / 1000));
  const w = await wrkAsync({ port, script: pathsScript(paths) + pacingLua((1000 * connections) / rate), connections, seconds });
  if (w.non2xx + w.errors > 0) throw new Error(`latency probe: ${w.non2xx} non-2xx responses, ${w.errors} socket errors`);
  return { rps: Math.round(w.rps), p50Ms: w.p50Ms, p99Ms: w.p99Ms, maxMs: w.maxMs };
}

export async function latencyVsBare(opts: {
  client: LatencyClient;
  ivtdPort: number;
  barePort: number;
  /** The ivtd /metrics port, for the in-thread histogram; omit when not scraped. */
  metricsPort?: number;
  paths: string[];
  rate: number;
  seconds: number;
  rounds: number;
}): Promise<LatencyFigures> {
  const ivtd: Percentiles[] = [];
  const bare: Percentiles[] = [];
  const before = opts.metricsPort ? await inThreadBuckets(opts.metricsPort) : null;
  for (let r = 0; r < opts.rounds; r++) {
    // Alternate which goes first, so a drift in host load does not favour one side.
    const order: [Percentiles[], number][] = r % 2 ? [[bare, opts.barePort], [ivtd, opts.ivtdPort]] : [[ivtd, opts.ivtdPort], [bare, opts.barePort]];
    for (const [into, port] of order) into.push(await once(opts.client, port, opts.paths, opts.rate, opts.seconds));
  }
  let inThread: InThreadLatency | null = null;
  if (before && opts.metricsPort) {
    await sleep(1200); // the lookup threads report their histogram once a second
    inThread = inThreadLatency(before, await inThreadBuckets(opts.metricsPort));
  }
  const med = (xs: Percentiles[]): Percentiles => ({
    rps: median(xs.map((x) => x.rps)),
    p50Ms: median(xs.map((x) => x.p50Ms)),
    p99Ms: median(xs.map((x) => x.p99Ms)),
    maxMs: Math.max(...xs.map((x) => x.maxMs)),
  });
  const i = med(ivtd);
  const b = med(bare);
  const range = (xs: Percentiles[]): [number, number] => [Math.min(...xs.map((x) => x.p99Ms)), Math.max(...xs.map((x) => x.p99Ms))];
  return {
    client: opts.client,
    rate: opts.rate,
    rounds: opts.rounds,
    seconds_per_round: opts.seconds,
    ivtd: i,
    bare: b,
    p50_excess_ms: +(i.p50Ms - b.p50Ms).toFixed(3),
    p99_excess_ms: +(i.p99Ms - b.p99Ms).toFixed(3),
    p99_ratio: +(i.p99Ms / b.p99Ms).toFixed(2),
    p99_range_ms: { ivtd: range(ivtd), bare: range(bare) },
    in_thread: inThread,
  };
}

export function describeLatency(l: LatencyFigures): string {
  const it = l.in_thread ? `; in-thread p50 ${l.in_thread.p50}, p99 ${l.in_thread.p99}` : '';
  return (
    `${l.client.padEnd(5)} ${l.rate} req/s, median of ${l.rounds} x ${l.seconds_per_round} s: ` +
    `ivtd p50 ${l.ivtd.p50Ms} p99 ${l.ivtd.p99Ms} ms (${l.ivtd.rps} req/s) | bare p50 ${l.bare.p50Ms} p99 ${l.bare.p99Ms} ms | ` +
    `ivtd adds p50 ${l.p50_excess_ms} ms, p99 ${l.p99_excess_ms} ms (p99 range over rounds: ivtd ${l.p99_range_ms.ivtd.join('–')}, bare ${l.p99_range_ms.bare.join('–')} ms)${it}`
  );
}
