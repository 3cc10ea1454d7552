// Finds and reads every data file a lookup needs, on the main thread, so that no thread
// holds a copy of its own: a file from disk is read once into shared memory; inside the
// binary an embedded file is not copied at all (each thread reads the executable's own
// pages, see thread-bundle.ts). Precedence per file: an explicit flag (--mmdb-*) >
// a file of the same name in <data-dir> > the embedded default.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS, type Config } from '../base/config.ts';
import { planMemory } from '../memory/budget.ts';
import { listAssets, readAsset, readAssetInPlace } from '../runtime/assets.ts';
import { RangeSetBuilder, addRangeList } from '../signals/ip-ranges.ts';
import { loadBotLists, type ServiceOverrides } from './bot-lists.ts';
import { BotListError } from '../signals/bot-services.ts';
import { buildAdsTxtIndex } from '../signals/ads-txt-build.ts';
import { ADS_TXT_DIR, readAdsTxtFiles } from './ads-txt-crawl.ts';
import type { DataBundle, DataFile, DataFileInfo } from '../prebid/thread-bundle.ts';

// The bundle's shape lives with its way to the threads (thread-bundle.ts), below the loader.
export type { DataBundle, DataFile, DataFileInfo };

/** Embedded asset names (repo-relative paths, also the SEA asset keys). */
export const EMBEDDED = {
  asnBin: 'data/generated/asn.bin',
  asnMeta: 'data/generated/asn.meta.json',
  countryMmdb: 'mmdb/country.mmdb',
  hostingAsns: 'data/hosting-asns.txt',
  vpnAsns: 'data/vpn-asns.txt',
  hostingOrgPatterns: 'data/hosting-org-patterns.txt',
  badIfas: 'data/bad-ifas.txt',
  aiAgents: 'data/ai-agents.txt',
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

function overridable(dataDir: string, name: string, asset: string): DataFile {
  const p = join(dataDir, name);
  return existsSync(p) ? fromPath(name, p) : fromAsset(name, asset);
}

/** Optional file: the flag's path, else <data-dir>/<name> when present, else null. */
function optional(dataDir: string, name: string, flag: string | undefined): DataFile | null {
  if (flag) return fromPath(name, flag);
  const p = join(dataDir, name);
  return existsSync(p) ? fromPath(name, p) : null;
}

const text = (f: DataFile): string => Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.byteLength).toString('utf8');

/**
 * Every <data-dir>/ranges/*.txt, in name order, into one shared range set; lines that name a
 * crawler service (`<cidr> crawler <service>`) into `overrides`, which replace that service's
 * ranges in the published lists (bot-lists.ts).
 */
function loadRanges(dataDir: string, overrides: ServiceOverrides): DataBundle['ipRanges'] {
  const dir = join(dataDir, 'ranges');
  const builder = new RangeSetBuilder();
  const files: DataFileInfo[] = [];
  if (existsSync(dir)) {
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.txt')).sort()) {
      const path = join(dir, f);
      let body: string;
      let modified: string;
      try {
        const st = statSync(path);
        if (!st.isFile()) continue;
        modified = st.mtime.toISOString();
        body = readFileSync(path, 'utf8');
      } catch (e) {
        throw new DataLoadError(`cannot read ranges/${f}: ${(e as Error).message}`);
      }
      let entries: number;
      const name = `ranges/${f}`;
      try {
        entries = addRangeList(builder, body, name, undefined, (cidr, service) => {
          let o = overrides.get(service);
          if (!o) overrides.set(service, (o = { cidrs: [], files: [] }));
          o.cidrs.push(cidr);
          if (!o.files.includes(name)) o.files.push(name);
        });
      } catch (e) {
        throw new DataLoadError(`${(e as Error).message} (${path}; fix or delete the file)`);
      }
      files.push({ name, source: path, bytes: Buffer.byteLength(body), modified, entries });
    }
  }
  return { compiled: builder.build({ shared: true }), files };
}

function loadBots(dataDir: string, overrides: ServiceOverrides, warnings: string[]): DataBundle['bots'] {
  try {
    return loadBotLists(dataDir, overrides, warnings);
  } catch (e) {
    if (e instanceof BotListError) throw new DataLoadError(e.message);
    throw e;
  }
}

function loadAdsTxt(dataDir: string, sellers: DataFile[], warnings: string[], maxRecords: number): DataBundle['adsTxt'] {
  const { files, warnings: readWarnings } = readAdsTxtFiles(dataDir, Date.now());
  const appDevelopers = optional(dataDir, 'app-developers.txt', undefined);
  const built = buildAdsTxtIndex({
    files,
    sellers: sellers.map((f) => ({ name: f.name, text: () => text(f) })),
    appDevelopers: appDevelopers ? { name: appDevelopers.source, text: text(appDevelopers) } : null,
    shared: true,
    maxRecords,
  });
  warnings.push(...readWarnings, ...built.warnings);
  return { compiled: built.compiled, stats: built.stats, source: join(dataDir, ADS_TXT_DIR) };
}

export function loadBundle(cfg: Pick<Config, 'dataDir' | 'mmdbCountry' | 'mmdbAsn' | 'mmdbAnonymousIp'> & Partial<Pick<Config, 'memoryBudget' | 'threads' | 'filters'>>): DataBundle {
  const dd = cfg.dataDir;
  // A flag names a file; otherwise a MaxMind download in the data dir (ivtd data update) is used.
  const asnMmdb = optional(dd, 'asn.mmdb', cfg.mmdbAsn);
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
  const sellerFiles = [...sellers.values()];
  const warnings: string[] = [];
  const overrides: ServiceOverrides = new Map();
  const ipRanges = loadRanges(dd, overrides);
  return {
    asnBin: asnMmdb ? null : overridable(dd, 'asn.bin', EMBEDDED.asnBin),
    asnMmdb,
    countryMmdb: cfg.mmdbCountry ? fromPath('country.mmdb', cfg.mmdbCountry) : overridable(dd, 'country.mmdb', EMBEDDED.countryMmdb),
    anonymousIpMmdb: optional(dd, 'anonymous-ip.mmdb', cfg.mmdbAnonymousIp),
    hostingAsns: overridable(dd, 'hosting-asns.txt', EMBEDDED.hostingAsns),
    vpnAsns: overridable(dd, 'vpn-asns.txt', EMBEDDED.vpnAsns),
    hostingOrgPatterns: overridable(dd, 'hosting-org-patterns.txt', EMBEDDED.hostingOrgPatterns),
    badIfas: overridable(dd, 'bad-ifas.txt', EMBEDDED.badIfas),
    aiAgents: overridable(dd, 'ai-agents.txt', EMBEDDED.aiAgents),
    sellers: sellerFiles,
    ipRanges,
    bots: loadBots(dd, overrides, warnings),
    // Capped by the memory budget's share (of what the heaps' floor leaves, so the threads count).
    adsTxt: loadAdsTxt(dd, sellerFiles, warnings, planMemory(cfg.memoryBudget ?? OPTIONS.memoryBudget.default, cfg.threads ?? OPTIONS.threads.default, cfg.filters?.length ?? 0).adsTxtRecords),
    warnings,
    loadedAt: new Date().toISOString(),
  };
}

/** One line per file for the startup log. */
export function describeBundle(b: DataBundle): Array<{ name: string; source: string; bytes: number; modified: string | null; [more: string]: unknown }> {
  const files = [b.asnBin, b.asnMmdb, b.countryMmdb, b.anonymousIpMmdb, b.hostingAsns, b.vpnAsns, b.hostingOrgPatterns, b.badIfas, b.aiAgents];
  const out: ReturnType<typeof describeBundle> = files
    .filter((f): f is DataFile => f !== null)
    .map((f) => ({ name: f.name, source: f.source, bytes: f.bytes.byteLength, modified: f.modified }));
  if (b.sellers.length) {
    out.push({ name: 'sellers', source: b.sellers.map((s) => s.source).join(', '), bytes: b.sellers.reduce((n, s) => n + s.bytes.byteLength, 0), modified: null });
  }
  for (const f of b.ipRanges.files) out.push({ name: f.name, source: f.source, bytes: f.bytes, modified: f.modified, entries: f.entries });
  for (const l of b.bots.lists) out.push({ name: `bot-ip-blocks/${l.list}.json`, source: l.source, bytes: l.bytes, modified: l.date, entries: l.ranges, services: l.services, licence: l.licence });
  const a = b.adsTxt.stats;
  if (a.files > 0 || a.apps > 0) {
    out.push({
      name: 'ads-txt', source: b.adsTxt.source, bytes: a.bytes, modified: null,
      files: a.files, ok: a.ok, noFile: a.noFile, unavailable: a.unavailable, noSellerAuthorized: a.noSellerAuthorized, records: a.records, apps: a.apps,
    });
  }
  return out;
}
