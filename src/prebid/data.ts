// Builds the in-memory lookup structures from a data bundle. Runs on the main thread
// first (so a bad file is refused before any lookup thread sees it) and then on each
// lookup thread. The file bytes are SharedArrayBuffers: the ASN table and the MaxMind
// readers are views on them, so every thread reads the same bytes; only the small lists
// are parsed per thread. The published IP ranges, the ads.txt index and the sellers index
// were compiled once on the main thread into shared arrays: each thread only wraps them.
import type { DataBundle, DataFile } from '../data/bundle.ts';
import { IfaList } from '../signals/ifa.ts';
import { loadIpIntel, type IpIntel } from '../signals/ip-intel.ts';
import { SellersRegistry } from '../signals/sellers.ts';
import { IpRanges } from '../signals/ip-ranges.ts';
import { AdsTxtIndex } from '../signals/ads-txt.ts';
import { AiAgentList } from '../signals/crawlers.ts';

const text = (f: DataFile): string => Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.byteLength).toString('utf8');

/** Everything a lookup reads that comes from data files; swapped whole on reload. */
export interface LookupData {
  ip: IpIntel;
  sellers: SellersRegistry;
  badIfas: IfaList;
  /** AI-agent tokens: a declared bot naming one is an AI agent (src/signals/crawlers.ts). */
  aiAgents: AiAgentList;
  /** ads.txt / app-ads.txt authorisation of the seller (the crawl's result, compiled on the main thread). */
  adsTxt: AdsTxtIndex;
  /** Which load this is (the main thread numbers them); shared caches key on it. */
  generation: number;
}

export interface BuiltData {
  data: LookupData;
  /** Problems that did not stop the load (e.g. a sellers file skipped), one sentence each. */
  warnings: string[];
}

export class DataBuildError extends Error {}

function step<T>(file: DataFile | null, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw new DataBuildError(`${file ? `${file.name} (${file.source})` : 'data'}: ${(e as Error).message}`);
  }
}

/** Throws DataBuildError naming the file when a file is unusable. */
export function buildLookupData(b: DataBundle, generation: number): BuiltData {
  const warnings: string[] = [];
  const ip = step(b.asnBin ?? b.asnMmdb ?? b.countryMmdb, () =>
    loadIpIntel({
      ...(b.asnBin ? { asnBin: b.asnBin.bytes } : {}),
      ...(b.asnMmdb ? { asnMmdb: b.asnMmdb.bytes } : {}),
      ...(b.anonymousIpMmdb ? { anonymousIpMmdb: b.anonymousIpMmdb.bytes } : {}),
      countryMmdb: b.countryMmdb.bytes,
      hostingAsns: text(b.hostingAsns),
      vpnAsns: text(b.vpnAsns),
      hostingOrgPatterns: text(b.hostingOrgPatterns),
      ranges: IpRanges.fromCompiled(b.ipRanges.compiled),
    }),
  );
  const adsTxt = step(null, () => AdsTxtIndex.fromCompiled(b.adsTxt.compiled));
  const badIfas = step(b.badIfas, () => IfaList.parse(text(b.badIfas), b.badIfas.source));
  const aiAgents = step(b.aiAgents, () => AiAgentList.parse(text(b.aiAgents), b.aiAgents.name));
  let registry: SellersRegistry;
  if (b.sellersIndex !== undefined) {
    // A lookup thread: the main thread parsed the files and compiled the index once.
    registry = SellersRegistry.fromIndex(b.sellersIndex);
  } else {
    const parsed = SellersRegistry.fromFiles(b.sellers.map((f) => ({ name: f.name, text: text(f) })));
    registry = parsed.registry;
    for (const e of parsed.errors) warnings.push(`sellers: ${e}`);
  }
  return { data: { ip, sellers: registry, badIfas, aiAgents, adsTxt, generation }, warnings };
}
