// A checkout's lookup threads start from a bundle of their code when one is built and every
// source file it was built from is unchanged (data/generated/workers/, made on first need by
// tools/ensure-generated.ts through tools/build-workers.ts, like the dashboard). Otherwise
// they start through tsx, as before: that costs each thread ~0.2 s more CPU (a module hooks
// thread of its own, every file compiled through it), which the test suite paid ~150 times.
// The single binary never looks here: it runs its own bundle (worker-entry.ts).
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkerRole } from './asset-table.ts';
import { repoRoot } from './assets.ts';

/** Repo-relative folder of the bundles. */
export const WORKER_BUNDLE_DIR = 'data/generated/workers';

/** Roles a checkout bundles. The probe (the build pipeline's self-test) always starts through tsx. */
export const BUNDLED_ROLES: readonly WorkerRole[] = ['lookup'];

/** Written beside each bundle: the source files it was built from, as they were. */
export interface WorkerBundleManifest {
  role: WorkerRole;
  /** Repo-relative path → the file's mtime and size when the bundle was built. */
  inputs: Record<string, { mtimeMs: number; size: number }>;
}

export function workerBundleFiles(role: WorkerRole, root = repoRoot()): { code: string; manifest: string } {
  return { code: join(root, WORKER_BUNDLE_DIR, `${role}.mjs`), manifest: join(root, WORKER_BUNDLE_DIR, `${role}.json`) };
}

/**
 * The bundle of `role` when it exists and each file it was built from has the same mtime
 * and size as then (any edit, checkout or removal makes it stale); null otherwise.
 */
export function freshWorkerBundle(role: WorkerRole, root = repoRoot()): string | null {
  if (!BUNDLED_ROLES.includes(role)) return null;
  const { code, manifest } = workerBundleFiles(role, root);
  let m: WorkerBundleManifest;
  try {
    m = JSON.parse(readFileSync(manifest, 'utf8')) as WorkerBundleManifest;
    statSync(code);
  } catch {
    return null;
  }
  if (m.role !== role || typeof m.inputs !== 'object' || m.inputs === null || Object.keys(m.inputs).length === 0) return null;
  for (const [file, was] of Object.entries(m.inputs)) {
    try {
      const now = statSync(join(root, file));
      if (now.mtimeMs !== was.mtimeMs || now.size !== was.size) return null;
    } catch {
      return null;
    }
  }
  return code;
}
