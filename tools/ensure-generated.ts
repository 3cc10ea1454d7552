// The generated inputs of a checkout (data/generated/ is not in git): the ASN range table,
// the built dashboard and the lookup threads' bundle, made on first need so every documented command works right
// after `npm install`. `npm run ivtd`, `npm start` and `npm test` load this module first
// (`node --import`); it also runs as a script. It writes to stderr only: stdout belongs to
// the CLI (`--json`). An up-to-date checkout costs a few file stats.
//   node --import tsx tools/ensure-generated.ts
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { BUNDLED_ROLES, freshWorkerBundle } from '../src/runtime/worker-bundle.ts';
import { DEFAULT_OUT_DIR, writeAsnFiles } from './build-asn.ts';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
/** build-dashboard.ts's DEFAULT_OUT; that module (and esbuild) is loaded only to build. */
const DASHBOARD_OUT = join(DEFAULT_OUT_DIR, 'dashboard');

/** Newest modification time (ms) of the files under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * True when the built dashboard is missing or older than some file under src/ (its UI code
 * imports shared modules such as src/base/enums.ts, so the whole tree counts; a false alarm
 * costs one quick rebuild).
 */
export function dashboardStale(outDir = DASHBOARD_OUT): boolean {
  const index = join(outDir, 'index.html');
  return !existsSync(index) || statSync(index).mtimeMs < newestMtime(SRC);
}

/** Builds what is missing or stale; `say` receives one line per thing built. */
export async function ensureGenerated(say: (line: string) => void): Promise<void> {
  const asn = writeAsnFiles(DEFAULT_OUT_DIR, { ifMissing: true });
  if (asn.built) say(asn.message);
  if (dashboardStale()) {
    const { buildDashboard } = await import('./build-dashboard.ts');
    const r = await buildDashboard({ outDir: DASHBOARD_OUT });
    say(`dashboard: built ${r.files.length} files into ${r.outDir}`);
  }
  // The lookup threads' bundle (src/runtime/worker-bundle.ts): without it they start through tsx.
  if (BUNDLED_ROLES.some((role) => freshWorkerBundle(role) === null)) {
    const { buildWorkerBundles } = await import('./build-workers.ts');
    for (const line of await buildWorkerBundles()) say(line);
  }
}

// Worker threads never run this (Node does not give them --import preloads); the guard
// keeps it that way if that changes.
if (isMainThread) {
  try {
    await ensureGenerated((line) => process.stderr.write(`${line}\n`));
  } catch (e) {
    process.stderr.write(`ivtd: cannot build the generated data in data/generated/ (${(e as Error).message}); run \`npm install\` and try again\n`);
    process.exit(1);
  }
}
