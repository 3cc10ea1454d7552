// Entry of a lookup thread, from a checkout and inside the binary alike
// (src/runtime/worker-entry.ts starts it as the 'lookup' role).
import { parentPort, workerData } from 'node:worker_threads';
import type { LookupWorkerInit } from './messages.ts';
import { runLookupWorker } from './worker.ts';

if (!parentPort) throw new Error('worker-main.ts must run in a worker thread');
runLookupWorker(workerData as LookupWorkerInit, parentPort);
