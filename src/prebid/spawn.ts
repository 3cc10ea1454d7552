// Starts a lookup thread. From a checkout the thread runs worker-main.ts (tsx's loader
// is inherited through execArgv).
import { Worker } from 'node:worker_threads';
import type { LookupWorkerInit } from './messages.ts';

export function startLookupWorker(init: LookupWorkerInit): Worker {
  return new Worker(new URL('./worker-main.ts', import.meta.url), { workerData: init });
}
