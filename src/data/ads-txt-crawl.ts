// The ads.txt / app-ads.txt crawl (main thread, part of the data refresher), and the
// reading of its results for the data bundle.
//
// Which hosts: the site and developer domains listed in the sources file, plus the root
// domains seen in traffic (bounded, least recently seen forgotten first), plus SUBDOMAIN and
// INVENTORYPARTNERDOMAIN hosts those roots' files declare (a few per file; what those hosts'
// own files declare is not followed, so the crawl has at most 1 + 2 × MAX_DEPENDENTS hosts a root).
// How (IAB ads.txt 1.1): https://<root>/ads.txt first, http:// if https cannot connect;
// redirects within the root domain followed, and a single one outside it; a redirect after
// leaving the root domain is an error. 200 text/plain with at least one valid line (or the
// placeholder line) is a good copy; 404/410 means "no file" (the spec lets buyers read that
// as every seller authorised: unknown here); anything else is a failure that keeps the last
// good copy until its expiry plus the stale allowance. A good copy expires after 7 days by
// default, sooner if the server says so (never sooner than an hour).
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDomainName, parseAdsTxt } from '../signals/ads-txt.ts';
import { rootDomain, type AdsTxtFileInput, type AdsTxtKind } from '../signals/ads-txt-build.ts';
import { HOUR_MS, DAY_MS } from '../base/time.ts';
import { mtimeOf, readJson, writeAtomic } from './files.ts';
import { HttpGetError, type HttpGetOptions, type HttpGetResult } from './http-get.ts';
import type { AdsTxtCrawl } from './sources.ts';

export const ADS_TXT_DIR = 'ads-txt';
const STATE_FILE = 'state.json';
const KINDS: readonly AdsTxtKind[] = ['site', 'app'];
const FILE_NAME: Readonly<Record<AdsTxtKind, string>> = { site: 'ads.txt', app: 'app-ads.txt' };
/** Redirect hops within the root domain before giving up. */
const MAX_SAME_ROOT_REDIRECTS = 5;
/** SUBDOMAIN and INVENTORYPARTNERDOMAIN hosts followed per file. */
const MAX_DEPENDENTS = 4;
/** Files larger than this on disk (an operator's own) are not loaded. */
const MAX_LOAD_BYTES = 8 * 1024 * 1024;

export type CrawlStatus = 'new' | 'ok' | 'no_file' | 'failed';
export type CrawlOrigin = 'listed' | 'traffic' | 'subdomain' | 'partner';

export interface CrawlEntry {
  status: CrawlStatus;
  origin: CrawlOrigin;
  /** For subdomain / partner entries: the host whose file declared it. */
  parent: string | null;
  /** Last time seen in traffic (traffic origin) or listed. */
  seenAt: number;
  checkedAt: number | null;
  /** Last time a good copy was fetched or confirmed (200 or 304). */
  goodAt: number | null;
  /** The last good copy is used until then (its expiry plus the stale allowance). */
  goodUntil: number | null;
  /** Next attempt (expiry, or the retry after a failure). */
  nextAt: number;
  failures: number;
  error: string | null;
  url: string | null;
  etag: string | null;
  lastModified: string | null;
}

interface CrawlState {
  site: Record<string, CrawlEntry>;
  app: Record<string, CrawlEntry>;
}

export function adsTxtFile(dataDir: string, kind: AdsTxtKind, host: string): string {
  return join(dataDir, ADS_TXT_DIR, kind, `${host}.txt`);
}

function statePath(dataDir: string): string {
  return join(dataDir, ADS_TXT_DIR, STATE_FILE);
}

function loadState(dataDir: string): CrawlState {
  const s = readJson<Partial<CrawlState>>(statePath(dataDir), {});
  const clean = (m: unknown): Record<string, CrawlEntry> => {
    const out: Record<string, CrawlEntry> = {};
    if (m === null || typeof m !== 'object') return out;
    for (const [host, e] of Object.entries(m as Record<string, CrawlEntry>)) {
      if (isDomainName(host) && e && typeof e === 'object' && typeof e.status === 'string') out[host] = e;
    }
    return out;
  };
  return { site: clean(s.site), app: clean(s.app) };
}

/**
 * The crawled (and operator-supplied) files as build input, with each one's status as of
 * `now`. A file on disk without a state entry is the operator's and always used.
 */
export function readAdsTxtFiles(dataDir: string, now: number): { files: AdsTxtFileInput[]; warnings: string[] } {
  const state = loadState(dataDir);
  const files: AdsTxtFileInput[] = [];
  const warnings: string[] = [];
  for (const kind of KINDS) {
    const dir = join(dataDir, ADS_TXT_DIR, kind);
    const onDisk = new Set<string>();
    if (existsSync(dir)) {
      for (const f of readdirSync(dir)) {
        if (!f.endsWith('.txt')) continue;
        const host = f.slice(0, -4);
        if (isDomainName(host)) onDisk.add(host);
      }
    }
    const entries = state[kind];
    for (const host of new Set([...Object.keys(entries), ...onDisk])) {
      const e = entries[host];
      if (e?.status === 'no_file') {
        files.push({ kind, host, status: 'no_file' });
        continue;
      }
      const usable = onDisk.has(host) && (!e || e.goodUntil === null || e.goodUntil >= now);
      if (usable) {
        const path = join(dir, `${host}.txt`);
        try {
          if (statSync(path).size > MAX_LOAD_BYTES) {
            warnings.push(`${path}: larger than ${MAX_LOAD_BYTES} bytes; not loaded`);
            continue;
          }
          files.push({ kind, host, status: 'ok', text: readFileSync(path, 'utf8') });
        } catch (err) {
          warnings.push(`${path}: ${(err as Error).message}`);
        }
      } else if (e && e.status !== 'new') {
        files.push({ kind, host, status: 'unavailable' });
      }
    }
  }
  return { files, warnings };
}

/** Normalises a value seen in traffic (`dmn`, a developer domain) to its root domain, or null. */
export function rootOfSeen(value: string): string | null {
  if (value.length === 0 || value.length > 300) return null;
  let v = value.trim().toLowerCase();
  const scheme = v.indexOf('://');
  if (scheme >= 0) v = v.slice(scheme + 3);
  for (const sep of ['/', '?', '#', ':']) {
    const i = v.indexOf(sep);
    if (i >= 0) v = v.slice(0, i);
  }
  while (v.endsWith('.')) v = v.slice(0, -1);
  return isDomainName(v) ? rootDomain(v) : null;
}

export type Fetch = (opts: Omit<HttpGetOptions, 'userAgent'>) => Promise<HttpGetResult>;

export interface CrawlResult {
  crawled: number;
  changed: number;
  failed: number;
}

function emptyEntry(origin: CrawlOrigin, parent: string | null, now: number): CrawlEntry {
  return {
    status: 'new', origin, parent, seenAt: now, checkedAt: null, goodAt: null, goodUntil: null, nextAt: 0, failures: 0,
    error: null, url: null, etag: null, lastModified: null,
  };
}

class CrawlFailure extends Error {}

export class AdsTxtCrawler {
  private state: CrawlState;
  /** Traffic-origin hosts, least recently seen first ("kind:host"). */
  private readonly recency = new Map<string, true>();

  private stateMtime: number;

  constructor(
    private readonly dataDir: string,
    private readonly cfg: AdsTxtCrawl,
    private readonly fetch: Fetch,
    private readonly now: () => number,
  ) {
    this.stateMtime = mtimeOf(statePath(dataDir));
    this.state = loadState(dataDir);
    this.indexState();
  }

  private indexState(): void {
    const traffic: Array<[string, number]> = [];
    for (const kind of KINDS) {
      for (const [host, e] of Object.entries(this.state[kind])) if (e.origin === 'traffic') traffic.push([`${kind}:${host}`, e.seenAt]);
    }
    traffic.sort((a, b) => a[1] - b[1]);
    this.recency.clear();
    for (const [k] of traffic) this.recency.set(k, true);
    this.syncListed();
  }

  /**
   * Re-reads the state when another process (`ivtd data update`) wrote it since; hosts seen
   * in traffic meanwhile and not in the file are kept.
   */
  syncFromDisk(): void {
    const m = mtimeOf(statePath(this.dataDir));
    if (m === this.stateMtime) return;
    const disk = loadState(this.dataDir);
    for (const kind of KINDS) {
      for (const [host, e] of Object.entries(this.state[kind])) if (!disk[kind][host] && e.origin === 'traffic') disk[kind][host] = e;
    }
    this.state = disk;
    this.stateMtime = m;
    this.indexState();
  }

  /** Makes the listed domains present (and listed-origin entries no longer listed traffic ones). */
  private syncListed(): void {
    const now = this.now();
    const listed: Record<AdsTxtKind, string[]> = { site: this.cfg.domains, app: this.cfg.appDomains };
    for (const kind of KINDS) {
      const want = new Set(listed[kind]);
      for (const host of want) {
        const e = this.state[kind][host];
        if (!e) this.state[kind][host] = emptyEntry('listed', null, now);
        else if (e.origin !== 'listed') {
          this.recency.delete(`${kind}:${host}`);
          e.origin = 'listed';
        }
      }
      for (const [host, e] of Object.entries(this.state[kind])) {
        if (e.origin === 'listed' && !want.has(host)) {
          e.origin = 'traffic';
          e.seenAt = now;
          this.recency.set(`${kind}:${host}`, true);
        }
      }
    }
  }

  /** Records root domains seen in traffic; new ones are crawled soon, the oldest beyond the cap forgotten. */
  noteSeen(kind: AdsTxtKind, roots: Iterable<string>): void {
    if (!this.cfg.enabled || this.cfg.fromTraffic === 0) return;
    const now = this.now();
    for (const host of roots) {
      const e = this.state[kind][host];
      const key = `${kind}:${host}`;
      if (e) {
        e.seenAt = now;
        if (e.origin === 'traffic') {
          this.recency.delete(key);
          this.recency.set(key, true);
        }
        continue;
      }
      this.state[kind][host] = emptyEntry('traffic', null, now);
      this.recency.set(key, true);
      while (this.recency.size > this.cfg.fromTraffic) {
        const oldest = this.recency.keys().next().value as string;
        const [k, h] = oldest.split(':') as [AdsTxtKind, string];
        this.remove(k, h);
      }
    }
  }

  /** Deletes a host, its file and the hosts it declared. */
  private remove(kind: AdsTxtKind, host: string): void {
    delete this.state[kind][host];
    this.recency.delete(`${kind}:${host}`);
    rmSync(adsTxtFile(this.dataDir, kind, host), { force: true });
    for (const [h, e] of Object.entries(this.state[kind])) if (e.parent === host) this.remove(kind, h);
  }

  /** Forgets traffic hosts not seen for `forgetMs`. Returns how many were dropped. */
  forgetUnseen(): number {
    const cutoff = this.now() - this.cfg.forgetMs;
    let n = 0;
    for (const kind of KINDS) {
      for (const [host, e] of Object.entries(this.state[kind])) {
        if (e.origin === 'traffic' && e.seenAt < cutoff && this.state[kind][host]) {
          this.remove(kind, host);
          n++;
        }
      }
    }
    return n;
  }

  /** Hosts whose next attempt is due, earliest first. */
  due(limit: number): Array<{ kind: AdsTxtKind; host: string }> {
    const now = this.now();
    const out: Array<{ kind: AdsTxtKind; host: string; at: number }> = [];
    for (const kind of KINDS) for (const [host, e] of Object.entries(this.state[kind])) if (e.nextAt <= now) out.push({ kind, host, at: e.nextAt });
    out.sort((a, b) => a.at - b.at);
    return out.slice(0, limit).map(({ kind, host }) => ({ kind, host }));
  }

  counts(): Record<AdsTxtKind, Record<CrawlStatus, number>> {
    const out = { site: { new: 0, ok: 0, no_file: 0, failed: 0 }, app: { new: 0, ok: 0, no_file: 0, failed: 0 } };
    for (const kind of KINDS) for (const e of Object.values(this.state[kind])) out[kind][e.status]++;
    return out;
  }

  /** Oldest good copy still in use (epoch ms), for the age metric; null when none. */
  oldestGood(): number | null {
    let oldest: number | null = null;
    for (const kind of KINDS) {
      for (const e of Object.values(this.state[kind])) if (e.goodAt !== null && (oldest === null || e.goodAt < oldest)) oldest = e.goodAt;
    }
    return oldest;
  }

  save(): void {
    writeAtomic(statePath(this.dataDir), JSON.stringify(this.state));
    this.stateMtime = mtimeOf(statePath(this.dataDir));
  }

  /** One host: fetch, judge, store. Returns true when what lookups would see changed. */
  async crawl(kind: AdsTxtKind, host: string, signal?: AbortSignal): Promise<{ changed: boolean; failed: boolean }> {
    const e = this.state[kind][host];
    if (!e) return { changed: false, failed: false };
    const now = this.now();
    e.checkedAt = now;
    const path = adsTxtFile(this.dataDir, kind, host);
    const hadFile = existsSync(path);
    const before = e.status;
    try {
      const r = await this.fetchFollowing(kind, host, e, hadFile, signal);
      if (r.kind === 'not-modified') {
        this.good(e, r.url, r.etag ?? e.etag, r.lastModified ?? e.lastModified, r.expiresAt);
        return { changed: before !== 'ok', failed: false };
      }
      if (r.kind === 'status' && (r.status === 404 || r.status === 410)) {
        if (hadFile) rmSync(path, { force: true });
        Object.assign(e, { status: 'no_file', goodAt: null, goodUntil: null, failures: 0, error: null, etag: null, lastModified: null, url: r.url });
        e.nextAt = now + this.cfg.expiryMs;
        return { changed: before !== 'no_file' || hadFile, failed: false };
      }
      if (r.kind === 'status') throw new CrawlFailure(`HTTP ${r.status} from ${r.url}`);
      if (r.kind === 'redirect') throw new CrawlFailure(`redirect loop or chain from ${r.url}`);
      const ct = r.contentType.toLowerCase();
      if (ct.includes('html') || ct.includes('json') || ct.includes('xml')) throw new CrawlFailure(`served as ${ct.slice(0, 60)}, not text/plain (an error page?)`);
      if (r.body.subarray(0, 4096).includes(0)) throw new CrawlFailure('binary content, not text');
      const text = r.body.toString('utf8');
      const parsed = parseAdsTxt(text);
      if (parsed.records.length === 0 && !parsed.placeholder) throw new CrawlFailure('no valid ads.txt line (an empty file or an error page)');
      const same = hadFile && readFileSync(path).equals(r.body);
      if (!same) writeAtomic(path, r.body);
      this.good(e, r.url, r.etag, r.lastModified, r.expiresAt);
      // Only a root's own file (listed, or seen in traffic) declares hosts to follow (ads.txt
      // 1.1: SUBDOMAIN from the root domain's file; an inventory partner's file is read, not
      // followed further). A dependent's declarations are ignored (and any kept from before
      // dropped): otherwise a host declaring SUBDOMAIN=s1.itself, whose s1 declares s2… grows
      // the crawl without end and crowds out the re-crawls that are due.
      const root = e.origin === 'listed' || e.origin === 'traffic';
      if (kind === 'site') this.addDependents(kind, host, root ? parsed.subdomains.filter((s) => s.endsWith(`.${host}`)) : [], 'subdomain');
      this.addDependents(kind, host, root ? parsed.inventoryPartners.map((p) => rootDomain(p) ?? p) : [], 'partner');
      return { changed: !same || before !== 'ok', failed: false };
    } catch (err) {
      if (err instanceof HttpGetError && err.reason === 'aborted') throw err;
      e.status = 'failed';
      e.failures++;
      e.error = (err as Error).message.slice(0, 300);
      // Back off: 1 h, 2 h, 4 h … up to a day, but never later than the normal expiry.
      e.nextAt = now + Math.min(HOUR_MS * 2 ** Math.min(e.failures - 1, 10), DAY_MS, this.cfg.expiryMs);
      return { changed: false, failed: true };
    }
  }

  private good(e: CrawlEntry, url: string, etag: string | null, lastModified: string | null, serverExpiry: number | null): void {
    const now = this.now();
    const expiry = Math.min(this.cfg.expiryMs, Math.max(HOUR_MS, (serverExpiry ?? Infinity) - now));
    Object.assign(e, {
      status: 'ok', goodAt: now, goodUntil: now + expiry + this.cfg.staleMs, nextAt: now + expiry, failures: 0, error: null, url, etag, lastModified,
    });
  }

  /** Keeps the hosts a file declares (up to MAX_DEPENDENTS) and drops those it no longer declares. */
  private addDependents(kind: AdsTxtKind, parent: string, hosts: string[], origin: CrawlOrigin): void {
    const now = this.now();
    const declared = new Set(hosts.filter((h) => h !== parent && isDomainName(h)).slice(0, MAX_DEPENDENTS));
    for (const [h, e] of Object.entries(this.state[kind])) {
      if (e.parent === parent && e.origin === origin && !declared.has(h)) this.remove(kind, h);
    }
    for (const h of declared) if (!this.state[kind][h]) this.state[kind][h] = emptyEntry(origin, parent, now);
  }

  /** GET following the ads.txt redirect rules; network failures on https fall back to http. */
  private async fetchFollowing(kind: AdsTxtKind, host: string, e: CrawlEntry, hadFile: boolean, signal?: AbortSignal): Promise<HttpGetResult> {
    let lastError: Error | null = null;
    for (const scheme of this.cfg.schemes) {
      try {
        return await this.follow(`${scheme}://${host}/${FILE_NAME[kind]}`, host, e, hadFile, signal);
      } catch (err) {
        // Only a connection that could not be made moves on to the next scheme.
        if (!(err instanceof HttpGetError) || err.reason !== 'network') throw err;
        lastError = err;
      }
    }
    throw lastError ?? new CrawlFailure('no scheme to try');
  }

  private async follow(start: string, host: string, e: CrawlEntry, hadFile: boolean, signal?: AbortSignal): Promise<HttpGetResult> {
    const root = rootDomain(host) ?? host;
    let url = start;
    let leftRoot = false;
    for (let hops = 0; ; hops++) {
      const conditional = hadFile && e.url === url;
      const r = await this.fetch({
        url,
        accept: 'text/plain',
        maxBytes: this.cfg.maxBytes,
        etag: conditional ? e.etag : null,
        lastModified: conditional ? e.lastModified : null,
        maxRedirects: 0,
        // Hosts come from bid requests: never let one point the crawl at an internal address.
        publicOnly: true,
        ...(signal ? { signal } : {}),
      });
      if (r.kind !== 'redirect') return r;
      if (leftRoot) throw new CrawlFailure(`a second redirect after leaving ${root} (to ${r.location.slice(0, 200)}): only one hop outside the root domain is allowed`);
      if (hops >= MAX_SAME_ROOT_REDIRECTS) throw new CrawlFailure(`more than ${MAX_SAME_ROOT_REDIRECTS} redirects from ${start}`);
      let next: URL;
      try {
        next = new URL(r.location);
      } catch {
        throw new CrawlFailure(`redirect to a bad URL from ${r.url}`);
      }
      if (rootDomain(next.hostname) !== root) leftRoot = true;
      url = next.href;
    }
  }
}
