// The data refresher: `ivtd data update` (one pass) and `ivtd serve --data-refresh INTERVAL`
// (passes on timers). Main thread only; never on a lookup thread.
//
// For every source named in the sources file it fetches the published file with
// conditional headers and a size cap, validates it in its own format, refuses one that
// shrank suspiciously, and replaces its output file atomically; a source that fails or
// returns garbage keeps its last good output, and the reason is logged and kept for
// `ivtd data status` and /metrics. It also keeps exchanges' sellers.json files and the
// ads.txt / app-ads.txt crawl current. When any output changed it calls `onChanged` (the
// server's reload, the same path as SIGHUP), at most once a minute.
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'maxmind';
import pkg from '../../package.json' with { type: 'json' };
import { openMmdb } from '../signals/mmdb.ts';
import { formatCidr } from '../signals/ip-ranges.ts';
import { SellersRegistry } from '../signals/sellers.ts';
import { parseAppDevelopers } from '../signals/ads-txt-build.ts';
import { isDomainName } from '../signals/ads-txt.ts';
import { HOUR_MS, MINUTE_MS, SECOND_MS } from '../base/time.ts';
import { AdsTxtCrawler, rootOfSeen, type CrawlResult } from './ads-txt-crawl.ts';
import { LockBusyError, acquireLock, keepOwnerOf, mtimeOf, readJson, writeAtomic } from './files.ts';
import { HttpGetError, httpGet, type HttpGetOptions, type HttpGetResult } from './http-get.ts';
import { findServiceTagsLink, parseRangeSource } from './range-formats.ts';
import { shownUrl } from './shown-url.ts';
import { loadSources, type AgentsSource, type BotsSource, type MaxmindSource, type MmdbTarget, type RangeSource, type Source, type SourcesConfig } from './sources.ts';
import { aiAgentsFromRobotsJson } from '../signals/crawlers.ts';
import type { Config } from '../base/config.ts';
import { BotListError, parseBotList } from '../signals/bot-services.ts';
import { BOT_LISTS_DIR, loadBotLists } from './bot-lists.ts';
import { extractFromTar, gunzipLimited } from './tar.ts';
import { withoutBom } from '../base/text.ts';

export const RANGES_DIR = 'ranges';
export const SELLERS_DIR = 'sellers';
export const APP_DEVELOPERS_FILE = 'app-developers.txt';
const REFRESH_DIR = 'refresh';
const STATE_FILE = 'state.json';
const LOCK_FILE = 'lock';
/** Reloads caused by the crawl are at least this far apart. */
export const MIN_RELOAD_GAP_MS = MINUTE_MS;
/** How often the crawl of ads.txt and traffic-seen sellers.json runs between full passes. */
const CRAWL_TICK_MS = 30 * SECOND_MS;

export interface LogLike {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

const SILENT: LogLike = { info() {}, warn() {}, error() {}, debug() {} };

export type SourceKind = 'ranges' | 'maxmind' | 'agents' | 'bots' | 'sellers';

/** What is remembered per source (and per sellers.json domain) between passes. */
export interface SourceState {
  url: string;
  status: 'ok' | 'failed' | 'never';
  /** Last attempt, last success (200 or 304), last change of the output file: epoch ms. */
  attemptAt: number | null;
  successAt: number | null;
  changeAt: number | null;
  failures: number;
  error: string | null;
  /** Ranges, sellers or database bytes in the last good output. */
  entries: number | null;
  etag: string | null;
  lastModified: string | null;
  /** sellers only: listed in the sources file, or seen in traffic (and when). */
  origin?: 'listed' | 'traffic';
  seenAt?: number;
}

interface State {
  sources: Record<string, SourceState>;
  sellers: Record<string, SourceState>;
}

export type ItemResult = 'changed' | 'unchanged' | 'failed' | 'skipped';

export interface RefreshItem {
  kind: SourceKind;
  name: string;
  result: ItemResult;
  detail: string;
}

export interface RefreshReport {
  items: RefreshItem[];
  adsTxt: CrawlResult;
  /** Some output file changed (a reload was or will be requested). */
  changed: boolean;
}

/** One row per source for /metrics and `ivtd data status`. */
export interface SourceStatus {
  name: string;
  kind: SourceKind;
  url: string;
  status: SourceState['status'];
  successAt: number | null;
  attemptAt: number | null;
  changeAt: number | null;
  failures: number;
  entries: number | null;
  error: string | null;
}

export interface RefreshStatus {
  sources: SourceStatus[];
  sellers: { listed: number; fromTraffic: number; ok: number; failed: number; never: number; oldestSuccessAt: number | null };
  adsTxt: { enabled: boolean; site: Record<string, number>; app: Record<string, number>; oldestGoodAt: number | null };
}

export interface RefresherOptions {
  dataDir: string;
  sources: SourcesConfig;
  /** Output files that command-line flags replace (--mmdb-*): a refreshed copy would not be used. */
  overridden?: Partial<Record<MmdbTarget, string>>;
  /** Called after output files changed; the server reloads here. */
  onChanged?: () => Promise<unknown>;
  /** Tests: where to connect for a URL. */
  connect?: HttpGetOptions['connect'];
  now?: () => number;
  log?: LogLike;
}

class RefreshFailure extends Error {
  override name = 'RefreshFailure';
}

/** A source's URL as shown in status, logs and state.json: never a password or a MaxMind key. */
function shownSourceUrl(src: Source): string {
  return src.kind === 'maxmind' ? src.displayUrl : shownUrl(src.url);
}

function emptyState(url: string): SourceState {
  return { url, status: 'never', attemptAt: null, successAt: null, changeAt: null, failures: 0, error: null, entries: null, etag: null, lastModified: null };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}

/** Spaces request starts `1/perSecond` apart across all callers. */
class RateGate {
  private next = 0;
  constructor(private readonly perSecond: number) {}
  async wait(signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const at = Math.max(now, this.next);
    this.next = at + SECOND_MS / this.perSecond;
    if (at > now) await sleep(at - now, signal);
  }
}

const MMDB_FIELD: Record<MmdbTarget, { type: RegExp; field?: (r: Record<string, unknown>) => unknown }> = {
  'country.mmdb': { type: /country|city/i, field: (r) => r.country ?? r.country_code ?? r.registered_country },
  'asn.mmdb': { type: /asn|isp/i, field: (r) => r.autonomous_system_number },
  'anonymous-ip.mmdb': { type: /anonymous/i },
};

/** Only the sellers.json fields ivtd reads are stored (names and comments make up much of the size). */
function compactSellers(doc: Record<string, unknown>): string {
  const sellers = (doc.sellers as unknown[]).map((s) => {
    const e = (s ?? {}) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of ['seller_id', 'seller_type', 'domain', 'is_confidential', 'is_passthrough']) if (e[k] !== undefined) out[k] = e[k];
    return out;
  });
  const top: Record<string, unknown> = {};
  for (const k of ['version', 'contact_email', 'contact_address', 'identifiers']) if (doc[k] !== undefined) top[k] = doc[k];
  return JSON.stringify({ ...top, sellers });
}

export class DataRefresher {
  private state: State;
  private readonly crawler: AdsTxtCrawler;
  private readonly log: LogLike;
  private readonly now: () => number;
  private readonly userAgent: string;
  private readonly gate: RateGate;
  private readonly abort = new AbortController();
  /** Passes run one after another in this process. */
  private queue: Promise<unknown> = Promise.resolve();
  private timers: NodeJS.Timeout[] = [];
  private sellersRecency = new Map<string, true>();
  private lastReload = 0;
  private reloadTimer: NodeJS.Timeout | null = null;
  private appDevelopers: { mtimeMs: number; map: Map<string, string> } | null = null;

  constructor(private readonly opts: RefresherOptions) {
    this.log = opts.log ?? SILENT;
    // Run as root (`sudo ivtd data update`) on the service's data dir: what it writes keeps
    // the data dir's owner, so the service's own refreshes can replace it later.
    keepOwnerOf(opts.dataDir);
    this.now = opts.now ?? Date.now;
    const cfg = opts.sources;
    this.userAgent = `ivtd/${pkg.version} (+data refresh${cfg.contact ? `; ${cfg.contact}` : ''})`;
    this.gate = new RateGate(cfg.adsTxt.rate);
    this.stateMtime = mtimeOf(this.path(REFRESH_DIR, STATE_FILE));
    this.state = this.readState();
    this.crawler = new AdsTxtCrawler(opts.dataDir, cfg.adsTxt, (o) => this.get(o), this.now);
    this.syncSellers();
  }

  private stateMtime: number;
  /** A pass is under way here: its in-memory state is the newest. */
  private busy = false;

  private readState(): State {
    const s = readJson<Partial<State>>(this.path(REFRESH_DIR, STATE_FILE), {});
    return { sources: s.sources ?? {}, sellers: s.sellers ?? {} };
  }

  /**
   * Re-reads the state files when another process (`ivtd data update`) wrote them since,
   * so status and the next pass start from what is on disk. Sellers domains seen in
   * traffic meanwhile and absent from the file are kept.
   */
  syncFromDisk(): void {
    this.crawler.syncFromDisk();
    const m = mtimeOf(this.path(REFRESH_DIR, STATE_FILE));
    if (m === this.stateMtime) return;
    const disk = this.readState();
    for (const [d, st] of Object.entries(this.state.sellers)) if (!disk.sellers[d] && st.origin === 'traffic') disk.sellers[d] = st;
    this.state = disk;
    this.stateMtime = m;
    this.syncSellers();
  }

  private path(...parts: string[]): string {
    return join(this.opts.dataDir, ...parts);
  }

  private get(o: Omit<HttpGetOptions, 'userAgent'>): Promise<HttpGetResult> {
    return httpGet({
      timeoutMs: this.opts.sources.timeoutMs,
      ...o,
      userAgent: this.userAgent,
      signal: this.abort.signal,
      ...(this.opts.connect ? { connect: this.opts.connect } : {}),
    });
  }

  private syncSellers(): void {
    const listed = new Set(this.opts.sources.sellers.domains);
    const traffic: Array<[string, number]> = [];
    for (const [d, st] of Object.entries(this.state.sellers)) {
      if (listed.has(d)) st.origin = 'listed';
      else if (st.origin === 'listed') {
        st.origin = 'traffic'; // no longer listed: kept like a domain seen in traffic, until forgotten
        st.seenAt = this.now();
      }
      if (st.origin === 'traffic') traffic.push([d, st.seenAt ?? 0]);
    }
    traffic.sort((a, b) => a[1] - b[1]);
    this.sellersRecency = new Map(traffic.map(([d]) => [d, true]));
    for (const d of listed) this.state.sellers[d] ??= { ...emptyState(shownUrl(this.sellersUrl(d))), origin: 'listed' };
  }

  private sellersUrl(domain: string): string {
    return this.opts.sources.sellers.urlTemplate.replaceAll('{domain}', domain);
  }

  // -------------------------------------------------------------------------------------
  // Traffic feeds (called by the server with bounded samples from the lookup threads)

  /** Site domains (`dmn`) seen in traffic: their root domains' ads.txt is crawled. */
  noteDomainsSeen(domains: Iterable<string>): void {
    this.crawler.noteSeen('site', this.roots(domains));
  }

  /** App bundle IDs seen in traffic: their developer domains (app-developers.txt) get app-ads.txt crawled. */
  noteAppsSeen(apps: Iterable<string>): void {
    const map = this.developerMap();
    if (map.size === 0) return;
    const devs = new Set<string>();
    let n = 0;
    for (const a of apps) {
      if (++n > 10_000) break;
      const d = map.get(a);
      if (d) devs.add(d);
    }
    this.crawler.noteSeen('app', devs);
  }

  /** Advertising-system domains seen in traffic (`sid`, schain `asi`): their sellers.json is fetched. */
  noteSellersSeen(domains: Iterable<string>): void {
    const cfg = this.opts.sources.sellers;
    if (cfg.fromTraffic === 0) return;
    const now = this.now();
    let n = 0;
    for (const raw of domains) {
      if (++n > 10_000) break;
      const d = raw.trim().toLowerCase();
      if (!isDomainName(d)) continue;
      const st = this.state.sellers[d];
      if (st) {
        st.seenAt = now;
        if (st.origin === 'traffic') {
          this.sellersRecency.delete(d);
          this.sellersRecency.set(d, true);
        }
        continue;
      }
      this.state.sellers[d] = { ...emptyState(shownUrl(this.sellersUrl(d))), origin: 'traffic', seenAt: now };
      this.sellersRecency.set(d, true);
      while (this.sellersRecency.size > cfg.fromTraffic) this.forgetSellers(this.sellersRecency.keys().next().value as string);
    }
  }

  private forgetSellers(domain: string): void {
    const st = this.state.sellers[domain];
    this.sellersRecency.delete(domain);
    delete this.state.sellers[domain];
    // Only files this refresher wrote are removed; an operator's own copy stays.
    if (st && st.successAt !== null) rmSync(this.path(SELLERS_DIR, `${domain}.json`), { force: true });
  }

  private roots(values: Iterable<string>): Set<string> {
    const out = new Set<string>();
    let n = 0;
    for (const v of values) {
      if (++n > 10_000) break;
      const r = rootOfSeen(v);
      if (r) out.add(r);
    }
    return out;
  }

  private developerMap(): Map<string, string> {
    const p = this.path(APP_DEVELOPERS_FILE);
    let mtimeMs: number;
    try {
      mtimeMs = statSync(p).mtimeMs;
    } catch {
      return new Map();
    }
    if (this.appDevelopers?.mtimeMs !== mtimeMs) {
      this.appDevelopers = { mtimeMs, map: parseAppDevelopers(readFileSync(p, 'utf8'), p, []) };
    }
    return this.appDevelopers.map;
  }

  // -------------------------------------------------------------------------------------
  // Passes

  /**
   * One pass. `all`: every source and every listed sellers.json now (`ivtd data update`);
   * otherwise only what is due (`intervalMs` since the last attempt, or the source's own
   * `every`). `sources: false` skips the source files (the crawl tick). The ads.txt crawl
   * takes at most `adsTxtLimit` due hosts. Throws LockBusyError when another process is
   * refreshing this data dir.
   */
  runOnce(mode: { all: boolean; sources?: boolean; intervalMs?: number; adsTxtLimit?: number }): Promise<RefreshReport> {
    const run = this.queue.then(() => this.pass(mode));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async pass(mode: { all: boolean; sources?: boolean; intervalMs?: number; adsTxtLimit?: number }): Promise<RefreshReport> {
    try {
      return await this.passLocked(mode);
    } catch (e) {
      // A pass that cannot write its files (a folder left by root, a full disk) failed for
      // every source: say so in their status (ivtd_data_source_up), not only in a log line.
      if (!(e instanceof LockBusyError)) {
        const reason = `cannot write the refreshed data in ${this.opts.dataDir}: ${(e as Error).message}`.slice(0, 500);
        for (const src of this.opts.sources.sources) {
          const st = (this.state.sources[src.name] ??= emptyState(shownSourceUrl(src)));
          st.status = 'failed';
          st.failures++;
          st.error = reason;
        }
        this.log.error({ err: reason }, 'data refresh failed: the data in use stays; fix the data dir (ownership, space) and it recovers on the next pass');
      }
      throw e;
    }
  }

  private async passLocked(mode: { all: boolean; sources?: boolean; intervalMs?: number; adsTxtLimit?: number }): Promise<RefreshReport> {
    const lock = acquireLock(this.path(REFRESH_DIR, LOCK_FILE));
    this.busy = true;
    const release = () => {
      this.busy = false;
      lock();
    };
    const report: RefreshReport = { items: [], adsTxt: { crawled: 0, changed: 0, failed: 0 }, changed: false };
    try {
      this.syncFromDisk();
      const now = this.now();
      if (mode.sources !== false) {
        for (const src of this.opts.sources.sources) {
          if (this.abort.signal.aborted) break;
          const st = (this.state.sources[src.name] ??= emptyState(shownSourceUrl(src)));
          const every = src.everyMs ?? mode.intervalMs ?? 0;
          if (!mode.all && st.attemptAt !== null && now - st.attemptAt < every) {
            report.items.push({ kind: src.kind, name: src.name, result: 'skipped', detail: 'not due' });
            continue;
          }
          report.items.push(await this.refreshSource(src, st));
        }
      }
      report.items.push(...(await this.refreshSellers(mode.all)));
      if (this.opts.sources.adsTxt.enabled) {
        this.crawler.forgetUnseen();
        report.adsTxt = await this.crawlAdsTxt(mode.adsTxtLimit ?? Infinity);
      }
      report.changed = report.items.some((i) => i.result === 'changed') || report.adsTxt.changed > 0;
      this.save();
    } finally {
      release();
    }
    // Source files change at most once per interval: reload at once. The crawl changes a few
    // files every tick: those reloads are spaced out.
    if (report.changed) this.requestReload(mode.all || report.items.some((i) => i.result === 'changed'));
    return report;
  }

  private save(): void {
    writeAtomic(this.path(REFRESH_DIR, STATE_FILE), JSON.stringify(this.state, null, 1));
    this.stateMtime = mtimeOf(this.path(REFRESH_DIR, STATE_FILE));
    if (this.opts.sources.adsTxt.enabled) this.crawler.save();
  }

  private async refreshSource(src: Source, st: SourceState): Promise<RefreshItem> {
    const now = this.now();
    st.attemptAt = now;
    st.url = shownSourceUrl(src);
    const item = (result: ItemResult, detail: string): RefreshItem => ({ kind: src.kind, name: src.name, result, detail });
    try {
      const detail =
        src.kind === 'ranges' ? await this.refreshRanges(src, st)
        : src.kind === 'agents' ? await this.refreshAgents(src, st)
        : src.kind === 'bots' ? await this.refreshBots(src, st)
        : await this.refreshMaxmind(src, st);
      st.status = 'ok';
      st.successAt = now;
      st.failures = 0;
      st.error = null;
      if (detail.changed) st.changeAt = now;
      this.log.info({ source: src.name, url: st.url, entries: st.entries, changed: detail.changed }, detail.text);
      return item(detail.changed ? 'changed' : 'unchanged', detail.text);
    } catch (e) {
      if (e instanceof HttpGetError && e.reason === 'aborted') return item('skipped', e.message);
      const reason = (e as Error).message.slice(0, 500);
      st.status = 'failed';
      st.failures++;
      st.error = reason;
      const kept = st.successAt ? `the data fetched ${new Date(st.successAt).toISOString()} stays in use` : 'no earlier copy: nothing from this source is used yet';
      this.log.warn({ source: src.name, url: st.url, reason }, `data source failed; ${kept}`);
      return item('failed', `${reason}; ${kept}`);
    }
  }

  /**
   * GET with conditional headers when the output exists; `ok` or `not-modified`, else throws.
   * `hideQuery`: the URLs in its messages are shown without their query values (MaxMind).
   */
  private async fetchSource(url: string, st: SourceState, outputExists: boolean, maxBytes: number, headers: Record<string, string> = {}, publicOnly = false, hideQuery = false) {
    // st.url is the URL as shown: a URL that had something hidden is fetched unconditionally,
    // since another URL could look the same.
    const conditional = outputExists && st.url === url;
    const r = await this.get({
      url, maxBytes, headers, maxRedirects: 5, publicOnly,
      etag: conditional ? st.etag : null,
      lastModified: conditional ? st.lastModified : null,
    });
    if (r.kind === 'status') throw new RefreshFailure(`HTTP ${r.status} from ${shownUrl(r.url, { hideQuery })}`);
    if (r.kind === 'redirect') throw new RefreshFailure(`too many redirects (last to ${shownUrl(r.location, { hideQuery }).slice(0, 200)})`);
    return r;
  }

  private async refreshRanges(src: RangeSource, st: SourceState): Promise<{ changed: boolean; text: string }> {
    const out = this.path(RANGES_DIR, `${src.name}.txt`);
    const have = existsSync(out);
    const r = await this.fetchSource(src.url, st, have, src.maxBytes);
    if (r.kind === 'not-modified') return { changed: false, text: 'not modified (304)' };
    let body = r.body.toString('utf8');
    if (src.format === 'azure-service-tags' && body.trimStart().startsWith('<')) {
      // The download page rather than the file: follow its link to this week's JSON.
      const link = findServiceTagsLink(body);
      if (!link) throw new RefreshFailure('the Azure download page has no ServiceTags_*.json link');
      const j = await this.get({ url: link, maxBytes: src.maxBytes, maxRedirects: 5 });
      if (j.kind !== 'ok') throw new RefreshFailure(`the Service Tags file linked from the download page answered ${j.kind === 'status' ? `HTTP ${j.status}` : j.kind}`);
      body = j.body.toString('utf8');
    }
    const parsed = parseRangeSource(src.format, body, src.filter);
    const n = parsed.cidrs.length;
    if (have && st.entries !== null && n < st.entries * src.minKeep) {
      throw new RefreshFailure(`only ${n} ranges where the last good copy had ${st.entries} (below minKeep ${src.minKeep}): looks truncated`);
    }
    // A crawler operator's list is of one service: its lines name it, and replace that service's ranges in the published lists.
    const service = src.category === 'crawler' ? (src.service ?? this.serviceOfUrl(src.url)) : '';
    const tail = service ? ` ${service}` : '';
    const lines = [
      `# ivtd ranges from source "${src.name}" (${src.format}, category ${src.category}${service ? `, service ${service}` : ''}): ${shownUrl(src.url)}`,
      `# ${n} ranges; fetched by ivtd data update, replaced on the next refresh`,
    ];
    for (const c of parsed.cidrs) lines.push(`${formatCidr(c)} ${src.category}${tail}`);
    const text = `${lines.join('\n')}\n`;
    const same = have && readFileSync(out, 'utf8') === text;
    if (!same) writeAtomic(out, text);
    st.etag = r.etag;
    st.lastModified = r.lastModified;
    st.entries = n;
    const skipped = parsed.bad ? `, ${parsed.bad} unreadable entries skipped` : '';
    return { changed: !same, text: `${n} ranges${skipped}${same ? ', unchanged' : ` written to ${out}`}` };
  }

  /** The slug of the service whose list names `url` as where its ranges are published, '' when none does. */
  private serviceOfUrl(url: string): string {
    const norm = (u: string) => u.replace(/\/+$/, '').replace(/^http:/, 'https:');
    try {
      const specs = loadBotLists(this.opts.dataDir, new Map(), []).specs;
      return specs.find((s) => s.sourceUrl !== '' && norm(s.sourceUrl) === norm(url))?.slug ?? '';
    } catch {
      return ''; // an unreadable list: the ranges name no service, and count for every one
    }
  }

  /** A bot-ip-blocks list → <data-dir>/bot-ip-blocks/<list>.json (which replaces the embedded snapshot's list). */
  private async refreshBots(src: BotsSource, st: SourceState): Promise<{ changed: boolean; text: string }> {
    const out = this.path(BOT_LISTS_DIR, `${src.list}.json`);
    const have = existsSync(out);
    const r = await this.fetchSource(src.url, st, have, src.maxBytes);
    if (r.kind === 'not-modified') return { changed: false, text: 'not modified (304)' };
    const body = r.body.toString('utf8');
    let n: number;
    let services: number;
    try {
      const parsed = parseBotList(body, shownUrl(src.url));
      n = parsed.entries - parsed.bad;
      services = parsed.services.length;
    } catch (e) {
      if (e instanceof BotListError) throw new RefreshFailure(e.message);
      throw e;
    }
    if (have && st.entries !== null && n < st.entries * src.minKeep) {
      throw new RefreshFailure(`only ${n} ranges where the last good copy had ${st.entries} (below minKeep ${src.minKeep}): looks truncated`);
    }
    const same = have && readFileSync(out, 'utf8') === body;
    if (!same) writeAtomic(out, body);
    st.etag = r.etag;
    st.lastModified = r.lastModified;
    st.entries = n;
    return { changed: !same, text: `${services} services, ${n} ranges${same ? ', unchanged' : ` written to ${out}`}` };
  }

  /** ai.robots.txt's robots.json → <data-dir>/ai-agents.txt (which replaces the embedded list). */
  private async refreshAgents(src: AgentsSource, st: SourceState): Promise<{ changed: boolean; text: string }> {
    const out = this.path('ai-agents.txt');
    const have = existsSync(out);
    const r = await this.fetchSource(src.url, st, have, src.maxBytes);
    if (r.kind === 'not-modified') return { changed: false, text: 'not modified (304)' };
    let list: { text: string; count: number };
    try {
      list = aiAgentsFromRobotsJson(r.body.toString('utf8'), shownUrl(src.url));
    } catch (e) {
      throw new RefreshFailure((e as Error).message);
    }
    if (have && st.entries !== null && list.count < st.entries * src.minKeep) {
      throw new RefreshFailure(`only ${list.count} agents where the last good copy had ${st.entries} (below minKeep ${src.minKeep}): looks truncated`);
    }
    const same = have && readFileSync(out, 'utf8') === list.text;
    if (!same) writeAtomic(out, list.text);
    st.etag = r.etag;
    st.lastModified = r.lastModified;
    st.entries = list.count;
    return { changed: !same, text: `${list.count} AI agents${same ? ', unchanged' : ` written to ${out}`}` };
  }

  private async refreshMaxmind(src: MaxmindSource, st: SourceState): Promise<{ changed: boolean; text: string }> {
    const out = this.path(src.target);
    const have = existsSync(out);
    const r = await this.fetchSource(src.url, st, have, src.maxBytes, src.headers, false, true);
    if (r.kind === 'not-modified') return { changed: false, text: 'not modified (304)' };
    const { path, data } = extractFromTar(gunzipLimited(r.body, src.maxBytes), '.mmdb');
    const spec = MMDB_FIELD[src.target];
    const reader = openMmdb<Response>(data, `${src.edition} (${path})`, spec.field as ((r: Response) => unknown) | undefined);
    const type = reader.metadata.databaseType;
    if (!spec.type.test(type)) throw new RefreshFailure(`${path} is a "${type}" database, not one for ${src.target}`);
    if (have && st.entries !== null && data.length < st.entries * src.minKeep) {
      throw new RefreshFailure(`${path} has ${data.length} bytes where the last good copy had ${st.entries}: looks truncated`);
    }
    const same = have && readFileSync(out).equals(data);
    if (!same) writeAtomic(out, data);
    st.etag = r.etag;
    st.lastModified = r.lastModified;
    st.entries = data.length;
    const flag = this.opts.overridden?.[src.target];
    const note = flag ? ` (note: ${flag} is set, so the server uses that file instead)` : '';
    return { changed: !same && !flag, text: `${type} ${reader.metadata.buildEpoch.toISOString().slice(0, 10)}, ${data.length} bytes${same ? ', unchanged' : ` written to ${out}`}${note}` };
  }

  private async refreshSellers(all: boolean): Promise<RefreshItem[]> {
    const cfg = this.opts.sources.sellers;
    const now = this.now();
    const due = Object.entries(this.state.sellers).filter(([, st]) => {
      if (all && st.origin === 'listed') return true;
      if (st.attemptAt === null) return true;
      if (st.status === 'failed') return now - st.attemptAt >= Math.min(HOUR_MS * 2 ** Math.min(st.failures - 1, 10), cfg.everyMs);
      return now - (st.successAt ?? 0) >= cfg.everyMs;
    });
    const items: RefreshItem[] = [];
    const worker = async () => {
      for (;;) {
        const next = due.shift();
        if (!next || this.abort.signal.aborted) return;
        await this.gate.wait(this.abort.signal);
        items.push(await this.refreshOneSellers(next[0], next[1]));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.sources.adsTxt.concurrency, due.length) }, worker));
    return items;
  }

  private async refreshOneSellers(domain: string, st: SourceState): Promise<RefreshItem> {
    const now = this.now();
    st.attemptAt = now;
    const url = this.sellersUrl(domain);
    const out = this.path(SELLERS_DIR, `${domain}.json`);
    const item = (result: ItemResult, detail: string): RefreshItem => ({ kind: 'sellers', name: domain, result, detail });
    try {
      // A domain seen in traffic that names the host must not reach internal addresses.
      const fromTraffic = st.origin === 'traffic' && this.opts.sources.sellers.urlTemplate.split('/')[2]!.includes('{domain}');
      const r = await this.fetchSource(url, st, existsSync(out), this.opts.sources.sellers.maxBytes, {}, fromTraffic);
      st.url = shownUrl(url);
      let changed = false;
      if (r.kind === 'ok') {
        let doc: unknown;
        try {
          const text = r.body.toString('utf8');
          doc = JSON.parse(withoutBom(text));
        } catch (e) {
          throw new RefreshFailure(`not JSON (${(e as Error).message.slice(0, 100)})`);
        }
        if (doc === null || typeof doc !== 'object' || !Array.isArray((doc as { sellers?: unknown }).sellers)) throw new RefreshFailure('no "sellers" array: not a sellers.json file');
        const text = compactSellers(doc as Record<string, unknown>);
        const { registry } = SellersRegistry.fromFiles([{ name: `${domain}.json`, text }]);
        const ids = registry.sellerCount;
        if (ids === 0) throw new RefreshFailure('no seller with a seller_id');
        if (existsSync(out) && st.entries !== null && ids < st.entries * 0.5) throw new RefreshFailure(`only ${ids} sellers where the last good copy had ${st.entries}: looks truncated`);
        changed = !(existsSync(out) && readFileSync(out, 'utf8') === text);
        if (changed) writeAtomic(out, text);
        st.entries = ids;
        st.etag = r.etag;
        st.lastModified = r.lastModified;
      }
      Object.assign(st, { status: 'ok', successAt: now, failures: 0, error: null });
      if (changed) st.changeAt = now;
      return item(changed ? 'changed' : 'unchanged', r.kind === 'ok' ? `${st.entries} sellers` : 'not modified (304)');
    } catch (e) {
      if (e instanceof HttpGetError && e.reason === 'aborted') return item('skipped', e.message);
      const reason = (e as Error).message.slice(0, 300);
      Object.assign(st, { status: 'failed', error: reason });
      st.failures++;
      this.log.warn({ sellers: domain, url: shownUrl(url), reason }, 'sellers.json fetch failed; the last good copy (if any) stays in use');
      return item('failed', reason);
    }
  }

  private async crawlAdsTxt(limit: number): Promise<CrawlResult> {
    const result: CrawlResult = { crawled: 0, changed: 0, failed: 0 };
    // Files declare SUBDOMAIN / INVENTORYPARTNERDOMAIN hosts: those are due at once, so a
    // second and third round fetch them in the same pass (within the limit).
    for (let round = 0; round < 3 && result.crawled < limit && !this.abort.signal.aborted; round++) {
      const due = this.crawler.due(limit - result.crawled);
      if (due.length === 0) break;
      await this.crawlBatch(due, result);
    }
    if (result.crawled > 0) this.log.info({ ...result, ...this.crawler.counts() }, 'ads.txt crawl');
    return result;
  }

  private async crawlBatch(due: Array<{ kind: 'site' | 'app'; host: string }>, result: CrawlResult): Promise<void> {
    const worker = async () => {
      for (;;) {
        const next = due.shift();
        if (!next || this.abort.signal.aborted) return;
        await this.gate.wait(this.abort.signal);
        if (this.abort.signal.aborted) return;
        try {
          const r = await this.crawler.crawl(next.kind, next.host, this.abort.signal);
          result.crawled++;
          if (r.changed) result.changed++;
          if (r.failed) result.failed++;
        } catch (e) {
          if (!(e instanceof HttpGetError && e.reason === 'aborted')) throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.sources.adsTxt.concurrency, due.length) }, worker));
  }

  // -------------------------------------------------------------------------------------
  // Serving: timers and reloads

  /** Runs passes every `intervalMs` (first one shortly after start) and the crawl every 30 s. */
  start(intervalMs: number): void {
    const pass = (sources: boolean) => {
      const limit = Math.max(1, Math.ceil((this.opts.sources.adsTxt.rate * CRAWL_TICK_MS) / SECOND_MS));
      this.runOnce({ all: false, sources, intervalMs, adsTxtLimit: limit }).catch((e: Error) => {
        if (e instanceof LockBusyError) this.log.info({ pid: e.pid }, 'data refresh skipped: another process is refreshing this data dir');
        else this.log.error({ err: e.message }, 'data refresh pass failed');
      });
    };
    const first = setTimeout(() => pass(true), 5 * SECOND_MS);
    const full = setInterval(() => pass(true), intervalMs);
    const tick = setInterval(() => pass(false), CRAWL_TICK_MS);
    for (const t of [first, full, tick]) t.unref();
    this.timers.push(first, full, tick);
  }

  /** Stops the timers, aborts requests under way and waits for the pass to end. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    if (this.reloadTimer) clearTimeout(this.reloadTimer);
    this.reloadTimer = null;
    this.abort.abort();
    await this.queue;
  }

  /** Coalesces reload requests: immediately, or for crawl changes at most once a minute. */
  private requestReload(now: boolean): void {
    const cb = this.opts.onChanged;
    if (!cb || this.abort.signal.aborted) return;
    if (this.reloadTimer) {
      if (!now) return; // one is already planned
      clearTimeout(this.reloadTimer);
    }
    const wait = now ? 0 : Math.max(0, this.lastReload + MIN_RELOAD_GAP_MS - Date.now());
    this.reloadTimer = setTimeout(() => {
      this.reloadTimer = null;
      this.lastReload = Date.now();
      cb().catch((e: Error) => this.log.error({ err: e.message }, 'reload after a data refresh failed'));
    }, wait);
    this.reloadTimer.unref();
  }

  // -------------------------------------------------------------------------------------
  // Status

  /** Current as of the files on disk (another process may have refreshed meanwhile). */
  status(): RefreshStatus {
    if (!this.busy) this.syncFromDisk();
    const sources: SourceStatus[] = this.opts.sources.sources.map((src) => {
      const st = this.state.sources[src.name] ?? emptyState(shownSourceUrl(src));
      // shownUrl again: state.json may have been written by an ivtd that kept the password.
      return { name: src.name, kind: src.kind, url: shownUrl(st.url), status: st.status, successAt: st.successAt, attemptAt: st.attemptAt, changeAt: st.changeAt, failures: st.failures, entries: st.entries, error: st.error };
    });
    const sellers = { listed: 0, fromTraffic: 0, ok: 0, failed: 0, never: 0, oldestSuccessAt: null as number | null };
    for (const st of Object.values(this.state.sellers)) {
      if (st.origin === 'listed') sellers.listed++;
      else sellers.fromTraffic++;
      sellers[st.status]++;
      if (st.successAt !== null && (sellers.oldestSuccessAt === null || st.successAt < sellers.oldestSuccessAt)) sellers.oldestSuccessAt = st.successAt;
    }
    const c = this.crawler.counts();
    return { sources, sellers, adsTxt: { enabled: this.opts.sources.adsTxt.enabled, site: c.site, app: c.app, oldestGoodAt: this.crawler.oldestGood() } };
  }
}

/**
 * A refresher for a resolved config: the sources file it names (or the data dir's), the
 * MaxMind credentials of the options, and the data-dir files that --mmdb-* flags override.
 * Throws SourcesError when the sources file is unusable.
 */
export function refresherFor(config: Config, opts: Omit<RefresherOptions, 'dataDir' | 'sources' | 'overridden'> = {}): DataRefresher {
  const sources = loadSources({
    dataDir: config.dataDir,
    path: config.dataSources,
    maxmind: { accountId: config.maxmindAccountId, licenseKey: config.maxmindLicenseKey },
  });
  const overridden: Partial<Record<MmdbTarget, string>> = {};
  if (config.mmdbCountry) overridden['country.mmdb'] = '--mmdb-country';
  if (config.mmdbAsn) overridden['asn.mmdb'] = '--mmdb-asn';
  if (config.mmdbAnonymousIp) overridden['anonymous-ip.mmdb'] = '--mmdb-anonymous-ip';
  return new DataRefresher({ ...opts, dataDir: config.dataDir, sources, overridden });
}
