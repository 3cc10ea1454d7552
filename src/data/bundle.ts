// Finds and reads every data file a lookup needs, on the main thread, so that no thread
// holds a copy of its own: a file from disk is read once into shared memory; inside the
// binary an embedded file is not copied at all (each thread reads the executable's own
// pages, see forThreads/fromMainThread). Precedence per file: an explicit flag (--mmdb-*) >
// a file of the same name in <data-dir> > the embedded default.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { listAssets, readAsset, readAssetInPlace } from '../runtime/assets.ts';

export interface DataFile {
  /** Logical name, e.g. 'hosting-asns.txt'. */
  name: string;
  /** Where it came from: a path, or 'embedded:<asset>'. */
  source: string;
  bytes: Uint8Array;
  /** Last-modified time of the file (ISO, truncated to the millisecond), or null for embedded data. */
  modified: string | null;
  /** The embedded asset, when `bytes` are the executable's own pages (no copy). */
  asset?: string;
}

export interface DataBundle {
  asnBin: DataFile | null;
  asnMmdb: DataFile | null;
  countryMmdb: DataFile;
  anonymousIpMmdb: DataFile | null;
  hostingAsns: DataFile;
  vpnAsns: DataFile;
  hostingOrgPatterns: DataFile;
  badIfas: DataFile;
  sellers: DataFile[];
  /** The sellers files compiled once by the main thread (shared memory); threads use it instead of the files. */
  sellersIndex?: Uint8Array;
  loadedAt: string;
}

/** Embedded asset names (repo-relative paths, also the SEA asset keys). */
export const EMBEDDED = {
  asnBin: 'data/generated/asn.bin',
  asnMeta: 'data/generated/asn.meta.json',
  countryMmdb: 'mmdb/country.mmdb',
  hostingAsns: 'data/hosting-asns.txt',
  vpnAsns: 'data/vpn-asns.txt',
  hostingOrgPatterns: 'data/hosting-org-patterns.txt',
  badIfas: 'data/bad-ifas.txt',
  sellersDir: 'data/sellers/',
} as const;

export class DataLoadError extends Error {}

/** Copies bytes into a SharedArrayBuffer so postMessage shares instead of cloning them. */
function shared(buf: Uint8Array): Uint8Array {
  const out = new Uint8Array(new SharedArrayBuffer(buf.byteLength));
  out.set(buf);
  return out;
}

function fromPath(name: string, path: string): DataFile {
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a regular file');
    // Truncated, like `ls --full-time`: fs.Stats#mtime rounds to the nearest millisecond instead.
    return { name, source: path, bytes: shared(readFileSync(path)), modified: new Date(Math.floor(st.mtimeMs)).toISOString() };
  } catch (e) {
    throw new DataLoadError(`cannot read ${name} from ${path}: ${(e as Error).message}`);
  }
}

function fromAsset(name: string, asset: string): DataFile {
  try {
    const inPlace = readAssetInPlace(asset);
    // Typed-array views (the ASN table) need aligned bytes: an unaligned asset is copied once.
    if (inPlace !== null && inPlace.byteOffset % 8 === 0) return { name, source: `embedded:${asset}`, bytes: inPlace, modified: null, asset };
    return { name, source: `embedded:${asset}`, bytes: shared(inPlace ?? readAsset(asset)), modified: null };
  } catch (e) {
    throw new DataLoadError(
      `embedded data ${asset} is missing (${(e as Error).message}); from a checkout run \`npm run build:data\``,
    );
  }
}

const NO_BYTES = new Uint8Array(0);

function mapFiles(b: DataBundle, f: (file: DataFile) => DataFile): DataBundle {
  const one = (x: DataFile | null) => (x === null ? null : f(x));
  return {
    ...b,
    asnBin: one(b.asnBin), asnMmdb: one(b.asnMmdb), countryMmdb: f(b.countryMmdb), anonymousIpMmdb: one(b.anonymousIpMmdb),
    hostingAsns: f(b.hostingAsns), vpnAsns: f(b.vpnAsns), hostingOrgPatterns: f(b.hostingOrgPatterns), badIfas: f(b.badIfas),
    sellers: b.sellers.map(f),
  };
}

/** The bundle as posted to a lookup thread: shared bytes travel as they are, embedded ones by name. */
export function forThreads(b: DataBundle): DataBundle {
  return mapFiles(b, (f) => (f.asset !== undefined ? { ...f, bytes: NO_BYTES } : f));
}

/** In a lookup thread: the embedded files' bytes again, from the executable's pages. */
export function fromMainThread(b: DataBundle): DataBundle {
  return mapFiles(b, (f) => (f.asset !== undefined ? { ...f, bytes: readAssetInPlace(f.asset)! } : f));
}


function overridable(dataDir: string, name: string, asset: string): DataFile {
  const p = join(dataDir, name);
  return existsSync(p) ? fromPath(name, p) : fromAsset(name, asset);
}

export function loadBundle(cfg: Pick<Config, 'dataDir' | 'mmdbCountry' | 'mmdbAsn' | 'mmdbAnonymousIp'>): DataBundle {
  const dd = cfg.dataDir;
  const asnMmdb = cfg.mmdbAsn ? fromPath('asn.mmdb', cfg.mmdbAsn) : null;
  const sellers = new Map<string, DataFile>();
  for (const asset of listAssets(EMBEDDED.sellersDir)) {
    if (asset.endsWith('.json')) {
      const name = asset.slice(EMBEDDED.sellersDir.length);
      sellers.set(name, fromAsset(name, asset));
    }
  }
  const sellersDir = join(dd, 'sellers');
  if (existsSync(sellersDir)) {
    for (const f of readdirSync(sellersDir)) {
      if (f.endsWith('.json')) sellers.set(f, fromPath(f, join(sellersDir, f)));
    }
  }
  return {
    asnBin: asnMmdb ? null : overridable(dd, 'asn.bin', EMBEDDED.asnBin),
    asnMmdb,
    countryMmdb: cfg.mmdbCountry ? fromPath('country.mmdb', cfg.mmdbCountry) : overridable(dd, 'country.mmdb', EMBEDDED.countryMmdb),
    anonymousIpMmdb: cfg.mmdbAnonymousIp ? fromPath('anonymous-ip.mmdb', cfg.mmdbAnonymousIp) : null,
    hostingAsns: overridable(dd, 'hosting-asns.txt', EMBEDDED.hostingAsns),
    vpnAsns: overridable(dd, 'vpn-asns.txt', EMBEDDED.vpnAsns),
    hostingOrgPatterns: overridable(dd, 'hosting-org-patterns.txt', EMBEDDED.hostingOrgPatterns),
    badIfas: overridable(dd, 'bad-ifas.txt', EMBEDDED.badIfas),
    sellers: [...sellers.values()],
    loadedAt: new Date().toISOString(),
  };
}

/** One line per file for the startup log. */
export function describeBundle(b: DataBundle): Array<{ name: string; source: string; bytes: number; modified: string | null }> {
  const files = [b.asnBin, b.asnMmdb, b.countryMmdb, b.anonymousIpMmdb, b.hostingAsns, b.vpnAsns, b.hostingOrgPatterns, b.badIfas];
  const out = files.filter((f): f is DataFile => f !== null).map((f) => ({ name: f.name, source: f.source, bytes: f.bytes.byteLength, modified: f.modified }));
  if (b.sellers.length) {
    out.push({ name: 'sellers', source: b.sellers.map((s) => s.source).join(', '), bytes: b.sellers.reduce((n, s) => n + s.bytes.byteLength, 0), modified: null });
  }
  return out;
}
