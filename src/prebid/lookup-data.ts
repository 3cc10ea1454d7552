// Builds the in-memory lookup structures from a data bundle. Runs on the main thread
// first (so a bad file is refused before any lookup thread sees it) and then on each
// lookup thread. The file bytes are SharedArrayBuffers: the ASN table and the MaxMind
// readers are views on them, so every thread reads the same bytes; only the small lists
// are parsed per thread. The published IP ranges, the ads.txt index and the sellers index
// were compiled once on the main thread into shared arrays: each thread only wraps them.
import type { DataBundle, DataFile } from './thread-bundle.ts';
import { IfaList } from '../signals/ifa.ts';
import { loadIpIntel, type IpIntel } from '../signals/ip-intel.ts';
import { SellersRegistry } from '../signals/sellers.ts';
import { openMmdb, verifyMmdb } from '../signals/mmdb.ts';
import { AsnTable } from '../signals/asn-table.ts';
import { AsnList } from '../signals/asn-list.ts';
import { parseOrgPatterns } from '../signals/org-patterns.ts';
import { IpRanges } from '../signals/ip-ranges.ts';
import { BotServices } from '../signals/bot-services.ts';
import { ServiceRanges } from '../signals/service-ranges.ts';
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
  /**
   * The published crawler and uptime-monitor services, each with its UA patterns and its own
   * ranges (src/signals/bot-services.ts): a declared bot naming one is judged by them.
   */
  bots: BotServices;
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

/**
 * The main thread's check of every IP data file on its own, before anything is built from
 * them: an error names the file that is bad (its path, or the embedded asset), and each MMDB
 * is verified whole (tree and data section), not only probed, so a subtly corrupt file is
 * refused at start or reload instead of failing lookups later.
 */
function verifyIpFiles(b: DataBundle): void {
  const mmdbs: Array<[DataFile | null, string]> = [
    [b.asnMmdb, 'ASN MMDB'],
    [b.countryMmdb, 'country MMDB'],
    [b.anonymousIpMmdb, 'anonymous-IP MMDB'],
  ];
  for (const [f, label] of mmdbs) if (f) step(f, () => verifyMmdb(openMmdb(f.bytes, label), f.bytes, label));
  if (b.asnBin) {
    const asnBin = b.asnBin;
    step(asnBin, () => AsnTable.fromBytes(asnBin.bytes));
  }
  step(b.hostingAsns, () => AsnList.parse(text(b.hostingAsns), b.hostingAsns.name));
  step(b.vpnAsns, () => AsnList.parse(text(b.vpnAsns), b.vpnAsns.name));
  step(b.hostingOrgPatterns, () => parseOrgPatterns(text(b.hostingOrgPatterns), b.hostingOrgPatterns.name));
}

/**
 * Throws DataBuildError naming the file when a file is unusable. `verify` (the main thread,
 * which builds first) checks each file whole on its own first; the lookup threads then build
 * from the same bytes without repeating it.
 */
export function buildLookupData(b: DataBundle, generation: number, opts: { verify?: boolean } = {}): BuiltData {
  const warnings: string[] = [];
  if (opts.verify) verifyIpFiles(b);
  const ranges = IpRanges.fromCompiled(b.ipRanges.compiled);
  const bots = step(null, () => new BotServices(b.bots.specs, ServiceRanges.fromCompiled(b.bots.compiled)));
  const ip = step(null, () =>
    loadIpIntel({
      ...(b.asnBin ? { asnBin: b.asnBin.bytes } : {}),
      ...(b.asnMmdb ? { asnMmdb: b.asnMmdb.bytes } : {}),
      ...(b.anonymousIpMmdb ? { anonymousIpMmdb: b.anonymousIpMmdb.bytes } : {}),
      countryMmdb: b.countryMmdb.bytes,
      hostingAsns: text(b.hostingAsns),
      vpnAsns: text(b.vpnAsns),
      hostingOrgPatterns: text(b.hostingOrgPatterns),
      ranges,
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
  return { data: { ip, sellers: registry, badIfas, aiAgents, adsTxt, bots, generation }, warnings };
}
