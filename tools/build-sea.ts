// Build step of ./build.sh: bundles the app into one CommonJS file and writes the SEA
// config (bundle + data assets + native addons + manifest). build.sh then makes the blob
// and injects it into a copy of node.
//   node --import tsx tools/build-sea.ts --entry src/cli/main.ts --work dist/ivtd.build
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, type Plugin } from 'esbuild';
import {
  BUNDLE_KEY,
  MANIFEST_KEY,
  NATIVE_ADDONS,
  WORKER_ROLES,
  nativeAssetKey,
  type NativeName,
  type SeaManifest,
  type WorkerRole,
} from '../src/runtime/asset-table.ts';
import { collectDataAssets, repoRoot } from '../src/runtime/assets.ts';

function sha256(...parts: Array<string | Uint8Array>): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex').slice(0, 16);
}

/** Replaces the native packages' loaders with loadNative(), and supplies the virtual modules of bundle-entry.ts. */
function runtimePlugin(root: string, entry: string, roles: readonly WorkerRole[]): Plugin {
  const nativeTs = join(root, 'src/runtime/native.ts');
  const byPackage = new Map(Object.entries(NATIVE_ADDONS).map(([name, a]) => [a.package, name as NativeName]));
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const packageFilter = new RegExp(`^(${[...byPackage.keys()].map(escape).join('|')})$`);
  return {
    name: 'ivtd-runtime',
    setup(b) {
      b.onResolve({ filter: packageFilter }, (args) => ({ path: byPackage.get(args.path) ?? '', namespace: 'ivtd-native' }));
      b.onLoad({ filter: /.*/, namespace: 'ivtd-native' }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(nativeTs)}).loadNative(${JSON.stringify(args.path)});`,
        resolveDir: root,
        loader: 'js',
      }));
      b.onResolve({ filter: /\.node$/ }, (args) => ({
        errors: [{ text: `native addon ${args.path} (from ${args.importer}) is not in NATIVE_ADDONS (src/runtime/asset-table.ts)` }],
      }));
      b.onResolve({ filter: /^ivtd:main$/ }, () => ({ path: entry }));
      b.onResolve({ filter: /^ivtd:workers$/ }, () => ({ path: 'workers', namespace: 'ivtd-virtual' }));
      b.onLoad({ filter: /^workers$/, namespace: 'ivtd-virtual' }, () => {
        const lines = roles.map((role) => `  ${JSON.stringify(role)}: () => import(${JSON.stringify(join(root, WORKER_ROLES[role]))}),`);
        return { contents: `export const workerModules = {\n${lines.join('\n')}\n};\n`, resolveDir: root, loader: 'js' };
      });
    },
  };
}

// The bundle is CommonJS (all Node 20 SEA runs); these stand in for import.meta there.
// In the SEA main script __filename is the executable; in an eval worker it is not a path.
const BANNER = `"use strict";
var __ivtd_filename = typeof __filename === "string" && require("node:path").isAbsolute(__filename) ? __filename : process.execPath;
var __ivtd_import_meta_url = require("node:url").pathToFileURL(__ivtd_filename).href;
var __ivtd_import_meta_dirname = require("node:path").dirname(__ivtd_filename);
var __ivtd_import_meta_resolve = (s) => { throw new Error("import.meta.resolve(" + s + ") is not available in the bundle"); };`;

export async function bundle(root: string, entry: string, roles: readonly WorkerRole[], outfile: string): Promise<void> {
  await build({
    entryPoints: [join(root, 'src/runtime/bundle-entry.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    banner: { js: BANNER },
    define: {
      'import.meta.url': '__ivtd_import_meta_url',
      'import.meta.filename': '__ivtd_filename',
      'import.meta.dirname': '__ivtd_import_meta_dirname',
      'import.meta.resolve': '__ivtd_import_meta_resolve',
      IVTD_BUNDLED: 'true',
    },
    plugins: [runtimePlugin(root, entry, roles)],
    logLevel: 'warning',
  });
}

function nativeAssets(root: string): { assets: Record<string, string>; natives: SeaManifest['natives'] } {
  const assets: Record<string, string> = {};
  const natives = {} as SeaManifest['natives'];
  for (const [name, addon] of Object.entries(NATIVE_ADDONS) as Array<[NativeName, (typeof NATIVE_ADDONS)[NativeName]]>) {
    const files = addon.files.map((f) => {
      const path = join(root, f.from);
      if (!existsSync(path)) throw new Error(`native addon file ${f.from} is missing (npm ci on linux-x64?)`);
      return { name: f.name, key: nativeAssetKey(name, f.name), path, size: statSync(path).size };
    });
    for (const f of files) assets[f.key] = f.path;
    natives[name] = {
      hash: sha256(...files.flatMap((f) => [f.name, readFileSync(f.path)])),
      files: files.map(({ name, key, size }) => ({ name, key, size })),
    };
  }
  return { assets, natives };
}

/** The build's date: SOURCE_DATE_EPOCH (seconds) when set, so a rebuild can be byte-identical; else now. */
function buildDate(env: NodeJS.ProcessEnv = process.env): string {
  const epoch = env.SOURCE_DATE_EPOCH;
  if (epoch !== undefined && /^\d+$/.test(epoch)) return new Date(Number(epoch) * 1000).toISOString();
  return new Date().toISOString();
}

/** Bundles and writes sea-config.json (+ manifest) into `work`; returns the config path. */
export async function prepareSea(root: string, entry: string, roles: readonly WorkerRole[], work: string): Promise<string> {
  for (const role of roles) {
    if (!existsSync(join(root, WORKER_ROLES[role]))) throw new Error(`worker role ${role}: ${WORKER_ROLES[role]} does not exist`);
  }
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const bundleFile = join(work, 'ivtd.cjs');
  await bundle(root, entry, roles, bundleFile);

  const data = collectDataAssets(root);
  const native = nativeAssets(root);
  const bundleBytes = readFileSync(bundleFile);
  const manifest: SeaManifest = {
    assets: [...data.keys()].sort(),
    natives: native.natives,
    bundle: { hash: sha256(bundleBytes), size: bundleBytes.byteLength },
    builtAt: buildDate(),
  };
  const manifestFile = join(work, 'manifest.json');
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + '\n');

  const config = {
    main: bundleFile,
    output: join(work, 'sea-prep.blob'),
    disableExperimentalSEAWarning: true,
    useSnapshot: false,
    useCodeCache: false,
    assets: { ...Object.fromEntries(data), ...native.assets, [BUNDLE_KEY]: bundleFile, [MANIFEST_KEY]: manifestFile },
  };
  const configFile = join(work, 'sea-config.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2) + '\n');
  return configFile;
}

/** Worker roles to bundle: as given, else the probe's own for the probe entry, else every app role. */
function parseRoles(arg: string | undefined, entry: string, root: string): WorkerRole[] {
  const all = Object.keys(WORKER_ROLES) as WorkerRole[];
  if (arg === undefined || arg === '') {
    return entry === join(root, 'tools/probe.ts') ? ['probe'] : all.filter((r) => r !== 'probe');
  }
  const roles = arg.split(',').map((r) => r.trim());
  for (const r of roles) if (!all.includes(r as WorkerRole)) throw new Error(`unknown worker role ${r} (known: ${all.join(', ')})`);
  return roles as WorkerRole[];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { entry: { type: 'string' }, work: { type: 'string' }, roles: { type: 'string' } } });
  if (!values.entry || !values.work) throw new Error('usage: build-sea.ts --entry <file.ts> --work <dir> [--roles lookup,...]');
  if (process.versions.modules !== '115') throw new Error(`build with Node 20 (ABI 115), not ${process.version}`);
  const root = repoRoot();
  const entry = resolve(values.entry);
  if (!existsSync(entry)) throw new Error(`entry ${values.entry} does not exist`);
  const work = isAbsolute(values.work) ? values.work : resolve(values.work);
  const configFile = await prepareSea(root, entry, parseRoles(values.roles, entry, root), work);
  console.log(relative(process.cwd(), configFile));
}

main().catch((e: unknown) => {
  console.error(`build-sea: ${(e as Error).message}`);
  process.exit(1);
});
