// Lookup load at a fixed rate from a client process of its own (bench/client.ts), so that
// neither the server's threads (reports, JSON, DuckDB or ClickHouse results) nor the bench's
// own event loop delay the client's clock. For a figure with the bare uWS baseline beside
// it, use bench/latency.ts; this one measures ivtd alone (e.g. before/after an event).
import { runClient } from './client.ts';
import type { PacedResult } from './paced.ts';

export interface LoadRequest {
  port: number;
  paths: string[];
  rate: number;
  seconds: number;
  /**
   * Also run autocannon (its fixed-rate mode is a per-second burst with whole-millisecond
   * latencies and a coordinated-omission back-fill: see docs/benchmarks.md) before the paced probe.
   */
  autocannon: boolean;
}

export interface LoadResult {
  autocannon: { rps: number; p50: number; p99: number; non2xx: number } | null;
  paced: PacedResult;
}

export async function lookupLoad(req: LoadRequest): Promise<LoadResult> {
  const common = { port: req.port, paths: req.paths, rate: req.rate, seconds: req.seconds };
  let ac: LoadResult['autocannon'] = null;
  if (req.autocannon) {
    const r = await runClient({ kind: 'autocannon', ...common, connections: 8 });
    ac = { rps: r.rps, p50: r.p50Ms, p99: r.p99Ms, non2xx: r.non2xx };
  }
  return { autocannon: ac, paced: await runClient({ kind: 'paced', ...common, connections: 8 }) };
}
