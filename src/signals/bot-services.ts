// Who a declared bot really is, per service: the published crawler and uptime-monitor lists
// (ipverse/bot-ip-blocks' crawlers.json and monitoring.json, CC0; data/bot-ip-blocks/ holds
// the embedded snapshot). Each service names the UA patterns of its crawlers or probes and
// the addresses they come from. A declared bot whose UA matches a service's patterns is
// judged by that service's own ranges: inside, it is that crawler, AI agent or monitor
// (GIVT); outside, an impersonator (ua_crawler_spoofed, SIVT). A list that is not
// authoritative (`ip_list_authoritative: false`: a whole ASN, Yandex's or Meta's) is only a
// prefilter: inside it, a forward-confirmed reverse DNS lookup, done off the lookup threads
// (crawler-dns.ts), decides; until it has, the request is judged as a declared crawler.
//
// The lookup thread's cost: one regular expression over the UA, asked only of UAs isbot
// already calls bots; then, for the services it names, one binary search in the
// service-range table (service-ranges.ts). A person's lookup never pays for any of it.
import type { ParsedIp } from './ip-address.ts';
import { parseCidr, type Cidr } from './ip-ranges.ts';
import { ServiceRanges } from './service-ranges.ts';
import type { CompiledServiceRanges } from './service-ranges.ts';

/** The lists, by file name stem: `monitoring` holds uptime monitors, the others crawlers and fetchers. */
export const BOT_LISTS = ['crawlers', 'monitoring'] as const;
export type BotListName = (typeof BOT_LISTS)[number];

export function isBotList(s: string): s is BotListName {
  return (BOT_LISTS as readonly string[]).includes(s);
}

/** One service as the lookup threads need it (plain data: it travels in the data bundle). */
export interface BotServiceSpec {
  /** The list's own name for it, e.g. `Googlebot`, `Better Stack`. */
  name: string;
  /** Lowercase letters, digits and `-` (ranges files name services by it: `<cidr> crawler <slug>`). */
  slug: string;
  list: BotListName;
  /** Where the list came from and when (for explain): `embedded:…` or a path, and its date. */
  listSource: string;
  listDate: string;
  /** The operator's own URL the list took the ranges from. */
  sourceUrl: string;
  /** When the list last saw the service's ranges change (ISO), '' when it does not say. */
  changedAt: string;
  uaPatterns: string[];
  rdnsPatterns: string[];
  /** False: the ranges are a prefilter (a whole ASN) and reverse DNS decides. */
  authoritative: boolean;
  /** Where the service's ranges came from when not from the list: an operator's ranges file (`ranges/<name>.txt`), else ''. */
  rangesFrom: string;
  /** Ranges (CIDRs) it has. */
  ranges: number;
}

export class BotListError extends Error {
  override name = 'BotListError';
}

/** A service name's slug: `Google (special)` → `google-special`, `updown.io` → `updown-io`. */
export function serviceSlug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
}

const MAX_SERVICES_PER_LIST = 500;
const MAX_PATTERNS = 100;
const MAX_PATTERN_LENGTH = 200;
/** Share of unreadable prefixes above which a list is refused rather than partly used. */
const MAX_BAD_SHARE = 0.001;

export interface ParsedBotService {
  name: string;
  slug: string;
  sourceUrl: string;
  changedAt: string;
  uaPatterns: string[];
  rdnsPatterns: string[];
  authoritative: boolean;
  cidrs: Cidr[];
}

export interface ParsedBotList {
  services: ParsedBotService[];
  /** Prefixes seen, and those that were not CIDRs (skipped). */
  entries: number;
  bad: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function patterns(v: unknown, at: string, what: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.length > MAX_PATTERNS) throw new BotListError(`${at}.${what}: must be an array of at most ${MAX_PATTERNS} strings`);
  return v.map((p, i) => {
    if (typeof p !== 'string' || p.replace(/[*?]/g, '').trim() === '' || p.length > MAX_PATTERN_LENGTH) {
      throw new BotListError(`${at}.${what}[${i}]: ${JSON.stringify(p)?.slice(0, 80)} is not a pattern (a glob of 1 to ${MAX_PATTERN_LENGTH} characters naming more than * and ?)`);
    }
    return p;
  });
}

/**
 * A bot-ip-blocks list (`{"services": {"<name>": {user_agent_patterns, rdns_patterns,
 * ip_list_authoritative, ipv4, ipv6, source_url, last_changed_at, …}}}`). Throws
 * BotListError naming the key at fault; a few unreadable prefixes are skipped (counted),
 * more than 0.1 % of them refuse the list.
 */
export function parseBotList(body: string, what: string): ParsedBotList {
  let doc: unknown;
  try {
    doc = JSON.parse(body.charCodeAt(0) === 0xfeff ? body.slice(1) : body);
  } catch (e) {
    throw new BotListError(`${what}: not JSON (${(e as Error).message.slice(0, 120)})`);
  }
  if (!isObj(doc) || !isObj(doc.services)) throw new BotListError(`${what}: no "services" object: not a bot-ip-blocks list`);
  const names = Object.keys(doc.services);
  if (names.length === 0) throw new BotListError(`${what}: names no service`);
  if (names.length > MAX_SERVICES_PER_LIST) throw new BotListError(`${what}: more than ${MAX_SERVICES_PER_LIST} services`);
  const out: ParsedBotList = { services: [], entries: 0, bad: 0 };
  const slugs = new Set<string>();
  let example = '';
  for (const name of names) {
    const at = `${what}: services[${JSON.stringify(name.slice(0, 60))}]`;
    const s = doc.services[name];
    if (!isObj(s)) throw new BotListError(`${at}: must be an object`);
    const slug = serviceSlug(name);
    if (slug === '' || slug.length > 64) throw new BotListError(`${at}: the name must hold a letter or digit and be at most 64 characters`);
    if (slugs.has(slug)) throw new BotListError(`${at}: a second service named ${slug}`);
    slugs.add(slug);
    const uaPatterns = patterns(s.user_agent_patterns, at, 'user_agent_patterns');
    const rdnsPatterns = patterns(s.rdns_patterns, at, 'rdns_patterns');
    const auth = s.ip_list_authoritative ?? true;
    if (typeof auth !== 'boolean') throw new BotListError(`${at}.ip_list_authoritative: must be true or false`);
    const cidrs: Cidr[] = [];
    for (const key of ['ipv4', 'ipv6'] as const) {
      const list = s[key] ?? [];
      if (!Array.isArray(list)) throw new BotListError(`${at}.${key}: must be an array of CIDRs`);
      for (const p of list) {
        out.entries++;
        const c = typeof p === 'string' ? parseCidr(p) : 'not a string';
        if (typeof c === 'string') {
          out.bad++;
          if (example === '') example = `${name}: ${JSON.stringify(p)?.slice(0, 60)}: ${c}`;
        } else cidrs.push(c);
      }
    }
    const str = (k: string) => (typeof s[k] === 'string' ? (s[k] as string).slice(0, 300) : '');
    out.services.push({ name, slug, sourceUrl: str('source_url'), changedAt: str('last_changed_at'), uaPatterns, rdnsPatterns, authoritative: auth, cidrs });
  }
  if (out.bad > Math.floor(out.entries * MAX_BAD_SHARE)) throw new BotListError(`${what}: ${out.bad} of ${out.entries} prefixes are not CIDRs (e.g. ${example})`);
  return out;
}

/** A glob (`*` any run, `?` one character) as regular-expression source, unanchored where it starts or ends with `*`. */
export function globSource(glob: string): string {
  const esc = (s: string) => s.replace(/[.+^${}()|[\]\\/-]/g, '\\$&').replace(/\*/g, '[\\s\\S]*').replace(/\?/g, '[\\s\\S]');
  let g = glob;
  let head = '^';
  let tail = '$';
  while (g.startsWith('*')) {
    g = g.slice(1);
    head = '';
  }
  while (g.endsWith('*')) {
    g = g.slice(0, -1);
    tail = '';
  }
  return `${head}${esc(g)}${tail}`;
}

/** A hostname pattern (`crawl-*.googlebot.com`) as an anchored, case-insensitive test. */
export function hostnameMatcher(globs: readonly string[]): (host: string) => boolean {
  if (globs.length === 0) return () => false;
  const re = new RegExp(globs.map((g) => `^${g.toLowerCase().replace(/[.+^${}()|[\]\\/-]/g, '\\$&').replace(/\*/g, '[a-z0-9.-]*').replace(/\?/g, '[a-z0-9-]')}$`).join('|'));
  return (host) => re.test(host.toLowerCase().replace(/\.$/, ''));
}

/** What the check found (explain names it; the lookup turns it into the flags). */
export const BOT_CHECKS = [
  /** No service's patterns match the UA (or it was not asked). */
  '',
  /** In the service's published ranges: that crawler, agent or monitor. */
  'inside',
  /** In operator-supplied `crawler` ranges that name no service (a ranges file of the older form). */
  'inside_unattributed',
  /** A non-authoritative list, inside its prefilter, reverse DNS confirmed. */
  'dns_confirmed',
  /** Inside the prefilter, reverse DNS not known yet (asked): judged as a declared crawler meanwhile. */
  'dns_pending',
  /** Inside the prefilter, reverse DNS turned off: judged as a declared crawler. */
  'dns_off',
  /** The lookup has no IP address: nothing says where it came from, a declared crawler. */
  'no_ip',
  /** The service publishes no ranges (here): a declared crawler. */
  'no_ranges',
  /** Inside the prefilter, reverse DNS names another host or does not confirm it: an impersonator. */
  'dns_refuted',
  /** Outside the service's ranges: an impersonator. */
  'outside',
] as const;
export type BotCheck = (typeof BOT_CHECKS)[number];
export const CHECK = Object.freeze(Object.fromEntries(BOT_CHECKS.map((c, i) => [c === '' ? 'none' : c, i])) as Record<Exclude<BotCheck, ''> | 'none', number>);

/** The checks that make the UA's claim true (the service's category), and those that make it an impersonator. */
export const isGenuine = (check: number): boolean => check === CHECK.inside || check === CHECK.inside_unattributed || check === CHECK.dns_confirmed;
export const isSpoofed = (check: number): boolean => check === CHECK.outside || check === CHECK.dns_refuted;

/** States of a reverse-DNS verdict in the shared table (crawler-dns.ts). */
export const DNS_UNKNOWN = 0;
export const DNS_CONFIRMED = 1;
export const DNS_REFUTED = 2;
export const DNS_PENDING = 3;

/** The reverse-DNS verdicts as a lookup thread sees them: shared memory, no I/O. */
export interface DnsVerdicts {
  /** Off: never asked, never known (every non-authoritative match is `dns_off`). */
  readonly enabled: boolean;
  /** DNS_* for (address, service key), nowSec the clock in seconds. */
  state(ip: ParsedIp, serviceKey: number, nowSec: number): number;
  /** Asks the main thread to check it (dropped when its queue is full). */
  ask(ip: ParsedIp, serviceKey: number): void;
}

/** A service's key in the DNS table: FNV-1a of its slug (stable across reloads, unlike its index). */
export function serviceKey(slug: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < slug.length; i++) h = Math.imul(h ^ slug.charCodeAt(i), 0x01000193);
  return h | 0 || 1; // a signed 32-bit word, as the shared table stores it
}

/** The literal of a `*literal*` glob (no other wildcard), or null. */
function containsLiteral(glob: string): string | null {
  const m = /^\*+([^*?]+)\*+$/.exec(glob);
  return m ? m[1]! : null;
}

/** The services of the loaded lists, with their ranges: one per data load, one per thread. */
export class BotServices {
  /**
   * Every `*literal*` UA pattern of every service, longest first, without capture groups
   * (they cost a declared bot naming no service several times the scan): one pass over the
   * UA, restarted one character after each match so that overlapping tokens of two services
   * are both found; the matched text names its services (`byLiteral`). A declared bot that
   * names none pays this one scan.
   */
  private readonly scan: RegExp | null;
  /** The same, not global: the miss (a declared bot naming no service) tests it alone, which is faster than a global scan. */
  private readonly any: RegExp | null;
  /** Per literal: its services, and those of the other literals it starts with (they match where it does, unseen by the scan). */
  private readonly byLiteral: Map<string, number[]>;
  /** Services with a pattern that is not `*literal*`: tested with their own expression. */
  private readonly globServices: number[];
  private readonly each: RegExp[];
  private readonly marked: Uint8Array;
  readonly keys: Int32Array;
  private readonly hasRanges: boolean[];
  private readonly canConfirm: boolean[];
  private readonly monitors: Uint8Array;

  constructor(
    readonly specs: readonly BotServiceSpec[],
    readonly ranges: ServiceRanges,
  ) {
    if (ranges.services !== specs.length && specs.length > 0) throw new Error(`${specs.length} services but ranges for ${ranges.services}`);
    this.each = specs.map((s) => new RegExp(s.uaPatterns.length ? s.uaPatterns.map(globSource).join('|') : '(?!)'));
    const literals: Array<{ lit: string; service: number }> = [];
    const globs = new Set<number>();
    specs.forEach((s, i) => {
      for (const p of s.uaPatterns) {
        const lit = containsLiteral(p);
        if (lit === null) globs.add(i);
        else if (!literals.some((l) => l.lit === lit && l.service === i)) literals.push({ lit, service: i });
      }
    });
    literals.sort((a, b) => b.lit.length - a.lit.length);
    const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
    this.scan = literals.length ? new RegExp(literals.map((l) => esc(l.lit)).join('|'), 'g') : null;
    this.any = literals.length ? new RegExp(literals.map((l) => esc(l.lit)).join('|')) : null;
    this.byLiteral = new Map();
    for (const l of literals) {
      const services = new Set(literals.filter((o) => l.lit.startsWith(o.lit)).map((o) => o.service));
      this.byLiteral.set(l.lit, [...services]);
    }
    this.globServices = [...globs];
    this.marked = new Uint8Array(specs.length);
    this.keys = Int32Array.from(specs.map((s) => serviceKey(s.slug)));
    this.hasRanges = specs.map((s) => s.ranges > 0);
    this.canConfirm = specs.map((s) => s.rdnsPatterns.length > 0);
    this.monitors = Uint8Array.from(specs.map((s) => (s.list === 'monitoring' ? 1 : 0)));
  }

  static readonly EMPTY = new BotServices([], ServiceRanges.empty);

  get size(): number {
    return this.specs.length;
  }

  /** Whether service `i` is an uptime monitor's (list `monitoring`). */
  isMonitor(i: number): boolean {
    return i >= 0 && this.monitors[i] === 1;
  }

  /** Marks the services whose patterns match the UA (this.marked); returns how many. */
  private markServices(ua: string): number {
    let n = 0;
    const mark = (i: number) => {
      if (this.marked[i] === 0) {
        this.marked[i] = 1;
        n++;
      }
    };
    const re = this.scan;
    if (re !== null && this.any!.test(ua)) {
      re.lastIndex = 0;
      let m: RegExpExecArray | null;
      while ((m = re.exec(ua)) !== null) {
        const services = this.byLiteral.get(m[0])!;
        for (let j = 0; j < services.length; j++) mark(services[j]!);
        re.lastIndex = m.index + 1;
      }
    }
    for (let g = 0; g < this.globServices.length; g++) if (this.each[this.globServices[g]!]!.test(ua)) mark(this.globServices[g]!);
    return n;
  }

  /** The services whose patterns match the UA, in list order (tests, explain). */
  servicesOf(ua: string): number[] {
    const out: number[] = [];
    if (this.markServices(ua) === 0) return out;
    for (let i = 0; i < this.marked.length; i++) {
      if (this.marked[i] === 1) out.push(i);
      this.marked[i] = 0;
    }
    return out;
  }

  /**
   * Judges a declared bot's UA from `ip` (null: the lookup has none, so nothing is known):
   * the check (CHECK) in out[0], the service's index in out[1] (-1 when none matches).
   * Every service the UA matches is tried; the most favourable verdict wins (in the order
   * of BOT_CHECKS), so a UA two lists claim (Datadog's `Synthetics`) is judged by the one
   * whose ranges hold the address. `unattributed`: the address is in `crawler` ranges that
   * name no service (accepted for every service, as before per-service ranges).
   */
  judge(ua: string, ip: ParsedIp | null, unattributed: boolean, dns: DnsVerdicts | null, nowSec: number, out: Int32Array): void {
    out[0] = CHECK.none;
    out[1] = -1;
    if (this.markServices(ua) === 0) return;
    let best: number = BOT_CHECKS.length;
    let bestAt = -1;
    let set = -2;
    for (let i = 0; i < this.marked.length; i++) {
      if (this.marked[i] === 0) continue;
      this.marked[i] = 0;
      let check: number;
      const spec = this.specs[i]!;
      if (!this.hasRanges[i]) check = CHECK.no_ranges;
      else if (ip === null) check = CHECK.no_ip;
      else {
        if (set === -2) set = this.ranges.setOf(ip);
        if (this.ranges.inSet(set, i)) {
          if (spec.authoritative) check = CHECK.inside;
          else if (dns === null || !dns.enabled || !this.canConfirm[i]) check = CHECK.dns_off;
          else {
            const st = dns.state(ip, this.keys[i]!, nowSec);
            if (st === DNS_CONFIRMED) check = CHECK.dns_confirmed;
            else if (st === DNS_REFUTED) check = CHECK.dns_refuted;
            else {
              if (st === DNS_UNKNOWN) dns.ask(ip, this.keys[i]!);
              check = CHECK.dns_pending;
            }
          }
        } else check = unattributed ? CHECK.inside_unattributed : CHECK.outside;
      }
      if (check < best) {
        best = check;
        bestAt = i;
      }
    }
    out[0] = best === BOT_CHECKS.length ? CHECK.none : best;
    out[1] = bestAt;
  }
}

/** What explain says of a declared bot's check (src/prebid/pipeline.ts). */
export interface BotCheckExplained {
  /** The service its UA names, as its list writes it (e.g. `Googlebot`, `Pingdom`). */
  service: string;
  /** `crawlers` or `monitoring`. */
  list: BotListName;
  /** Where the list came from (`embedded:data/bot-ip-blocks/crawlers.json` or a refreshed file) and its date. */
  listSource: string;
  listDate: string;
  /** When the list last saw this service's ranges change. */
  serviceChangedAt: string;
  /** The operator's own URL the ranges are published at. */
  publishedAt: string;
  /** An operator's ranges file that replaced the list's ranges for this service, '' when none did. */
  rangesFrom: string;
  /** The check (BOT_CHECKS): inside, outside, dns_confirmed… */
  check: Exclude<BotCheck, ''>;
  /** Whether the list's ranges decide alone (else they are a prefilter and reverse DNS decides). */
  authoritative: boolean;
  /** Forward-confirmed reverse DNS: `not needed` (an authoritative list, or outside the prefilter), `confirmed`, `refuted`, `pending`, `off`. */
  dns: 'not needed' | 'confirmed' | 'refuted' | 'pending' | 'off';
  /** The verdict: `genuine` (that crawler, agent or monitor), `impersonator`, or `unverified` (a declared crawler). */
  verdict: 'genuine' | 'impersonator' | 'unverified';
}

export function explainBotCheck(bots: BotServices, check: number, service: number): BotCheckExplained | null {
  const spec = bots.specs[service];
  if (check === CHECK.none || spec === undefined) return null;
  const name = BOT_CHECKS[check] as Exclude<BotCheck, ''>;
  const dns = check === CHECK.dns_confirmed ? 'confirmed' : check === CHECK.dns_refuted ? 'refuted' : check === CHECK.dns_pending ? 'pending' : check === CHECK.dns_off ? 'off' : 'not needed';
  return {
    service: spec.name, list: spec.list, listSource: spec.listSource, listDate: spec.listDate, serviceChangedAt: spec.changedAt,
    publishedAt: spec.sourceUrl, rangesFrom: spec.rangesFrom, check: name, authoritative: spec.authoritative, dns,
    verdict: isGenuine(check) ? 'genuine' : isSpoofed(check) ? 'impersonator' : 'unverified',
  };
}

/** One list as loaded: for `ivtd data status`, the startup log and explain. */
export interface BotListInfo {
  list: BotListName;
  /** `embedded:data/bot-ip-blocks/<list>.json` or the refreshed file's path. */
  source: string;
  /** The snapshot's date (embedded), or the refreshed file's modification time. */
  date: string;
  /** The embedded snapshot's licence; a refreshed copy is the same project's data. */
  licence: string;
  services: number;
  ranges: number;
  bytes: number;
}

/** What the bundle carries to the threads. */
export interface BotListsBundle {
  specs: BotServiceSpec[];
  compiled: CompiledServiceRanges;
  lists: BotListInfo[];
}
