// Lookup load on a thread of its own (bench/load-worker.ts), so that the server's main
// thread (reports, JSON, DuckDB or ClickHouse results) cannot delay the client's own clock.
import { Worker } from 'node:worker_threads';
import type { LoadRequest } from './load-worker.ts';
import type { PacedResult } from './paced.ts';

export interface LoadResult {
  autocannon: { rps: number; p50: number; p99: number; non2xx: number } | null;
  paced: PacedResult;
}

export function lookupLoad(req: LoadRequest): Promise<LoadResult> {
  // tsx's hooks are not inherited by worker threads on Node 20: register them in the thread.
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((api) => { api.register(); return import(${JSON.stringify(new URL('./load-worker.ts', import.meta.url).href)}); });`;
  const w = new Worker(boot, { eval: true, workerData: req });
  return new Promise((resolve, reject) => {
    w.once('message', (m: LoadResult) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
}
