// ads.txt / app-ads.txt (IAB Tech Lab ads.txt 1.1): the file parser, and the per-lookup
// answer "is this selling system and seller account authorised by the publisher?".
//
// The parser reads hostile input: a size cap is applied by the caller, and here the line
// count, the line length and the record count are capped, fields are split with indexOf
// (no regular expression runs on a whole line), and a bad line is skipped, never fatal.
//
// Lookups read an AdsTxtIndex: open-addressing hash tables over typed arrays (built on the
// main thread by ads-txt-build.ts, shared with every lookup thread without copying), so
// authorize() allocates nothing and costs a few hash probes.

import { fmix32 } from '../memory/hash.ts';

// ---------------------------------------------------------------------------------------
// Parsing

export const ADS_TXT_LIMITS = Object.freeze({
  /** Lines read; the rest of a longer file is ignored (and reported as truncated). */
  maxLines: 100_000,
  /** Records kept per file. The largest real files have a few thousand. */
  maxRecords: 50_000,
  /** Longer lines are skipped as malformed. */
  maxLineLength: 1024,
  /** SUBDOMAIN / INVENTORYPARTNERDOMAIN / MANAGERDOMAIN values kept per file. */
  maxDirectives: 16,
});

export type Relationship = 'DIRECT' | 'RESELLER';

export interface AdsTxtRecord {
  /** Field 1, the advertising system's domain, lowercased. */
  system: string;
  /** Field 2, the seller's account ID in that system, as written. */
  account: string;
  relationship: Relationship;
}

export interface ParsedAdsTxt {
  records: AdsTxtRecord[];
  /** The IAB placeholder line (no seller authorised) was present. */
  placeholder: boolean;
  /** OWNERDOMAIN (first instance only, as the spec says), lowercased, or null. */
  ownerDomain: string | null;
  /** MANAGERDOMAIN values (country qualifiers dropped), lowercased. */
  managerDomains: string[];
  subdomains: string[];
  inventoryPartners: string[];
  /** Lines that were neither a record, a variable, a comment nor blank. */
  malformed: number;
  truncated: boolean;
}

export const PLACEHOLDER_SYSTEM = 'placeholder.example.com';

/** Lowercase hostname with at least one dot, LDH labels of 1–63, at most 253 characters. */
export function isDomainName(s: string): boolean {
  if (s.length < 3 || s.length > 253) return false;
  let label = 0;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (label === 0 || s.charCodeAt(i - 1) === 45) return false;
      label = 0;
      dots++;
      continue;
    }
    const ok = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c === 45 && label > 0);
    if (!ok || ++label > 63) return false;
  }
  return dots > 0 && label > 0 && s.charCodeAt(s.length - 1) !== 45;
}

function isAsciiSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 11 || c === 12 || c === 0xa0 || c === 0xfeff;
}

function trim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isAsciiSpace(s.charCodeAt(a))) a++;
  while (b > a && isAsciiSpace(s.charCodeAt(b - 1))) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/** A domain as a directive or field value: lowercased, trimmed, `www.`-less hosts kept as written. */
function domainValue(raw: string): string | null {
  const d = trim(raw).toLowerCase();
  return isDomainName(d) ? d : null;
}

export function parseAdsTxt(text: string): ParsedAdsTxt {
  const out: ParsedAdsTxt = {
    records: [], placeholder: false, ownerDomain: null, managerDomains: [], subdomains: [], inventoryPartners: [],
    malformed: 0, truncated: false,
  };
  const L = ADS_TXT_LIMITS;
  let from = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let lines = 0;
  while (from < text.length) {
    if (++lines > L.maxLines || out.records.length >= L.maxRecords) {
      out.truncated = true;
      break;
    }
    let to = from;
    // Line ends: \n, \r\n or a lone \r.
    while (to < text.length) {
      const c = text.charCodeAt(to);
      if (c === 10 || c === 13) break;
      to++;
    }
    const next = text.charCodeAt(to) === 13 && text.charCodeAt(to + 1) === 10 ? to + 2 : to + 1;
    if (to - from > L.maxLineLength) {
      out.malformed++;
      from = next;
      continue;
    }
    let line = text.slice(from, to);
    from = next;
    const hash = line.indexOf('#');
    if (hash >= 0) line = line.slice(0, hash);
    line = trim(line);
    if (line === '') continue;

    const comma = line.indexOf(',');
    const eq = line.indexOf('=');
    if (eq > 0 && (comma < 0 || eq < comma)) {
      variable(out, trim(line.slice(0, eq)).toUpperCase(), line.slice(eq + 1));
      continue;
    }
    // Extension data after ';' is not ours to read.
    const semi = line.indexOf(';');
    if (semi >= 0) line = line.slice(0, semi);
    const f = line.split(',', 5);
    if (f.length < 3) {
      out.malformed++;
      continue;
    }
    const system = domainValue(f[0]!);
    const account = trim(f[1]!);
    const rel = trim(f[2]!).toUpperCase();
    if (system === null || account === '' || account.length > 200 || (rel !== 'DIRECT' && rel !== 'RESELLER')) {
      out.malformed++;
      continue;
    }
    if (system === PLACEHOLDER_SYSTEM) {
      out.placeholder = true;
      continue;
    }
    out.records.push({ system, account, relationship: rel });
  }
  return out;
}

function variable(out: ParsedAdsTxt, name: string, raw: string): void {
  const max = ADS_TXT_LIMITS.maxDirectives;
  switch (name) {
    case 'OWNERDOMAIN': {
      const d = domainValue(raw);
      if (d && out.ownerDomain === null) out.ownerDomain = d;
      return;
    }
    case 'MANAGERDOMAIN': {
      // MANAGERDOMAIN=<domain>[,<country>]: the country narrows where it applies; kept for all.
      const c = raw.indexOf(',');
      const d = domainValue(c >= 0 ? raw.slice(0, c) : raw);
      if (d && out.managerDomains.length < max && !out.managerDomains.includes(d)) out.managerDomains.push(d);
      return;
    }
    case 'SUBDOMAIN': {
      const d = domainValue(raw);
      if (d && out.subdomains.length < max && !out.subdomains.includes(d)) out.subdomains.push(d);
      return;
    }
    case 'INVENTORYPARTNERDOMAIN': {
      const d = domainValue(raw);
      if (d && out.inventoryPartners.length < max && !out.inventoryPartners.includes(d)) out.inventoryPartners.push(d);
      return;
    }
    default:
      return; // CONTACT and unknown variables carry nothing a lookup needs
  }
}

// ---------------------------------------------------------------------------------------
// Verdicts

export const ADS_TXT_VERDICTS = ['authorized', 'unauthorized', 'unknown'] as const;
export type AdsTxtVerdictName = (typeof ADS_TXT_VERDICTS)[number];

/**
 * Reason codes, by verdict.
 * authorized:   owner (DIRECT, seller is the owner's PUBLISHER account per sellers.json),
 *               manager (DIRECT, seller's domain is a MANAGERDOMAIN), direct (DIRECT, not
 *               contradicted), reseller (RESELLER), inventory_partner (listed by an
 *               INVENTORYPARTNERDOMAIN's file).
 * unauthorized: seller_not_listed, no_seller_authorized (the placeholder-only file),
 *               direct_not_publisher (DIRECT line, but the exchange's sellers.json names the
 *               account an INTERMEDIARY, or BOTH for another owner), schain_node_not_listed
 *               (a paying hp=1 node of the supply chain is not in the file).
 * unknown:      no_domain, no_developer_domain (app without a known developer domain),
 *               not_crawled, no_file (404: the spec lets that mean "all sellers"),
 *               unavailable (fetch failed and no good copy is recent enough).
 */
export const ADS_TXT_REASONS = [
  'owner', 'manager', 'direct', 'reseller', 'inventory_partner',
  'seller_not_listed', 'no_seller_authorized', 'direct_not_publisher', 'schain_node_not_listed',
  'no_domain', 'no_developer_domain', 'not_crawled', 'no_file', 'unavailable',
] as const;
export type AdsTxtReason = (typeof ADS_TXT_REASONS)[number];

export interface AdsTxtVerdict {
  readonly verdict: AdsTxtVerdictName;
  readonly reason: AdsTxtReason;
}

function verdictOf(reason: AdsTxtReason): AdsTxtVerdictName {
  const i = ADS_TXT_REASONS.indexOf(reason);
  return i < 5 ? 'authorized' : i < 9 ? 'unauthorized' : 'unknown';
}

/** One frozen object per reason: authorize() hands these out and allocates nothing. */
export const ADS_TXT_RESULT: Readonly<Record<AdsTxtReason, AdsTxtVerdict>> = Object.freeze(
  Object.fromEntries(ADS_TXT_REASONS.map((r) => [r, Object.freeze({ verdict: verdictOf(r), reason: r })])) as Record<AdsTxtReason, AdsTxtVerdict>,
);

// ---------------------------------------------------------------------------------------
// The compiled index

/** Per (publisher file, seller) pair: the best line's meaning. Order = preference. */
export const PAIR = Object.freeze({ owner: 1, manager: 2, direct: 3, reseller: 4, directNotPublisher: 5 });
/** Per publisher file. */
export const HOST_STATUS = Object.freeze({ ok: 0, noSellerAuthorized: 1, noFile: 2, unavailable: 3 });
export const KIND = Object.freeze({ site: 0, app: 1 });

const PAIR_REASON: Record<number, AdsTxtReason> = {
  [PAIR.owner]: 'owner',
  [PAIR.manager]: 'manager',
  [PAIR.direct]: 'direct',
  [PAIR.reseller]: 'reseller',
  [PAIR.directNotPublisher]: 'direct_not_publisher',
};

/** Typed arrays only (SharedArrayBuffer-backed when built for threads). */
export interface CompiledAdsTxt {
  /** UTF-16 string pool. */
  pool: Uint16Array;
  /** Publisher files (hosts). Slots hold index+1, 0 = empty. */
  hostSlots: Int32Array;
  hostOff: Uint32Array;
  hostLen: Uint16Array;
  hostKind: Uint8Array;
  hostStatus: Uint8Array;
  /** Inventory partners of host h: partners[partnerStart[h] .. partnerStart[h+1]). */
  partnerStart: Uint32Array;
  partners: Int32Array;
  /** Seller keys "system\naccount" (lowercased). */
  sellerSlots: Int32Array;
  sellerOff: Uint32Array;
  sellerSysLen: Uint16Array;
  sellerAccLen: Uint16Array;
  /** (host, seller) pairs. */
  pairSlots: Int32Array;
  pairHost: Int32Array;
  pairSeller: Int32Array;
  pairCode: Uint8Array;
  /** App bundle → developer-domain host (index, or -1 when that domain is not crawled). */
  appSlots: Int32Array;
  appOff: Uint32Array;
  appLen: Uint16Array;
  appHost: Int32Array;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 16777619;

/** FNV-1a over UTF-16 units of s[from, to), ASCII-lowercased when `lower`. */
function hashChars(h: number, s: string, from: number, to: number, lower: boolean): number {
  for (let i = from; i < to; i++) {
    let c = s.charCodeAt(i);
    if (lower && c >= 65 && c <= 90) c |= 32;
    h = Math.imul(h ^ c, FNV_PRIME);
  }
  return h;
}

function hashStart(seed: number): number {
  return Math.imul(FNV_OFFSET ^ seed, FNV_PRIME);
}

/** Final avalanche so linear probing spreads. */
const finish = fmix32;

export function pairHash(host: number, seller: number): number {
  return finish(Math.imul(host + 1, 0x9e3779b1) ^ seller);
}

/** Hash-table key of a publisher file: its kind and host (case-insensitive). */
export function hostKeyHash(kind: number, s: string, from: number, to: number): number {
  return finish(hashChars(hashStart(kind), s, from, to, true));
}

/** Hash-table key of an app bundle ID (case-sensitive). */
export function appKeyHash(app: string): number {
  return finish(hashChars(hashStart(2), app, 0, app.length, false));
}

/** Hash-table key of a seller: system[s0, s1) and account[a0, a1), case-insensitive. */
export function sellerKeyHash(system: string, s0: number, s1: number, account: string, a0: number, a1: number): number {
  const h = Math.imul(hashChars(hashStart(3), system, s0, s1, true) ^ 10, FNV_PRIME);
  return finish(hashChars(h, account, a0, a1, true));
}

function poolEquals(pool: Uint16Array, off: number, s: string, from: number, to: number, lower: boolean): boolean {
  for (let i = from; i < to; i++) {
    let c = s.charCodeAt(i);
    if (lower && c >= 65 && c <= 90) c |= 32;
    if (pool[off + i - from] !== c) return false;
  }
  return true;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9;
}

/** Immutable, allocation-free reader over a CompiledAdsTxt. */
export class AdsTxtIndex {
  private constructor(private readonly c: CompiledAdsTxt) {}

  static fromCompiled(c: CompiledAdsTxt): AdsTxtIndex {
    const hosts = c.hostKind.length;
    if (c.hostOff.length !== hosts || c.hostLen.length !== hosts || c.hostStatus.length !== hosts || c.partnerStart.length !== hosts + 1) {
      throw new Error('ads.txt index: host arrays differ in length');
    }
    if (c.pairHost.length !== c.pairCode.length || c.pairSeller.length !== c.pairCode.length) throw new Error('ads.txt index: pair arrays differ in length');
    for (const slots of [c.hostSlots, c.sellerSlots, c.pairSlots, c.appSlots]) {
      if (slots.length === 0 || (slots.length & (slots.length - 1)) !== 0) throw new Error('ads.txt index: slot tables must be a power of two');
    }
    return new AdsTxtIndex(c);
  }

  /** Publisher files known (any status). */
  get hosts(): number {
    return this.c.hostKind.length;
  }

  /** (file, seller) pairs. */
  get pairs(): number {
    return this.c.pairCode.length;
  }

  /** Host index of exactly s[from, to) of `kind`, or -1. */
  private findHost(kind: number, s: string, from: number, to: number): number {
    const c = this.c;
    if (c.hostLen.length === 0) return -1; // nothing crawled (or the crawl is off): no hashing
    const mask = c.hostSlots.length - 1;
    let i = hostKeyHash(kind, s, from, to) & mask;
    const len = to - from;
    for (;;) {
      const v = c.hostSlots[i]!;
      if (v === 0) return -1;
      const h = v - 1;
      if (c.hostKind[h] === kind && c.hostLen[h] === len && poolEquals(c.pool, c.hostOff[h]!, s, from, to, true)) return h;
      i = (i + 1) & mask;
    }
  }

  /**
   * The publisher file covering a site domain: the longest crawled suffix of it, so
   * `www.news.example.co.uk` finds `example.co.uk` (or a SUBDOMAIN file for `news.…`).
   * Accepts a bare host; a scheme, port or path (a URL passed by mistake) is skipped.
   */
  private siteHost(domain: string): number {
    let from = 0;
    let to = domain.length;
    const scheme = domain.indexOf('://');
    if (scheme >= 0) from = scheme + 3;
    for (let i = from; i < to; i++) {
      const ch = domain.charCodeAt(i);
      if (ch === 47 || ch === 58 || ch === 63) {
        to = i;
        break;
      }
    }
    while (to > from && domain.charCodeAt(to - 1) === 46) to--; // trailing dot
    while (from < to) {
      const dot = domain.indexOf('.', from);
      if (dot < 0 || dot >= to) return -1; // a single label is never a publisher's root domain
      const h = this.findHost(KIND.site, domain, from, to);
      if (h >= 0) return h;
      from = dot + 1;
    }
    return -1;
  }

  /** App index of the bundle ID (case-sensitive, as the spec says), or -1. */
  private findApp(app: string): number {
    const c = this.c;
    if (c.appLen.length === 0) return -1;
    const mask = c.appSlots.length - 1;
    let i = appKeyHash(app) & mask;
    for (;;) {
      const v = c.appSlots[i]!;
      if (v === 0) return -1;
      const a = v - 1;
      if (c.appLen[a] === app.length && poolEquals(c.pool, c.appOff[a]!, app, 0, app.length, false)) return a;
      i = (i + 1) & mask;
    }
  }

  /** Seller key index of (system, account), both compared case-insensitively, or -1. */
  private findSeller(system: string, account: string): number {
    const c = this.c;
    // Values arrive trimmed from the query parser; surrounding blanks in schain fields are tolerated.
    let s0 = 0;
    let s1 = system.length;
    while (s0 < s1 && isSpace(system.charCodeAt(s0))) s0++;
    while (s1 > s0 && isSpace(system.charCodeAt(s1 - 1))) s1--;
    let a0 = 0;
    let a1 = account.length;
    while (a0 < a1 && isSpace(account.charCodeAt(a0))) a0++;
    while (a1 > a0 && isSpace(account.charCodeAt(a1 - 1))) a1--;
    if (s0 === s1 || a0 === a1) return -1;
    const mask = c.sellerSlots.length - 1;
    let i = sellerKeyHash(system, s0, s1, account, a0, a1) & mask;
    const sl = s1 - s0;
    const al = a1 - a0;
    for (;;) {
      const v = c.sellerSlots[i]!;
      if (v === 0) return -1;
      const k = v - 1;
      if (c.sellerSysLen[k] === sl && c.sellerAccLen[k] === al) {
        const off = c.sellerOff[k]!;
        if (poolEquals(c.pool, off, system, s0, s1, true) && poolEquals(c.pool, off + sl, account, a0, a1, true)) return k;
      }
      i = (i + 1) & mask;
    }
  }

  /** PAIR code of seller key k in host h's file, or 0. */
  private pairCode(h: number, k: number): number {
    const c = this.c;
    const mask = c.pairSlots.length - 1;
    let i = pairHash(h, k) & mask;
    for (;;) {
      const v = c.pairSlots[i]!;
      if (v === 0) return 0;
      const p = v - 1;
      if (c.pairHost[p] === h && c.pairSeller[p] === k) return c.pairCode[p]!;
      i = (i + 1) & mask;
    }
  }

  /** Best PAIR code for (system, account) in host h's file or its inventory partners' files. */
  private relation(h: number, system: string, account: string): { code: number; partner: boolean } | null {
    const k = this.findSeller(system, account);
    if (k < 0) return null;
    const own = this.pairCode(h, k);
    if (own !== 0) return OWN[own]!;
    // Not in the publisher's own file: an inventory partner's file may authorise it.
    const c = this.c;
    for (let j = c.partnerStart[h]!; j < c.partnerStart[h + 1]!; j++) {
      const p = c.partners[j]!;
      if (c.hostStatus[p] !== HOST_STATUS.ok) continue;
      const code = this.pairCode(p, k);
      if (code !== 0 && code !== PAIR.directNotPublisher) return PARTNER;
    }
    return null;
  }

  /**
   * Is the seller authorised by the publisher's ads.txt (site) or app-ads.txt (app)?
   *
   * - `domain`: the site domain (`dmn`); used when `app` is empty.
   * - `app`: the app bundle ID; its developer domain comes from the operator's
   *   app-developers.txt. Without one the answer is unknown/no_developer_domain.
   * - `system`, `account`: the selling system and the seller's account in it: lookup
   *   parameters `sid` (ads.txt field 1) and `pub` (field 2).
   * - `nodes`: the parsed supply chain's nodes (or null): every node with hp=1 is a
   *   seller paid for this impression and must be listed too (hp=0 nodes need not be).
   *
   * Cost: a few FNV hashes over the strings and hash-table probes; no allocation.
   */
  authorize(
    domain: string,
    app: string,
    system: string,
    account: string,
    nodes: ReadonlyArray<{ readonly asi: string; readonly sid: string; readonly hp: number }> | null,
  ): AdsTxtVerdict {
    const c = this.c;
    let h: number;
    if (app !== '') {
      const a = this.findApp(app);
      if (a < 0) return ADS_TXT_RESULT.no_developer_domain;
      h = c.appHost[a]!;
    } else {
      if (domain === '') return ADS_TXT_RESULT.no_domain;
      h = this.siteHost(domain);
    }
    if (h < 0) return ADS_TXT_RESULT.not_crawled;
    const status = c.hostStatus[h];
    if (status === HOST_STATUS.noFile) return ADS_TXT_RESULT.no_file;
    if (status === HOST_STATUS.unavailable) return ADS_TXT_RESULT.unavailable;
    if (status === HOST_STATUS.noSellerAuthorized) return ADS_TXT_RESULT.no_seller_authorized;

    const primary = this.relation(h, system, account);
    if (primary === null) return ADS_TXT_RESULT.seller_not_listed;
    if (primary.code === PAIR.directNotPublisher) return ADS_TXT_RESULT.direct_not_publisher;
    if (nodes !== null) {
      for (let i = 0; i < nodes.length; i++) {
        const n = nodes[i]!;
        if (n.hp !== 1) continue;
        const r = this.relation(h, n.asi, n.sid);
        if (r === null) return ADS_TXT_RESULT.schain_node_not_listed;
        if (r.code === PAIR.directNotPublisher) return ADS_TXT_RESULT.direct_not_publisher;
      }
    }
    return primary.partner ? ADS_TXT_RESULT.inventory_partner : ADS_TXT_RESULT[PAIR_REASON[primary.code]!];
  }
}

// Shared answers of relation(), so it allocates nothing either.
const OWN: Record<number, { code: number; partner: boolean }> = Object.fromEntries(
  Object.values(PAIR).map((code) => [code, Object.freeze({ code, partner: false })]),
);
const PARTNER = Object.freeze({ code: PAIR.reseller, partner: true });
