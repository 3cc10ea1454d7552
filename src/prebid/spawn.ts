// Starts a lookup thread the same way from a checkout and from the single binary
// (src/runtime/worker-entry.ts knows how each mode loads worker code).
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../runtime/worker-entry.ts';
import type { LookupWorkerInit } from './messages.ts';

export function startLookupWorker(init: LookupWorkerInit): Worker {
  return startWorker('lookup', init);
}
