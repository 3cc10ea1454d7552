// The sources file (`--data-sources`, default <data-dir>/sources.json): which published
// lists `ivtd data update` and `serve --data-refresh` fetch, and how the sellers.json and
// ads.txt crawls behave. Documented in docs/data-sources.md ("Refreshing the data"). Every mistake is
// reported with the key that holds it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAY_MS, HOUR_MS, parseDuration } from '../base/time.ts';
import { RANGE_CATEGORIES, isRangeCategory, type RangeCategory } from '../signals/ip-ranges.ts';
import { isDomainName } from '../signals/ads-txt.ts';
import { FORMAT_CATEGORY, RANGE_FORMATS, type RangeFilter, type RangeFormat } from './range-formats.ts';
import { shownUrl } from './shown-url.ts';
import { withoutBom } from '../base/text.ts';
import { DOCUMENT_LIMITS, jsonFault, type JsonValue } from '../base/bounded-json.ts';
import { BOT_LISTS, isBotList, serviceSlug, type BotListName } from '../signals/bot-services.ts';

export const SOURCES_FILE = 'sources.json';

export class SourcesError extends Error {
  override name = 'SourcesError';
}

export interface RangeSource {
  kind: 'ranges';
  name: string;
  format: RangeFormat;
  url: string;
  category: RangeCategory;
  filter: RangeFilter;
  maxBytes: number;
  /** Minimum time between fetches under `serve --data-refresh`; null = every pass. */
  everyMs: number | null;
  /** A new list with fewer than this share of the previous entries is refused as truncated. */
  minKeep: number;
  /**
   * crawler-ipranges: the crawler service whose ranges these are (its slug, as `ivtd data
   * status` lists the services): they replace that service's ranges in the published lists.
   * Unset: the service whose list names this URL as its source, if any (src/data/refresh.ts).
   */
  service?: string;
}

export type MmdbTarget = 'country.mmdb' | 'asn.mmdb' | 'anonymous-ip.mmdb';

export interface MaxmindSource {
  kind: 'maxmind';
  name: string;
  edition: string;
  url: string;
  /** The URL without credentials or query values (shownUrl), for logs and status. */
  displayUrl: string;
  headers: Record<string, string>;
  target: MmdbTarget;
  maxBytes: number;
  everyMs: number | null;
  minKeep: number;
}

/** ai.robots.txt's robots.json: written to <data-dir>/ai-agents.txt (src/signals/crawlers.ts). */
export interface AgentsSource {
  kind: 'agents';
  name: string;
  format: 'ai-robots-json';
  url: string;
  maxBytes: number;
  everyMs: number | null;
  minKeep: number;
}

/** A bot-ip-blocks list (crawlers.json or monitoring.json): written to <data-dir>/bot-ip-blocks/<list>.json (src/data/bot-lists.ts). */
export interface BotsSource {
  kind: 'bots';
  name: string;
  format: 'bot-ip-blocks';
  url: string;
  list: BotListName;
  maxBytes: number;
  everyMs: number | null;
  minKeep: number;
}

export type Source = RangeSource | MaxmindSource | AgentsSource | BotsSource;

export interface SellersCrawl {
  /** sellers.json of these advertising-system domains is fetched. */
  domains: string[];
  /** Also fetch it for up to this many `asi`/`sid` domains seen in traffic (0 = off). */
  fromTraffic: number;
  everyMs: number;
  maxBytes: number;
  /** `{domain}` is replaced by the domain. */
  urlTemplate: string;
}

export interface AdsTxtCrawl {
  enabled: boolean;
  /** Site domains always crawled (ads.txt). */
  domains: string[];
  /** Developer domains always crawled (app-ads.txt). */
  appDomains: string[];
  /** Root domains seen in traffic kept for crawling (0 = only the listed ones). */
  fromTraffic: number;
  /** A crawled file is re-fetched after this long (the ads.txt spec's default is 7 days). */
  expiryMs: number;
  /** After a failed re-fetch the last good copy is still used for this long past its expiry. */
  staleMs: number;
  /** A domain not seen in traffic for this long is forgotten (its file deleted). */
  forgetMs: number;
  maxBytes: number;
  schemes: Array<'https' | 'http'>;
  /** Requests per second across all hosts, and at once. */
  rate: number;
  concurrency: number;
}

export interface SourcesConfig {
  /** Where the config came from, or null when no file exists. */
  path: string | null;
  /** Appended to the User-Agent `ivtd/<version> (+data refresh)`; e.g. a contact URL. */
  contact: string | null;
  timeoutMs: number;
  sources: Source[];
  sellers: SellersCrawl;
  adsTxt: AdsTxtCrawl;
}

export const DEFAULTS = Object.freeze({
  rangeMaxBytes: 64 * 1024 * 1024,
  maxmindMaxBytes: 512 * 1024 * 1024,
  minKeep: 0.5,
  timeoutMs: 120_000,
  sellersEveryMs: DAY_MS,
  sellersMaxBytes: 128 * 1024 * 1024,
  sellersUrl: 'https://{domain}/sellers.json',
  adsTxtFromTraffic: 2000,
  adsTxtExpiryMs: 7 * DAY_MS,
  adsTxtStaleMs: 7 * DAY_MS,
  adsTxtForgetMs: 30 * DAY_MS,
  adsTxtMaxBytes: 2 * 1024 * 1024,
  adsTxtRate: 2,
  adsTxtConcurrency: 4,
});

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

class Reader {
  constructor(readonly file: string) {}
  fail(key: string, msg: string): never {
    throw new SourcesError(`${this.file}: ${key}: ${msg}`);
  }
  keys(o: Obj, at: string, allowed: string[]): void {
    for (const k of Object.keys(o)) if (!allowed.includes(k)) this.fail(`${at}.${k}`, `unknown key (known: ${allowed.join(', ')})`);
  }
  str(o: Obj, k: string, at: string, required: true): string;
  str(o: Obj, k: string, at: string, required?: false): string | undefined;
  str(o: Obj, k: string, at: string, required = false): string | undefined {
    const v = o[k];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v.trim() === '') this.fail(`${at}.${k}`, 'must be a non-empty string');
    return v.trim();
  }
  int(o: Obj, k: string, at: string, def: number, min: number, max: number): number {
    const v = o[k];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) this.fail(`${at}.${k}`, `must be a whole number from ${min} to ${max}`);
    return v;
  }
  num(o: Obj, k: string, at: string, def: number, min: number, max: number): number {
    const v = o[k];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) this.fail(`${at}.${k}`, `must be a number from ${min} to ${max}`);
    return v;
  }
  duration(o: Obj, k: string, at: string, def: number | null, minMs: number): number | null {
    const v = o[k];
    if (v === undefined) return def;
    const ms = typeof v === 'string' ? parseDuration(v) : null;
    if (ms === null || ms < minMs) this.fail(`${at}.${k}`, `must be a duration such as "30m", "6h" or "7d" (at least ${minMs / 1000} s)`);
    return ms;
  }
  url(o: Obj, k: string, at: string, required: boolean): string | undefined {
    const v = required ? this.str(o, k, at, true) : this.str(o, k, at);
    if (v === undefined) return undefined;
    let u: URL;
    try {
      u = new URL(v.replace('{domain}', 'example.com'));
    } catch {
      this.fail(`${at}.${k}`, `"${shownUrl(v)}" is not a URL`);
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') this.fail(`${at}.${k}`, 'must be an http(s) URL');
    // The fetch does not send them (nor should it: the URL is shown in status and logs).
    if (u.username !== '' || u.password !== '') {
      this.fail(`${at}.${k}`, 'holds a user or password (user:password@): credentials in URLs are not supported and are never sent');
    }
    return v;
  }
  domains(o: Obj, k: string, at: string): string[] {
    const v = o[k];
    if (v === undefined) return [];
    if (!Array.isArray(v)) this.fail(`${at}.${k}`, 'must be an array of domain names');
    return v.map((d, i) => {
      const s = typeof d === 'string' ? d.trim().toLowerCase() : '';
      if (!isDomainName(s)) this.fail(`${at}.${k}[${i}]`, `"${String(d).slice(0, 80)}" is not a domain name`);
      // sellers.json, ads.txt and app-ads.txt are published under a host name. One whose last
      // label is a number (decimal, or 0x hex) is an IPv4 address to the URL parser: 127.0.0.1,
      // but also 127.1 or 0x7f.1, all of which would be fetched from that address.
      if (/^(\d+|0x[0-9a-f]*)$/.test(s.slice(s.lastIndexOf('.') + 1))) this.fail(`${at}.${k}[${i}]`, `"${s}" is an IP address: a domain must be a host name`);
      return s;
    });
  }
  strings(o: Obj, k: string, at: string): string[] | undefined {
    const v = o[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'string' && x !== '')) this.fail(`${at}.${k}`, 'must be a non-empty array of strings');
    return v as string[];
  }
}

/** Credentials for MaxMind downloads: the sources file's `maxmind` object, else the options. */
export interface MaxmindCredentials {
  accountId?: string | undefined;
  licenseKey?: string | undefined;
}

function mmdbTarget(edition: string): MmdbTarget | null {
  if (/-(Country|City)$/.test(edition)) return 'country.mmdb';
  if (/-(ASN|ISP)$/.test(edition)) return 'asn.mmdb';
  if (/-Anonymous-IP$/.test(edition)) return 'anonymous-ip.mmdb';
  return null;
}

function maxmindSource(r: Reader, o: Obj, at: string, name: string, creds: MaxmindCredentials, everyMs: number | null, minKeep: number): MaxmindSource {
  r.keys(o, at, ['name', 'format', 'edition', 'url', 'every', 'maxBytes', 'minKeep', 'target']);
  const edition = r.str(o, 'edition', at, true);
  if (!/^[A-Za-z0-9-]{1,64}$/.test(edition)) r.fail(`${at}.edition`, `"${edition}" is not a MaxMind edition ID such as GeoLite2-ASN`);
  const explicit = r.str(o, 'target', at);
  if (explicit !== undefined && !['country.mmdb', 'asn.mmdb', 'anonymous-ip.mmdb'].includes(explicit)) {
    r.fail(`${at}.target`, 'must be country.mmdb, asn.mmdb or anonymous-ip.mmdb');
  }
  const target = (explicit as MmdbTarget | undefined) ?? mmdbTarget(edition);
  if (!target) r.fail(`${at}.edition`, `cannot tell what ${edition} holds; add "target": "country.mmdb" | "asn.mmdb" | "anonymous-ip.mmdb"`);
  const custom = r.url(o, 'url', at, false);
  const headers: Record<string, string> = {};
  let url: string;
  if (creds.accountId && creds.licenseKey) {
    url = custom ?? `https://download.maxmind.com/geoip/databases/${edition}/download?suffix=tar.gz`;
    headers.Authorization = `Basic ${Buffer.from(`${creds.accountId}:${creds.licenseKey}`).toString('base64')}`;
  } else if (creds.licenseKey) {
    const key = encodeURIComponent(creds.licenseKey);
    url = custom ?? `https://download.maxmind.com/app/geoip_download?edition_id=${edition}&license_key=${key}&suffix=tar.gz`;
  } else if (custom) {
    url = custom;
  } else {
    r.fail(at, 'a MaxMind source needs a licence key: set IVTD_MAXMIND_LICENSE_KEY (and IVTD_MAXMIND_ACCOUNT_ID), or "maxmind": {"accountId", "licenseKey"} in this file');
  }
  // A mirror may take the key in a parameter of its own: every query value is hidden.
  const displayUrl = shownUrl(url, { hideQuery: true });
  return {
    kind: 'maxmind', name, edition, url, displayUrl, headers, target,
    maxBytes: r.int(o, 'maxBytes', at, DEFAULTS.maxmindMaxBytes, 1024, 4 * 1024 * 1024 * 1024),
    everyMs, minKeep,
  };
}

/** Longest `contact`: the whole User-Agent stays far below any server's header limit. */
const CONTACT_MAX = 256;

/**
 * `contact` is sent in the User-Agent header, as part of its comment `(+data refresh; …)`.
 * Node refuses a header holding a line break or a character past Latin-1, and a server
 * answers 431 to a very long one: such a value would fail every fetch, so it is refused
 * here. An unpaired parenthesis or a backslash would end or escape the comment early.
 */
function contactOf(r: Reader, doc: Obj): string | null {
  const v = r.str(doc, 'contact', '$');
  if (v === undefined) return null;
  if (v.length > CONTACT_MAX || !/^[\x20-\x7e]*$/.test(v)) {
    r.fail('$.contact', `must be printable ASCII, at most ${CONTACT_MAX} characters (it goes in the User-Agent header)`);
  }
  let depth = 0;
  for (const c of v) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) break;
  }
  if (depth !== 0 || v.includes('\\')) {
    r.fail('$.contact', 'its parentheses must pair up and it may not hold a backslash (it is a comment in the User-Agent header)');
  }
  return v;
}

/** Parses the sources file's text. */
export function parseSources(text: string, file: string, creds: MaxmindCredentials = {}): SourcesConfig {
  const r: Reader = new Reader(file);
  let doc: unknown;
  const json = withoutBom(text);
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new SourcesError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
  if (!isObj(doc)) throw new SourcesError(`${file} must hold a JSON object`);
  // JSON.parse keeps the last of a key written twice: an edit made to the first would be ignored.
  const fault = jsonFault(json, doc as JsonValue, DOCUMENT_LIMITS);
  if (fault !== null) throw new SourcesError(`${file}: ${fault}`);
  r.keys(doc, '$', ['contact', 'timeout', 'maxmind', 'sources', 'sellers', 'adsTxt']);
  let mm: MaxmindCredentials = creds;
  if (doc.maxmind !== undefined) {
    if (!isObj(doc.maxmind)) r.fail('maxmind', 'must be an object {"accountId", "licenseKey"}');
    r.keys(doc.maxmind, 'maxmind', ['accountId', 'licenseKey']);
    mm = { accountId: r.str(doc.maxmind, 'accountId', 'maxmind') ?? creds.accountId, licenseKey: r.str(doc.maxmind, 'licenseKey', 'maxmind') ?? creds.licenseKey };
  }

  const sources: Source[] = [];
  const list = doc.sources ?? [];
  if (!Array.isArray(list)) r.fail('sources', 'must be an array');
  const names = new Set<string>();
  list.forEach((s, i) => {
    const at = `sources[${i}]`;
    if (!isObj(s)) r.fail(at, 'must be an object');
    const name = r.str(s, 'name', at, true);
    if (!NAME.test(name)) r.fail(`${at}.name`, `"${name}" must be lowercase letters, digits, ".", "_" or "-" (it names the file ranges/<name>.txt)`);
    if (names.has(name)) r.fail(`${at}.name`, `"${name}" is used twice`);
    names.add(name);
    const format = r.str(s, 'format', at, true);
    const everyMs = r.duration(s, 'every', at, null, 60_000);
    const minKeep = r.num(s, 'minKeep', at, DEFAULTS.minKeep, 0, 1);
    if (format === 'maxmind') {
      sources.push(maxmindSource(r, s, at, name, mm, everyMs, minKeep));
      return;
    }
    if (format === 'ai-robots-json') {
      r.keys(s, at, ['name', 'format', 'url', 'every', 'maxBytes', 'minKeep']);
      if (sources.some((x) => x.kind === 'agents')) r.fail(`${at}.format`, 'only one ai-robots-json source: it writes ai-agents.txt');
      sources.push({ kind: 'agents', name, format: 'ai-robots-json', url: r.url(s, 'url', at, true)!, maxBytes: r.int(s, 'maxBytes', at, DEFAULTS.rangeMaxBytes, 1024, 64 * 1024 * 1024), everyMs, minKeep });
      return;
    }
    if (format === 'bot-ip-blocks') {
      r.keys(s, at, ['name', 'format', 'url', 'list', 'every', 'maxBytes', 'minKeep']);
      const url = r.url(s, 'url', at, true)!;
      // The list is named, or the file's own name says it (crawlers.json, monitoring.json).
      const stem = /\/([a-z]+)\.json(?:[?#].*)?$/.exec(url)?.[1] ?? '';
      const list = r.str(s, 'list', at) ?? (isBotList(stem) ? stem : undefined);
      if (list === undefined) r.fail(`${at}.list`, `the URL's file name does not say which list it is: add "list": ${BOT_LISTS.map((l) => `"${l}"`).join(' or ')}`);
      if (!isBotList(list)) r.fail(`${at}.list`, `"${list}" is not one of ${BOT_LISTS.join(', ')}`);
      if (sources.some((x) => x.kind === 'bots' && x.list === list)) r.fail(`${at}.list`, `only one bot-ip-blocks source per list: another already writes bot-ip-blocks/${list}.json`);
      sources.push({ kind: 'bots', name, format: 'bot-ip-blocks', url, list, maxBytes: r.int(s, 'maxBytes', at, DEFAULTS.rangeMaxBytes, 1024, 64 * 1024 * 1024), everyMs, minKeep });
      return;
    }
    if (!(RANGE_FORMATS as readonly string[]).includes(format)) r.fail(`${at}.format`, `"${format}" is not one of ${[...RANGE_FORMATS, 'bot-ip-blocks', 'maxmind', 'ai-robots-json'].join(', ')}`);
    const fmt = format as RangeFormat;
    r.keys(s, at, ['name', 'format', 'url', 'category', 'every', 'maxBytes', 'minKeep', 'services', 'tags', 'service']);
    const cat = r.str(s, 'category', at)?.toLowerCase() ?? FORMAT_CATEGORY[fmt];
    if (cat === null) r.fail(`${at}.category`, `a ${fmt} source needs a category: ${RANGE_CATEGORIES.join(', ')}`);
    if (!isRangeCategory(cat)) r.fail(`${at}.category`, `"${cat}" is not one of ${RANGE_CATEGORIES.join(', ')}`);
    const filter: RangeFilter = {};
    const services = r.strings(s, 'services', at);
    const tags = r.strings(s, 'tags', at);
    if (services) {
      if (fmt !== 'aws-ip-ranges') r.fail(`${at}.services`, 'only applies to aws-ip-ranges');
      filter.services = services;
    }
    if (tags) {
      if (fmt !== 'azure-service-tags') r.fail(`${at}.tags`, 'only applies to azure-service-tags');
      filter.tags = tags;
    }
    const service = r.str(s, 'service', at);
    if (service !== undefined) {
      if (cat !== 'crawler') r.fail(`${at}.service`, 'only crawler ranges name a service');
      if (serviceSlug(service) === '') r.fail(`${at}.service`, `"${service.slice(0, 60)}" is not a service name`);
    }
    sources.push({
      kind: 'ranges', name, format: fmt, url: r.url(s, 'url', at, true)!, category: cat, filter,
      maxBytes: r.int(s, 'maxBytes', at, DEFAULTS.rangeMaxBytes, 1024, 1024 * 1024 * 1024),
      everyMs, minKeep, ...(service !== undefined ? { service: serviceSlug(service) } : {}),
    });
  });

  const sl: Obj = doc.sellers === undefined ? {} : isObj(doc.sellers) ? doc.sellers : r.fail('sellers', 'must be an object');
  r.keys(sl, 'sellers', ['domains', 'fromTraffic', 'every', 'maxBytes', 'url']);
  const sellers: SellersCrawl = {
    domains: r.domains(sl, 'domains', 'sellers'),
    fromTraffic: r.int(sl, 'fromTraffic', 'sellers', 0, 0, 100_000),
    everyMs: r.duration(sl, 'every', 'sellers', DEFAULTS.sellersEveryMs, HOUR_MS)!,
    maxBytes: r.int(sl, 'maxBytes', 'sellers', DEFAULTS.sellersMaxBytes, 1024, 1024 * 1024 * 1024),
    urlTemplate: r.url(sl, 'url', 'sellers', false) ?? DEFAULTS.sellersUrl,
  };
  if (!sellers.urlTemplate.includes('{domain}')) r.fail('sellers.url', 'must contain {domain}');

  const ad: Obj | null = doc.adsTxt === undefined ? null : isObj(doc.adsTxt) ? doc.adsTxt : r.fail('adsTxt', 'must be an object');
  const a: Obj = ad ?? {};
  r.keys(a, 'adsTxt', ['domains', 'appDomains', 'fromTraffic', 'expiry', 'stale', 'forget', 'maxBytes', 'schemes', 'rate', 'concurrency']);
  const schemes = r.strings(a, 'schemes', 'adsTxt') ?? ['https', 'http'];
  for (const s of schemes) if (s !== 'https' && s !== 'http') r.fail('adsTxt.schemes', 'may hold only "https" and "http"');
  const adsTxt: AdsTxtCrawl = {
    enabled: ad !== null,
    domains: r.domains(a, 'domains', 'adsTxt'),
    appDomains: r.domains(a, 'appDomains', 'adsTxt'),
    fromTraffic: r.int(a, 'fromTraffic', 'adsTxt', DEFAULTS.adsTxtFromTraffic, 0, 200_000),
    expiryMs: r.duration(a, 'expiry', 'adsTxt', DEFAULTS.adsTxtExpiryMs, HOUR_MS)!,
    staleMs: r.duration(a, 'stale', 'adsTxt', DEFAULTS.adsTxtStaleMs, 0)!,
    forgetMs: r.duration(a, 'forget', 'adsTxt', DEFAULTS.adsTxtForgetMs, DAY_MS)!,
    maxBytes: r.int(a, 'maxBytes', 'adsTxt', DEFAULTS.adsTxtMaxBytes, 1024, 64 * 1024 * 1024),
    schemes: schemes as Array<'https' | 'http'>,
    rate: r.num(a, 'rate', 'adsTxt', DEFAULTS.adsTxtRate, 0.01, 100),
    concurrency: r.int(a, 'concurrency', 'adsTxt', DEFAULTS.adsTxtConcurrency, 1, 32),
  };

  return {
    path: file,
    contact: contactOf(r, doc),
    timeoutMs: r.duration(doc, 'timeout', '$', DEFAULTS.timeoutMs, 1000)!,
    sources,
    sellers,
    adsTxt,
  };
}

/** Reads the sources file: the given path (must exist), else <data-dir>/sources.json when present. */
export function loadSources(opts: { dataDir: string; path?: string | undefined; maxmind?: MaxmindCredentials }): SourcesConfig {
  const path = opts.path ?? join(opts.dataDir, SOURCES_FILE);
  if (!existsSync(path)) {
    if (opts.path) throw new SourcesError(`sources file ${path} does not exist (see docs/data-sources.md, "Refreshing the data")`);
    return { ...parseSources('{}', path, opts.maxmind), path: null };
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new SourcesError(`cannot read sources file ${path}: ${(e as Error).message}`);
  }
  return parseSources(text, path, opts.maxmind);
}
