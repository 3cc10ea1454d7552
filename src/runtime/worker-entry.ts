// Starting worker threads the same way from a checkout, from the bundle and from the
// single binary. The bundle is one file whose top level (bundle-entry.ts) runs either the
// CLI or a worker role, chosen by workerData.__ivtdRole.
import { join } from 'node:path';
import * as sea from 'node:sea';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { BUNDLE_KEY, WORKER_ROLES, type WorkerRole } from './asset-table.ts';
import { isSea, repoRoot } from './assets.ts';
import { holdYoungGeneration, startingYoungGeneration } from './heap-flags.ts';
import { freshWorkerBundle } from './worker-bundle.ts';

export type { WorkerRole } from './asset-table.ts';

/** workerData field that tells the bundle's top level which role to run. */
export const ROLE_FIELD = '__ivtdRole';

// Replaced by `true` when esbuild bundles (tools/build-sea.ts); absent from a checkout.
declare const IVTD_BUNDLED: boolean | undefined;
const bundled = typeof IVTD_BUNDLED !== 'undefined' && IVTD_BUNDLED;

export type StartWorkerOptions = Omit<WorkerOptions, 'eval' | 'workerData'>;

/** Starts the worker code of `role` (WORKER_ROLES) with `workerData` (plus ROLE_FIELD). */
export function startWorker(role: WorkerRole, workerData: object, options: StartWorkerOptions = {}): Worker {
  const young = options.resourceLimits?.maxYoungGenerationSizeMb;
  if (young !== undefined) startingYoungGeneration(young);
  const worker = newWorker(role, workerData, options);
  // Its heap set up, the thread runs: the young-generation setting it reset holds again;
  // and once more at its first message, after any isolate its start-up made (from a
  // checkout, tsx's loader thread).
  worker.once('online', holdYoungGeneration);
  worker.once('message', holdYoungGeneration);
  return worker;
}

function newWorker(role: WorkerRole, workerData: object, options: StartWorkerOptions): Worker {
  const data = { ...workerData, [ROLE_FIELD]: role };
  if (isSea()) {
    // No file to point at: the worker evaluates the bundle, embedded as an asset.
    return new Worker(bundleSource(), { ...options, eval: true, workerData: data });
  }
  if (bundled) return new Worker(bundleFile(), { ...options, workerData: data });
  // Checkout: the role's bundle while it matches the sources (worker-bundle.ts), else the
  // sources through tsx, whose hooks are not inherited by worker threads on Node 20: registered
  // first. Either is imported from eval'd code: a worker started from a file would run the
  // process's --import preloads again (tsx, tools/ensure-generated.ts, a test runner's hooks).
  const fresh = freshWorkerBundle(role);
  if (fresh !== null) return new Worker(`import(${JSON.stringify(pathToFileURL(fresh).href)});`, { ...options, eval: true, workerData: data });
  const file = pathToFileURL(join(repoRoot(), WORKER_ROLES[role])).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(file)}); });`;
  return new Worker(boot, { ...options, eval: true, workerData: data });
}

let source: string | undefined;

function bundleSource(): string {
  source ??= sea.getAsset(BUNDLE_KEY, 'utf8');
  return source;
}

/** The bundle file when running it with plain node (debugging the bundle without the SEA step). */
function bundleFile(): string {
  // In the bundle, __filename is the bundle itself (CommonJS).
  return __filename;
}
