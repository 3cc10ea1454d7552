// The data bundle: what it holds, and its way to a lookup thread and in it: shared bytes
// travel as they are, embedded files by name, and the thread reads those again from the
// executable's own pages. Apart from loading (bundle.ts), so a lookup thread loads nothing
// of the loader.
import { readAssetInPlace } from '../runtime/assets.ts';
import type { AdsTxtBuildStats } from '../signals/ads-txt-build.ts';
import type { CompiledAdsTxt } from '../signals/ads-txt.ts';
import type { CompiledRanges } from '../signals/ip-ranges.ts';
import type { BotListsBundle } from '../signals/bot-services.ts';

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

/** A file that was read and built into a structure here (its bytes are not kept). */
export interface DataFileInfo {
  name: string;
  source: string;
  bytes: number;
  modified: string | null;
  /** Entries it contributed (ranges, records). */
  entries: number;
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
  /** AI-agent tokens (data/ai-agents.txt, or <data-dir>/ai-agents.txt): src/signals/crawlers.ts. */
  aiAgents: DataFile;
  sellers: DataFile[];
  /**
   * Published IP ranges (<data-dir>/ranges/*.txt: cloud providers, Tor exits, VPN lists,
   * iCloud Private Relay), built here once into shared arrays: IpRanges.fromCompiled().
   */
  ipRanges: { compiled: CompiledRanges; files: DataFileInfo[] };
  /**
   * The published crawler and uptime-monitor lists (src/data/bot-lists.ts): each service's
   * patterns and its ranges, compiled here into shared arrays: ServiceRanges.fromCompiled().
   */
  bots: BotListsBundle;
  /**
   * ads.txt / app-ads.txt authorisation (<data-dir>/ads-txt/, the sellers files and
   * <data-dir>/app-developers.txt), built here into shared arrays: AdsTxtIndex.fromCompiled().
   */
  adsTxt: { compiled: CompiledAdsTxt; stats: AdsTxtBuildStats; source: string };
  /** Problems that did not stop the load (a skipped line or file), one sentence each. */
  warnings: string[];
  /** The sellers files compiled once by the main thread (shared memory); threads use it instead of the files. */
  sellersIndex?: Uint8Array;
  loadedAt: string;
}

const NO_BYTES = new Uint8Array(0);

function mapFiles(b: DataBundle, f: (file: DataFile) => DataFile): DataBundle {
  const one = (x: DataFile | null) => (x === null ? null : f(x));
  return {
    ...b,
    asnBin: one(b.asnBin), asnMmdb: one(b.asnMmdb), countryMmdb: f(b.countryMmdb), anonymousIpMmdb: one(b.anonymousIpMmdb),
    hostingAsns: f(b.hostingAsns), vpnAsns: f(b.vpnAsns), hostingOrgPatterns: f(b.hostingOrgPatterns), badIfas: f(b.badIfas), aiAgents: f(b.aiAgents),
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
