// Bundles the code of a checkout's worker threads into data/generated/workers/<role>.mjs
// (packages stay in node_modules), with <role>.json listing the source files it was built
// from: src/runtime/worker-bundle.ts starts a thread from it only while those are unchanged.
// tools/ensure-generated.ts runs this on first need (npm start, npm run ivtd, npm test).
//   node --import tsx tools/build-workers.ts
import { build } from 'esbuild';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { WORKER_ROLES, type WorkerRole } from '../src/runtime/asset-table.ts';
import { repoRoot } from '../src/runtime/assets.ts';
import { BUNDLED_ROLES, freshWorkerBundle, workerBundleFiles, type WorkerBundleManifest } from '../src/runtime/worker-bundle.ts';

/** Roles whose bundle is missing or stale. */
export function staleWorkerBundles(root = repoRoot()): WorkerRole[] {
  return BUNDLED_ROLES.filter((role) => freshWorkerBundle(role, root) === null);
}

/**
 * Builds the bundle of `role`; true when it was written. A source file changed while it was
 * being built leaves no manifest (the old bundle, if any, stays stale): the next need builds again.
 */
export async function buildWorkerBundle(role: WorkerRole, root = repoRoot()): Promise<boolean> {
  const { code, manifest } = workerBundleFiles(role, root);
  mkdirSync(dirname(code), { recursive: true });
  const stage = `${code}.tmp-${process.pid}`;
  const started = Date.now();
  const result = await build({
    absWorkingDir: root,
    entryPoints: [WORKER_ROLES[role]],
    outfile: stage,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // Stack traces name the sources (under --enable-source-maps, as tap runs tests).
    sourcemap: 'inline',
    metafile: true,
    logLevel: 'warning',
  });
  const inputs: WorkerBundleManifest['inputs'] = {};
  for (const input of Object.keys(result.metafile.inputs)) {
    const file = relative(root, join(root, input));
    const s = statSync(join(root, file));
    if (s.mtimeMs >= started - 1000) {
      rmSync(stage, { force: true });
      return false;
    }
    inputs[file] = { mtimeMs: s.mtimeMs, size: s.size };
  }
  // The code first, then the manifest that vouches for it: a reader never pairs a new
  // manifest with an old bundle.
  rmSync(manifest, { force: true });
  renameSync(stage, code);
  const m: WorkerBundleManifest = { role, inputs };
  writeFileSync(`${manifest}.tmp-${process.pid}`, JSON.stringify(m, null, 1) + '\n');
  renameSync(`${manifest}.tmp-${process.pid}`, manifest);
  return true;
}

/** Builds every missing or stale bundle; returns one line per bundle built. */
export async function buildWorkerBundles(root = repoRoot()): Promise<string[]> {
  const lines: string[] = [];
  for (const role of staleWorkerBundles(root)) {
    if (await buildWorkerBundle(role, root)) lines.push(`worker threads: bundled ${WORKER_ROLES[role]} into ${relative(root, workerBundleFiles(role, root).code)}`);
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const line of await buildWorkerBundles()) process.stderr.write(`${line}\n`);
}
