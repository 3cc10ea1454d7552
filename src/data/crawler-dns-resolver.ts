// Forward-confirmed reverse DNS for crawlers whose published list is not authoritative (a
// whole ASN: Yandex, Meta), on the main thread. The lookup threads leave requests in shared
// memory (src/signals/crawler-dns.ts); this drains them every DRAIN_MS, asks the resolver —
// the address's PTR names, those matching the service's hostname patterns, and each such
// name's A/AAAA records, which must hold the address — and writes the verdict back with its
// expiry: confirmed for POSITIVE_TTL_S, refuted (no PTR, no matching name, a name that does
// not lead back) for NEGATIVE_TTL_S, a resolver failure (timeout, SERVFAIL, refused) for
// ERROR_TTL_S, after which a lookup asks again. Bounded: a queue of at most MAX_WAITING
// checks (more are dropped, to be asked again), at most CONCURRENCY at once, and queries
// paced to `qps` per second over all of them.
import { Resolver } from 'node:dns/promises';
import { DNS_CONFIRMED, DNS_PENDING, DNS_REFUTED, hostnameMatcher, serviceKey, type BotServiceSpec } from '../signals/bot-services.ts';
import type { CrawlerDns } from '../signals/crawler-dns.ts';
import { addressWords } from '../signals/crawler-dns.ts';
import { parseIp, type ParsedIp } from '../signals/ip-address.ts';
export { checkCrawlerDns, crawlerDnsServers } from '../signals/crawler-dns.ts';

export const DRAIN_MS = 100;
export const POSITIVE_TTL_S = 6 * 3600;
export const NEGATIVE_TTL_S = 3600;
export const ERROR_TTL_S = 300;
/** A check asked for but not answered yet: lookups stop asking for this long. */
export const PENDING_TTL_S = 60;
export const MAX_WAITING = 1024;
export const CONCURRENCY = 4;
/** PTR names per address whose forward records are asked (a PTR set can be long). */
const MAX_NAMES = 4;

export interface CrawlerDnsSettings {
  /** Resolver addresses (`ip`, `ip:port`, `[v6]:port`), or null for the system's (/etc/resolv.conf). */
  servers: string[] | null;
  /** DNS queries per second, over all checks. */
  qps: number;
  /** Per-query timeout (ms) and tries, as node:dns takes them. */
  timeoutMs?: number;
  tries?: number;
}

export interface CrawlerDnsCounters {
  asked: number;
  dropped: number;
  confirmed: number;
  refuted: number;
  errors: number;
  queries: number;
}

type Outcome = 'confirmed' | 'refuted' | 'error';

const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME']);

export class CrawlerDnsResolver {
  private readonly resolver: Resolver;
  private readonly waiting: Array<{ words: [number, number, number, number]; service: number }> = [];
  private readonly inFlight = new Set<string>();
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private tokens: number;
  private lastRefill: number;
  private readonly waiters: Array<() => void> = [];
  private pacer: NodeJS.Timeout | null = null;
  readonly counters: CrawlerDnsCounters = { asked: 0, dropped: 0, confirmed: 0, refuted: 0, errors: 0, queries: 0 };

  constructor(
    private readonly shared: CrawlerDns,
    /** The loaded services (they change on a reload). */
    private readonly services: () => readonly BotServiceSpec[],
    private readonly settings: CrawlerDnsSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.resolver = new Resolver({ timeout: settings.timeoutMs ?? 2000, tries: settings.tries ?? 2 });
    if (settings.servers !== null) this.resolver.setServers(settings.servers);
    this.tokens = Math.max(1, settings.qps);
    this.lastRefill = this.now();
  }

  start(): void {
    this.shared.setEnabled(true);
    this.timer = setInterval(() => this.pump(), DRAIN_MS);
    this.timer.unref();
  }

  stop(): void {
    this.shared.setEnabled(false);
    if (this.timer) clearInterval(this.timer);
    if (this.pacer) clearTimeout(this.pacer);
    this.timer = null;
    this.pacer = null;
    this.resolver.cancel();
    for (const w of this.waiters.splice(0)) w();
  }

  /** Takes the threads' requests and starts what the limits allow (the timer calls it; tests may too). */
  pump(): void {
    const nowSec = Math.floor(this.now() / 1000);
    for (const r of this.shared.drain()) {
      const id = `${r.words.join(',')}/${r.service}`;
      if (this.inFlight.has(id)) continue;
      if (this.waiting.length >= MAX_WAITING) {
        this.counters.dropped++;
        continue;
      }
      this.counters.asked++;
      this.inFlight.add(id);
      this.waiting.push(r);
      this.shared.put(r.words, r.service, DNS_PENDING, nowSec + PENDING_TTL_S, nowSec);
    }
    while (this.running < CONCURRENCY && this.waiting.length > 0) {
      const r = this.waiting.shift()!;
      this.running++;
      void this.run(r).finally(() => {
        this.running--;
        this.inFlight.delete(`${r.words.join(',')}/${r.service}`);
        if (this.timer !== null) this.pump();
      });
    }
  }

  /** Waiting and running checks (tests wait for them). */
  get busy(): number {
    return this.waiting.length + this.running;
  }

  private async run(r: { words: [number, number, number, number]; service: number }): Promise<void> {
    const spec = this.services().find((s) => serviceKey(s.slug) === r.service);
    const w = r.words.map((x) => x >>> 0);
    const ip: ParsedIp = w[0] === 0 && w[1] === 0 && w[2] === 0xffff ? { v: 4, n: w[3]! } : { v: 6, w: Uint32Array.from(w) };
    let outcome: Outcome;
    if (!spec || spec.rdnsPatterns.length === 0) {
      outcome = 'error'; // no longer loaded, or nothing to confirm against: unknown again soon
    } else {
      try {
        outcome = await this.check(ip, spec.rdnsPatterns);
      } catch {
        outcome = 'error';
      }
    }
    const nowSec = Math.floor(this.now() / 1000);
    if (outcome === 'confirmed') {
      this.counters.confirmed++;
      this.shared.put(r.words, r.service, DNS_CONFIRMED, nowSec + POSITIVE_TTL_S, nowSec);
    } else if (outcome === 'refuted') {
      this.counters.refuted++;
      this.shared.put(r.words, r.service, DNS_REFUTED, nowSec + NEGATIVE_TTL_S, nowSec);
    } else {
      this.counters.errors++;
      // Unknown (judged as a declared crawler) until it expires; then a lookup asks again.
      this.shared.put(r.words, r.service, DNS_PENDING, nowSec + ERROR_TTL_S, nowSec);
    }
  }

  /** Forward-confirmed reverse DNS of one address against hostname patterns. */
  async check(ip: ParsedIp, patterns: readonly string[]): Promise<Outcome> {
    const matches = hostnameMatcher(patterns);
    let names: string[];
    try {
      await this.token();
      // resolvePtr on the reverse name, not reverse(): that one reports a timeout or SERVFAIL as ENOTFOUND.
      names = await this.resolver.resolvePtr(reverseName(ip));
    } catch (e) {
      return NO_RECORD.has((e as NodeJS.ErrnoException).code ?? '') ? 'refuted' : 'error';
    }
    const candidates = names.filter(matches).slice(0, MAX_NAMES);
    if (candidates.length === 0) return 'refuted';
    const want = new Uint32Array(4);
    addressWords(ip, want);
    let failed = false;
    for (const name of candidates) {
      let addrs: string[];
      try {
        await this.token();
        addrs = ip.v === 4 ? await this.resolver.resolve4(name) : await this.resolver.resolve6(name);
      } catch (e) {
        if (!NO_RECORD.has((e as NodeJS.ErrnoException).code ?? '')) failed = true;
        continue;
      }
      for (const a of addrs) {
        const p = parseIp(a);
        if (p === null) continue;
        const got = new Uint32Array(4);
        addressWords(p, got);
        if (got.every((x, i) => x === want[i])) return 'confirmed';
      }
    }
    return failed ? 'error' : 'refuted';
  }

  /** Waits for a query token (qps per second, a second's worth at most banked). */
  private token(): Promise<void> {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens--;
      this.counters.queries++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.waiters.push(() => {
        this.counters.queries++;
        resolve();
      });
      this.schedule();
    });
  }

  private refill(): void {
    const t = this.now();
    const qps = Math.max(1, this.settings.qps);
    this.tokens = Math.min(qps, this.tokens + (Math.max(0, t - this.lastRefill) / 1000) * qps);
    this.lastRefill = t;
  }

  private schedule(): void {
    if (this.pacer !== null) return;
    const qps = Math.max(1, this.settings.qps);
    this.pacer = setTimeout(() => {
      this.pacer = null;
      this.refill();
      while (this.tokens >= 1 && this.waiters.length > 0) {
        this.tokens--;
        this.waiters.shift()!();
      }
      if (this.waiters.length > 0) this.schedule();
    }, Math.ceil(1000 / qps));
    this.pacer.unref();
  }
}

/** The PTR name of an address: `4.3.2.1.in-addr.arpa`, or IPv6's nibbles under `ip6.arpa`. */
export function reverseName(ip: ParsedIp): string {
  if (ip.v === 4) return `${ip.n & 255}.${(ip.n >>> 8) & 255}.${(ip.n >>> 16) & 255}.${ip.n >>> 24}.in-addr.arpa`;
  const nibbles: string[] = [];
  for (let k = 3; k >= 0; k--) for (let i = 0; i < 8; i++) nibbles.push(((ip.w[k]! >>> (4 * i)) & 15).toString(16));
  return `${nibbles.join('.')}.ip6.arpa`;
}
