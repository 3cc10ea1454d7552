// Native addons (uWebSockets.js, DuckDB). The bundle replaces the packages' JS loaders with
// loadNative() (see tools/build-sea.ts), so app code keeps its normal imports in both modes.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as sea from 'node:sea';
import { NATIVE_ADDONS, type NativeName } from './asset-table.ts';
import { isSea, seaManifest } from './assets.ts';
import { materialize } from './cache-dir.ts';

const loaded = new Map<NativeName, unknown>();

/** The addon's exports: the package itself from a checkout; inside the binary, the embedded addon via dlopen. */
export function loadNative(name: NativeName): unknown {
  let mod = loaded.get(name);
  if (mod === undefined) {
    mod = isSea() ? dlopenEmbedded(name) : createRequire(import.meta.url)(NATIVE_ADDONS[name].package);
    loaded.set(name, mod);
  }
  return mod;
}

/** Writes the addon (and the libraries beside it) to the private cache once per content hash, then dlopens it. */
export function dlopenEmbedded(name: NativeName): unknown {
  const entry = seaManifest().natives[name];
  const dir = materialize(
    `${name}-${entry.hash}`,
    entry.files.map((f) => ({ name: f.name, size: f.size, bytes: () => new Uint8Array(sea.getRawAsset(f.key) as ArrayBuffer) })),
  );
  const first = entry.files[0];
  if (!first) throw new Error(`native addon ${name} has no files in the manifest`);
  const module = { exports: {} as unknown };
  process.dlopen(module, join(dir, first.name));
  return module.exports;
}
