// Top level of the bundle (and so of the single binary): the main thread runs the CLI
// entry; a worker thread started by startWorker() runs the code of its role instead.
// 'ivtd:main' and 'ivtd:workers' are virtual modules supplied by tools/build-sea.ts.
import { isMainThread, workerData } from 'node:worker_threads';
import { workerModules } from 'ivtd:workers';
import { ROLE_FIELD } from './worker-entry.ts';

function fail(err: unknown): void {
  console.error(err);
  process.exitCode = 1;
}

const role: unknown = isMainThread ? undefined : (workerData as Record<string, unknown> | null)?.[ROLE_FIELD];
if (role === undefined) {
  import('ivtd:main').catch(fail);
} else {
  const load = typeof role === 'string' ? workerModules[role] : undefined;
  if (!load) throw new Error(`unknown worker role ${String(role)}`);
  load().catch(fail);
}
