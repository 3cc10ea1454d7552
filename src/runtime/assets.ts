// Embedded files by key: from the executable's SEA assets when running as the single
// binary, else from the checkout, through the same table (asset-table.ts) the build uses.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as sea from 'node:sea';
import { fileURLToPath } from 'node:url';
import { DATA_ASSETS, MANIFEST_KEY, type DataAsset, type SeaManifest } from './asset-table.ts';

export class AssetError extends Error {
  override name = 'AssetError';
}

/** True inside the single executable (also in its worker threads). */
export function isSea(): boolean {
  return sea.isSea();
}

let root: string | undefined;

/** The checkout's root: the nearest folder above this file (or the bundle) whose package.json is ivtd's. */
export function repoRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'ivtd') {
      root = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new AssetError(`no ivtd checkout above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

let manifest: SeaManifest | undefined;

/** The build's list of what it embedded (SEA only). */
export function seaManifest(): SeaManifest {
  manifest ??= JSON.parse(sea.getAsset(MANIFEST_KEY, 'utf8')) as SeaManifest;
  return manifest;
}

/** Bytes of an embedded file, e.g. readAsset('data/hosting-asns.txt'). The result is a private copy. */
export function readAsset(key: string): Uint8Array {
  if (isSea()) {
    if (!seaManifest().assets.includes(key)) throw new AssetError(`no embedded asset ${key}`);
    return new Uint8Array(sea.getAsset(key));
  }
  const path = sourceOf(key);
  if (path === undefined) throw new AssetError(`${key} is not in the asset table (src/runtime/asset-table.ts)`);
  try {
    return readFileSync(join(repoRoot(), path));
  } catch (e) {
    throw new AssetError(`cannot read asset ${key}: ${(e as Error).message}`);
  }
}

/**
 * Bytes of an embedded file without a copy: inside the binary, a view of the executable's
 * own mapped memory, the same pages for every thread (read-only: never write to it); from
 * a checkout, the file read (null when not in the binary, so callers copy as they need).
 */
export function readAssetInPlace(key: string): Uint8Array | null {
  if (!isSea()) return null;
  if (!seaManifest().assets.includes(key)) throw new AssetError(`no embedded asset ${key}`);
  return new Uint8Array(sea.getRawAsset(key) as ArrayBuffer);
}

/** Keys of the embedded files under a prefix, e.g. listAssets('data/sellers/'), sorted. */
export function listAssets(prefix: string): string[] {
  const keys = isSea() ? seaManifest().assets : [...collectDataAssets(repoRoot()).keys()];
  return keys.filter((k) => k.startsWith(prefix)).sort();
}

/** Repo-relative source file of a key, if the table covers it. */
function sourceOf(key: string): string | undefined {
  for (const a of DATA_ASSETS) {
    const from = a.from ?? a.key;
    if (!a.key.endsWith('/')) {
      if (key === a.key) return from;
      continue;
    }
    if (!key.startsWith(a.key)) continue;
    const rest = key.slice(a.key.length);
    if (rest === '' || (!a.recursive && rest.includes('/'))) continue;
    if (a.match && !a.match.test(rest)) continue;
    return from + rest;
  }
  return undefined;
}

/** Every key the table yields in a checkout, with its absolute source path. Throws on a missing required entry. */
export function collectDataAssets(repo: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of DATA_ASSETS) {
    const src = join(repo, a.from ?? a.key);
    if (!existsSync(src)) {
      if (a.optional) continue;
      throw new AssetError(`asset source ${a.from ?? a.key} (for ${a.key}) is missing`);
    }
    if (!a.key.endsWith('/')) {
      out.set(a.key, src);
      continue;
    }
    for (const rel of filesUnder(src, a)) out.set(a.key + rel, join(src, rel));
  }
  return out;
}

function filesUnder(dir: string, a: DataAsset, prefix = ''): string[] {
  const found: string[] = [];
  for (const name of readdirSync(join(dir, prefix)).sort()) {
    const rel = prefix + name;
    const st = statSync(join(dir, rel));
    if (st.isDirectory()) {
      if (a.recursive) found.push(...filesUnder(dir, a, rel + '/'));
    } else if (st.isFile() && (!a.match || a.match.test(rel))) {
      found.push(rel);
    }
  }
  return found;
}
