// Bundles the dashboard (src/dashboard/ui) into data/generated/dashboard/: index.html plus
// content-hashed app-<HASH>.js, app-<HASH>.css and favicon-<HASH>.svg. The folder is
// replaced as a whole, so a server reading it never sees half a build.
//   node --import tsx tools/build-dashboard.ts [--out DIR] [--dev]
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const UI = join(HERE, '..', 'src', 'dashboard', 'ui');
export const DEFAULT_OUT = resolve(HERE, '..', 'data', 'generated', 'dashboard');

export interface BuiltFile {
  name: string;
  bytes: number;
}

export interface BuildResult {
  outDir: string;
  files: BuiltFile[];
}

function hash8(buf: Uint8Array): string {
  return createHash('sha256').update(buf).digest('hex').slice(0, 8).toUpperCase();
}

/** Builds into `outDir` (default data/generated/dashboard). `dev` skips minification. */
export async function buildDashboard(opts: { outDir?: string; dev?: boolean } = {}): Promise<BuildResult> {
  const outDir = resolve(opts.outDir ?? DEFAULT_OUT);
  const stage = `${outDir}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  try {
    const result = await build({
      entryPoints: { app: join(UI, 'main.ts') },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: ['chrome109', 'firefox115', 'safari15.6'],
      minify: !opts.dev,
      sourcemap: false,
      legalComments: 'none',
      entryNames: '[name]-[hash]',
      outdir: stage,
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
    const js = outputs.find((n) => n.endsWith('.js'));
    const css = outputs.find((n) => n.endsWith('.css'));
    if (!js || !css) throw new Error(`esbuild produced ${outputs.join(', ')}; expected one .js and one .css`);

    const icon = readFileSync(join(UI, 'favicon.svg'));
    const iconName = `favicon-${hash8(icon)}.svg`;
    writeFileSync(join(stage, iconName), icon);

    const html = readFileSync(join(UI, 'index.html'), 'utf8').replace('%JS%', js).replace('%CSS%', css).replace('%FAVICON%', iconName);
    if (html.includes('%')) throw new Error('index.html has an unreplaced %PLACEHOLDER%');
    writeFileSync(join(stage, 'index.html'), html);

    mkdirSync(dirname(outDir), { recursive: true });
    const old = `${outDir}.old-${process.pid}`;
    rmSync(old, { recursive: true, force: true });
    try {
      renameSync(outDir, old);
    } catch {
      // first build: nothing to move aside
    }
    renameSync(stage, outDir);
    rmSync(old, { recursive: true, force: true });

    const files = [...outputs, iconName, 'index.html'].sort().map((name) => ({ name, bytes: statSync(join(outDir, name)).size }));
    return { outDir, files };
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
}

async function main(argv: string[]): Promise<void> {
  const outIdx = argv.indexOf('--out');
  const outDir = outIdx >= 0 ? argv[outIdx + 1] : undefined;
  if (outIdx >= 0 && !outDir) throw new Error('--out needs a directory');
  const t0 = Date.now();
  const r = await buildDashboard({ outDir, dev: argv.includes('--dev') });
  const total = r.files.reduce((s, f) => s + f.bytes, 0);
  process.stderr.write(
    `dashboard built in ${Date.now() - t0} ms -> ${relative(process.cwd(), r.outDir) || '.'} (${(total / 1024).toFixed(1)} KiB)\n` +
      r.files.map((f) => `  ${f.name.padEnd(28)} ${(f.bytes / 1024).toFixed(1).padStart(7)} KiB\n`).join(''),
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((e: Error) => {
    process.stderr.write(`dashboard build failed: ${e.message}\n`);
    process.exit(1);
  });
}
