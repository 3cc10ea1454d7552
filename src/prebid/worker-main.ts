// Entry of a lookup thread when started from a checkout (the binary dispatches to
// runLookupWorker from its single bundle instead).
import { parentPort, workerData } from 'node:worker_threads';
import type { LookupWorkerInit } from './messages.ts';
import { runLookupWorker } from './worker.ts';

if (!parentPort) throw new Error('worker-main.ts must run in a worker thread');
runLookupWorker(workerData as LookupWorkerInit, parentPort);
