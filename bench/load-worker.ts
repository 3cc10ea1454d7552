// Lookup load for bench/reporting.ts, on a thread of its own so that the server's main
// thread (reports, JSON, DuckDB results) cannot delay the client's own clock.
import autocannon from 'autocannon';
import { parentPort, workerData } from 'node:worker_threads';
import { paced } from './paced.ts';

export interface LoadRequest {
  port: number;
  paths: string[];
  rate: number;
  seconds: number;
  /** Also run autocannon (fixed rate, whole-millisecond latencies) before the paced probe. */
  autocannon: boolean;
}

const req = workerData as LoadRequest;
let ac: { rps: number; p50: number; p99: number; non2xx: number } | null = null;
if (req.autocannon) {
  const opts = {
    url: `http://127.0.0.1:${req.port}`,
    connections: 8,
    overallRate: req.rate,
    duration: req.seconds,
    requests: req.paths.map((path) => ({ method: 'GET' as const, path })),
  };
  const raw = await autocannon(opts);
  // Inside a worker thread autocannon hands back encoded histograms; aggregate them here.
  const aggregate = (autocannon as unknown as { aggregateResult(r: unknown[], o: unknown): autocannon.Result }).aggregateResult;
  const r = aggregate([raw], opts);
  ac = { rps: Math.round(r.requests.total / req.seconds), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx };
}
const p = await paced({ port: req.port, paths: req.paths, rate: req.rate, seconds: req.seconds, connections: 8 });
parentPort!.postMessage({ autocannon: ac, paced: p });
