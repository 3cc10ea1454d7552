// Builds the AdsTxtIndex arrays (ads-txt.ts) from crawled ads.txt / app-ads.txt files,
// the exchanges' sellers.json files and the operator's app → developer-domain list. Runs on
// the main thread at start and on every reload; lookup threads only wrap the result.
//
// The relationship of a DIRECT line is judged against the selling system's sellers.json
// (IAB ads.txt 1.1 with sellers.json 1.0):
//   seller_type PUBLISHER or BOTH whose domain is the file's owner → owner
//     (OWNERDOMAIN, or when absent the root domain the file was found on);
//   seller domain listed as MANAGERDOMAIN (any seller_type)        → manager;
//   INTERMEDIARY, or BOTH for another owner while OWNERDOMAIN is declared
//                                                                  → direct_not_publisher
//     (a reseller presented as the publisher: suspect);
//   anything else, or no sellers.json record                       → direct.
// RESELLER lines are authorised resellers whatever sellers.json says.
import { getDomain } from 'tldts';
import {
  HOST_STATUS,
  KIND,
  PAIR,
  appKeyHash,
  hostKeyHash,
  isDomainName,
  pairHash,
  sellerKeyHash,
  parseAdsTxt,
  type CompiledAdsTxt,
  type ParsedAdsTxt,
} from './ads-txt.ts';
import { withoutBom } from '../base/text.ts';

export type AdsTxtKind = keyof typeof KIND;
export type AdsTxtFileStatus = 'ok' | 'no_file' | 'unavailable';

export interface AdsTxtFileInput {
  kind: AdsTxtKind;
  /** The host the file speaks for: a root domain, or a SUBDOMAIN it declared. */
  host: string;
  status: AdsTxtFileStatus;
  /** The file's text when status is ok. */
  text?: string;
}

export interface AdsTxtBuildStats {
  files: number;
  ok: number;
  noSellerAuthorized: number;
  noFile: number;
  unavailable: number;
  records: number;
  pairs: number;
  sellerKeys: number;
  apps: number;
  malformedLines: number;
  truncatedFiles: number;
  /** Files not loaded because the index was full (maxRecords). */
  overCap: number;
  bytes: number;
}

export interface AdsTxtBuild {
  compiled: CompiledAdsTxt;
  stats: AdsTxtBuildStats;
  warnings: string[];
}

/** Root domain (public suffix + 1, private suffixes included, as ads.txt crawlers use). */
export function rootDomain(host: string): string | null {
  const d = getDomain(host, { allowPrivateDomains: true, validateHostname: true });
  return d && isDomainName(d) ? d : null;
}

/** Lines of app-developers.txt: `<app bundle ID> <developer domain or URL>`. */
export function parseAppDevelopers(text: string, fileName: string, warnings: string[]): Map<string, string> {
  const out = new Map<string, string>();
  let bad = 0;
  let lineNo = 0;
  for (const raw of text.split('\n')) {
    lineNo++;
    if (lineNo > 2_000_000) break;
    const hash = raw.indexOf('#');
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    if (line === '' || line.length > 600) {
      if (line !== '') bad++;
      continue;
    }
    const parts = line.split(/[\s,]+/);
    const app = parts[0]!;
    let dev = (parts[1] ?? '').toLowerCase();
    if (parts.length !== 2 || app.length > 256) {
      bad++;
      continue;
    }
    // Store listings give a developer website URL: its host's root domain is where app-ads.txt lives.
    if (dev.includes('/')) {
      try {
        dev = new URL(dev.includes('://') ? dev : `https://${dev}`).hostname;
      } catch {
        bad++;
        continue;
      }
    }
    const root = rootDomain(dev);
    if (root === null) {
      bad++;
      continue;
    }
    out.set(app, root);
  }
  if (bad > 0) warnings.push(`${fileName}: ${bad} lines skipped (expected "<app bundle ID> <developer domain>")`);
  return out;
}

interface SellerFacts {
  type: string;
  domain: string | null;
}

/** sellers.json records (type and root domain) of the accounts we need, by "system\naccount". */
function sellerFacts(
  sellers: ReadonlyArray<{ name: string; text: () => string }>,
  wanted: Map<string, Set<string>>,
  warnings: string[],
): Map<string, SellerFacts> {
  const out = new Map<string, SellerFacts>();
  for (const f of sellers) {
    const base = f.name.slice(f.name.lastIndexOf('/') + 1).toLowerCase();
    if (!base.endsWith('.json')) continue;
    const system = base.slice(0, -5);
    const accounts = wanted.get(system);
    if (!accounts) continue;
    let doc: unknown;
    try {
      const text = f.text();
      doc = JSON.parse(withoutBom(text));
    } catch (e) {
      warnings.push(`sellers/${base}: not JSON (${(e as Error).message}); DIRECT lines for ${system} are not checked`);
      continue;
    }
    const list = (doc as { sellers?: unknown } | null)?.sellers;
    if (!Array.isArray(list)) continue;
    for (const s of list) {
      if (s === null || typeof s !== 'object') continue;
      const e = s as { seller_id?: unknown; seller_type?: unknown; domain?: unknown };
      const id = typeof e.seller_id === 'number' ? String(e.seller_id) : typeof e.seller_id === 'string' ? e.seller_id.trim().toLowerCase() : '';
      if (id === '' || !accounts.has(id)) continue;
      const type = typeof e.seller_type === 'string' ? e.seller_type.trim().toUpperCase() : '';
      const domain = typeof e.domain === 'string' && e.domain.length < 300 ? rootDomain(e.domain.trim().toLowerCase()) : null;
      out.set(`${system}\n${id}`, { type, domain });
    }
  }
  return out;
}

function directCode(facts: SellerFacts | undefined, owner: string, explicitOwner: boolean, managers: string[]): number {
  if (!facts) return PAIR.direct;
  const d = facts.domain;
  if (d !== null && managers.includes(d)) return PAIR.manager;
  switch (facts.type) {
    case 'PUBLISHER':
      return d === owner ? PAIR.owner : PAIR.direct;
    case 'BOTH':
      if (d === owner) return PAIR.owner;
      return d !== null && explicitOwner ? PAIR.directNotPublisher : PAIR.direct;
    case 'INTERMEDIARY':
      return PAIR.directNotPublisher;
    default:
      return PAIR.direct;
  }
}

function slotsFor(n: number): number {
  let size = 8;
  while (size < n * 2) size *= 2;
  return size;
}

/** Open addressing, linear probing: entry `index` (stored + 1, 0 = empty) at its hash's first free slot. */
function placeInSlots(slots: Int32Array, hash: number, index: number): void {
  const mask = slots.length - 1;
  let i = hash & mask;
  while (slots[i] !== 0) i = (i + 1) & mask;
  slots[i] = index + 1;
}

function typed<T extends Int32Array | Uint32Array | Uint16Array | Uint8Array>(
  Kind: { new (b: ArrayBufferLike): T; BYTES_PER_ELEMENT: number },
  values: ArrayLike<number> | number,
  shared: boolean,
): T {
  const n = typeof values === 'number' ? values : values.length;
  const bytes = n * Kind.BYTES_PER_ELEMENT;
  const out = new Kind(shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
  if (typeof values !== 'number') out.set(values);
  return out;
}

/** Strings go to one pool; offsets are assigned as they are added. */
class StringPool {
  private readonly strings: string[] = [];
  private length = 0;

  add(s: string): number {
    const off = this.length;
    this.strings.push(s);
    this.length += s.length;
    return off;
  }

  /** The pool's UTF-16 code units. */
  toArray(shared: boolean): Uint16Array {
    const out = typed(Uint16Array, this.length, shared);
    let at = 0;
    for (const s of this.strings) {
      for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
      at += s.length;
    }
    return out;
  }
}

interface HostEntry {
  kind: number;
  host: string;
  status: number;
  parsed: ParsedAdsTxt | null;
}

/** The files' hosts, each once (`hostIndex`: `${kind}:${host}` → its index). */
interface Hosts {
  hosts: HostEntry[];
  hostIndex: Map<string, number>;
}

/** The seller keys ("system", "account") and each host's pairs: host → seller key → PAIR code. */
interface Pairs {
  sellerKeys: Array<{ system: string; account: string }>;
  pairIndex: Map<number, Map<number, number>>;
}

type Apps = Array<{ app: string; host: number }>;

function emptyBuildStats(): AdsTxtBuildStats {
  return {
    files: 0, ok: 0, noSellerAuthorized: 0, noFile: 0, unavailable: 0, records: 0, pairs: 0, sellerKeys: 0, apps: 0,
    malformedLines: 0, truncatedFiles: 0, overCap: 0, bytes: 0,
  };
}

/** Builds the lookup arrays. Never throws on file contents: bad lines and files become warnings. */
export function buildAdsTxtIndex(input: {
  files: ReadonlyArray<AdsTxtFileInput>;
  /** sellers.json files named `<system domain>.json`; text is read only for systems that need it. */
  sellers?: ReadonlyArray<{ name: string; text: () => string }>;
  /** Contents of app-developers.txt, if any. */
  appDevelopers?: { text: string; name: string } | null;
  shared?: boolean;
  /**
   * Records loaded at most, over all files (the memory budget's share): a file that would
   * pass it is not loaded and its sellers answer unknown. Files earlier in `files` win.
   */
  maxRecords?: number;
}): AdsTxtBuild {
  const shared = input.shared ?? false;
  const warnings: string[] = [];
  const stats = emptyBuildStats();
  const hosts = readHosts(input.files, input.maxRecords ?? Infinity, stats, warnings);
  const pairs = sellerPairs(hosts.hosts, input.sellers ?? [], stats, warnings);
  const apps = appHosts(input.appDevelopers, hosts.hostIndex, warnings);
  stats.apps = apps.length;

  // The arrays, their strings pooled in this order: hosts, seller keys, apps.
  const pool = new StringPool();
  const hostPart = hostArrays(hosts, pool, stats, shared);
  const sellerPart = sellerArrays(pairs.sellerKeys, pool, stats, shared);
  const pairPart = pairArrays(pairs.pairIndex, stats, shared);
  const appPart = appArrays(apps, pool, shared);
  const compiled: CompiledAdsTxt = { pool: pool.toArray(shared), ...hostPart, ...sellerPart, ...pairPart, ...appPart };
  stats.bytes = Object.values(compiled).reduce((n, a: ArrayBufferView) => n + a.byteLength, 0);
  return { compiled, stats, warnings };
}

/**
 * Each file's host once (the first file of a kind and host wins), its text parsed: its
 * status, and its records unless the index is full (`maxRecords`: then unknown).
 */
function readHosts(files: ReadonlyArray<AdsTxtFileInput>, maxRecords: number, stats: AdsTxtBuildStats, warnings: string[]): Hosts {
  const hostIndex = new Map<string, number>(); // `${kind}:${host}`
  const hosts: HostEntry[] = [];
  let loaded = 0;
  let overCap = 0;
  for (const f of files) {
    const host = f.host.toLowerCase();
    if (!isDomainName(host)) {
      warnings.push(`ads.txt: "${f.host.slice(0, 80)}" is not a host name; skipped`);
      continue;
    }
    const key = `${f.kind}:${host}`;
    if (hostIndex.has(key)) continue;
    let status: number = f.status === 'ok' ? HOST_STATUS.ok : f.status === 'no_file' ? HOST_STATUS.noFile : HOST_STATUS.unavailable;
    let parsed: ParsedAdsTxt | null = null;
    if (status === HOST_STATUS.ok) {
      parsed = parseAdsTxt(f.text ?? '');
      status = parsedStatus(parsed, f.kind, host, stats, warnings);
    }
    if (parsed !== null && parsed.records.length > 0) {
      if (loaded + parsed.records.length > maxRecords) {
        overCap++;
        status = HOST_STATUS.unavailable;
        parsed = null;
      } else {
        loaded += parsed.records.length;
      }
    }
    hostIndex.set(key, hosts.length);
    hosts.push({ kind: KIND[f.kind], host, status, parsed });
  }
  stats.files = hosts.length;
  stats.overCap = overCap;
  if (overCap > 0) {
    warnings.push(`ads.txt index full at ${loaded} records (its share of --memory-budget holds ${maxRecords}): ${overCap} files not loaded, their sellers answer unknown; raise --memory-budget or lower adsTxt.fromTraffic`);
  }
  return { hosts, hostIndex };
}

/** The status of a file found (ok), from what it holds; its malformed lines and truncation counted. */
function parsedStatus(parsed: ParsedAdsTxt, kind: AdsTxtKind, host: string, stats: AdsTxtBuildStats, warnings: string[]): number {
  stats.malformedLines += parsed.malformed;
  if (parsed.truncated) {
    stats.truncatedFiles++;
    warnings.push(`${kind === 'app' ? 'app-ads.txt' : 'ads.txt'} of ${host}: longer than ${parsed.records.length} records; the rest is ignored`);
  }
  if (parsed.records.length > 0) return HOST_STATUS.ok;
  // Only the placeholder line: the publisher authorises no seller. A file without any
  // valid line is no statement at all (the spec deprecates empty files): unknown.
  if (parsed.placeholder) return HOST_STATUS.noSellerAuthorized;
  warnings.push(`${kind === 'app' ? 'app-ads.txt' : 'ads.txt'} of ${host}: no valid record; treated as unknown`);
  return HOST_STATUS.unavailable;
}

/** Seller keys and pairs. DIRECT lines wait for the sellers.json facts (sellerFacts, directCode). */
function sellerPairs(hosts: HostEntry[], sellers: ReadonlyArray<{ name: string; text: () => string }>, stats: AdsTxtBuildStats, warnings: string[]): Pairs {
  const sellerIndex = new Map<string, Map<string, number>>(); // system -> account -> key
  const sellerKeys: Array<{ system: string; account: string }> = [];
  const pairIndex = new Map<number, Map<number, number>>(); // host -> seller -> code
  const pendingDirect: Array<{ h: number; k: number }> = [];
  const wanted = new Map<string, Set<string>>();
  hosts.forEach((hs, h) => {
    if (!hs.parsed) return;
    const codes = new Map<number, number>();
    pairIndex.set(h, codes);
    for (const r of hs.parsed.records) {
      const account = r.account.toLowerCase();
      let bySystem = sellerIndex.get(r.system);
      if (!bySystem) sellerIndex.set(r.system, (bySystem = new Map()));
      let k = bySystem.get(account);
      if (k === undefined) {
        k = sellerKeys.length;
        bySystem.set(account, k);
        sellerKeys.push({ system: r.system, account });
      }
      stats.records++;
      if (r.relationship === 'RESELLER') {
        const prev = codes.get(k);
        if (prev === undefined || prev > PAIR.reseller) codes.set(k, PAIR.reseller);
      } else {
        pendingDirect.push({ h, k });
        let set = wanted.get(r.system);
        if (!set) wanted.set(r.system, (set = new Set()));
        set.add(account);
      }
    }
  });
  const facts = sellerFacts(sellers, wanted, warnings);
  for (const { h, k } of pendingDirect) {
    const hs = hosts[h]!;
    const p = hs.parsed!;
    const owner = (p.ownerDomain && rootDomain(p.ownerDomain)) ?? rootDomain(hs.host) ?? hs.host;
    const managers = p.managerDomains.map((m) => rootDomain(m) ?? m);
    const sk = sellerKeys[k]!;
    const code = directCode(facts.get(`${sk.system}\n${sk.account}`), owner, p.ownerDomain !== null, managers);
    const codes = pairIndex.get(h)!;
    const prev = codes.get(k);
    if (prev === undefined || code < prev) codes.set(k, code);
  }
  return { sellerKeys, pairIndex };
}

/** The apps of app-developers.txt, each with its developer's app-ads.txt host (-1: none crawled). */
function appHosts(appDevelopers: { text: string; name: string } | null | undefined, hostIndex: Map<string, number>, warnings: string[]): Apps {
  const apps: Apps = [];
  if (appDevelopers) {
    const map = parseAppDevelopers(appDevelopers.text, appDevelopers.name, warnings);
    for (const [app, dev] of map) apps.push({ app, host: hostIndex.get(`app:${dev}`) ?? -1 });
  }
  return apps;
}

/** The hosts' arrays: names, kinds, statuses (counted in `stats`), inventory partners, slots. */
function hostArrays({ hosts, hostIndex }: Hosts, pool: StringPool, stats: AdsTxtBuildStats, shared: boolean) {
  const nh = hosts.length;
  const hostOff = new Uint32Array(nh);
  const hostLen = new Uint16Array(nh);
  const hostKind = new Uint8Array(nh);
  const hostStatus = new Uint8Array(nh);
  const partnerStart = new Uint32Array(nh + 1);
  const partners: number[] = [];
  const hostSlots = new Int32Array(slotsFor(nh));
  hosts.forEach((hs, h) => {
    hostOff[h] = pool.add(hs.host);
    hostLen[h] = hs.host.length;
    hostKind[h] = hs.kind;
    hostStatus[h] = hs.status;
    if (hs.status === HOST_STATUS.ok) stats.ok++;
    else if (hs.status === HOST_STATUS.noSellerAuthorized) stats.noSellerAuthorized++;
    else if (hs.status === HOST_STATUS.noFile) stats.noFile++;
    else stats.unavailable++;
    partnerStart[h] = partners.length;
    const kindName = hs.kind === KIND.app ? 'app' : 'site';
    for (const d of hs.parsed?.inventoryPartners ?? []) {
      const p = hostIndex.get(`${kindName}:${d}`) ?? hostIndex.get(`${kindName}:${rootDomain(d) ?? d}`);
      if (p !== undefined && p !== h) partners.push(p);
    }
    placeInSlots(hostSlots, hostKeyHash(hs.kind, hs.host, 0, hs.host.length), h);
  });
  partnerStart[nh] = partners.length;
  return {
    hostSlots: typed(Int32Array, hostSlots, shared),
    hostOff: typed(Uint32Array, hostOff, shared),
    hostLen: typed(Uint16Array, hostLen, shared),
    hostKind: typed(Uint8Array, hostKind, shared),
    hostStatus: typed(Uint8Array, hostStatus, shared),
    partnerStart: typed(Uint32Array, partnerStart, shared),
    partners: typed(Int32Array, partners, shared),
  };
}

/** The seller keys' arrays: system and account (pooled one after the other) and slots. */
function sellerArrays(sellerKeys: Pairs['sellerKeys'], pool: StringPool, stats: AdsTxtBuildStats, shared: boolean) {
  const ns = sellerKeys.length;
  const sellerOff = new Uint32Array(ns);
  const sellerSysLen = new Uint16Array(ns);
  const sellerAccLen = new Uint16Array(ns);
  const sellerSlots = new Int32Array(slotsFor(ns));
  sellerKeys.forEach((sk, k) => {
    sellerOff[k] = pool.add(sk.system);
    pool.add(sk.account);
    sellerSysLen[k] = sk.system.length;
    sellerAccLen[k] = sk.account.length;
    placeInSlots(sellerSlots, sellerKeyHash(sk.system, 0, sk.system.length, sk.account, 0, sk.account.length), k);
  });
  stats.sellerKeys = ns;
  return {
    sellerSlots: typed(Int32Array, sellerSlots, shared),
    sellerOff: typed(Uint32Array, sellerOff, shared),
    sellerSysLen: typed(Uint16Array, sellerSysLen, shared),
    sellerAccLen: typed(Uint16Array, sellerAccLen, shared),
  };
}

/** The pairs' arrays: host, seller key and code of each, and slots. */
function pairArrays(pairIndex: Pairs['pairIndex'], stats: AdsTxtBuildStats, shared: boolean) {
  let np = 0;
  for (const codes of pairIndex.values()) np += codes.size;
  const pairHost = new Int32Array(np);
  const pairSeller = new Int32Array(np);
  const pairCode = new Uint8Array(np);
  const pairSlots = new Int32Array(slotsFor(np));
  let p = 0;
  for (const [h, codes] of pairIndex) {
    for (const [k, code] of codes) {
      pairHost[p] = h;
      pairSeller[p] = k;
      pairCode[p] = code;
      placeInSlots(pairSlots, pairHash(h, k), p);
      p++;
    }
  }
  stats.pairs = np;
  return {
    pairSlots: typed(Int32Array, pairSlots, shared),
    pairHost: typed(Int32Array, pairHost, shared),
    pairSeller: typed(Int32Array, pairSeller, shared),
    pairCode: typed(Uint8Array, pairCode, shared),
  };
}

/** The apps' arrays: bundle IDs, their developer's host, and slots. */
function appArrays(apps: Apps, pool: StringPool, shared: boolean) {
  const na = apps.length;
  const appOff = new Uint32Array(na);
  const appLen = new Uint16Array(na);
  const appHost = new Int32Array(na);
  const appSlots = new Int32Array(slotsFor(na));
  apps.forEach((a, j) => {
    appOff[j] = pool.add(a.app);
    appLen[j] = a.app.length;
    appHost[j] = a.host;
    placeInSlots(appSlots, appKeyHash(a.app), j);
  });
  return {
    appSlots: typed(Int32Array, appSlots, shared),
    appOff: typed(Uint32Array, appOff, shared),
    appLen: typed(Uint16Array, appLen, shared),
    appHost: typed(Int32Array, appHost, shared),
  };
}
