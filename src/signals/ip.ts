// IP signals for the pre-bid lookup: strict parsing, special-purpose (bogon) ranges,
// ASN/org, country, hosting and VPN/proxy/Tor flags. Everything here is synchronous;
// `IpIntel.assess` is the per-lookup entry point and caches its answers per IP string.
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import { Reader } from 'maxmind';
import type { AnonymousIPResponse, AsnResponse, CountryResponse, Response } from 'maxmind';
import { AsnTable } from './asn-table.ts';

export type ParsedIp = { v: 4; n: number /* uint32 */ } | { v: 6; w: Uint32Array /* 4 words, most significant first */ };

// ---------------------------------------------------------------------------------------
// Parsing

/** Parses s[from, to) as a dotted quad; returns the uint32 value or -1. Leading zeros are rejected. */
function parseV4(s: string, from: number, to: number): number {
  let n = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // "01" could mean octal to some parsers
      octet = octet * 10 + (c - 48);
      if (octet > 255) return -1;
      digits++;
    } else if (c === 46) {
      if (digits === 0 || ++dots > 3) return -1;
      n = n * 256 + octet;
      octet = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  if (digits === 0 || dots !== 3) return -1;
  return n * 256 + octet;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

// Scratch space for the 16-bit groups; safe because parsing is synchronous.
const groups = new Uint16Array(8);

/** RFC 4291 text form without zone id; fills `groups` and returns true when valid. */
function parseV6Groups(s: string): boolean {
  const len = s.length;
  if (len < 2 || len > 45) return false;
  let count = 0;
  let gap = -1; // index in `groups` where "::" stands
  let i = 0;
  if (s.charCodeAt(0) === 58) {
    if (s.charCodeAt(1) !== 58) return false;
    gap = 0;
    i = 2;
    if (i === len) {
      groups.fill(0);
      return true;
    }
  }
  for (;;) {
    const start = i;
    let value = 0;
    let h: number;
    while (i < len && (h = hexValue(s.charCodeAt(i))) >= 0) {
      value = value * 16 + h;
      i++;
    }
    if (i < len && s.charCodeAt(i) === 46) {
      // Embedded dotted quad: only as the last 32 bits.
      if (count > 6) return false;
      const v4 = parseV4(s, start, len);
      if (v4 < 0) return false;
      groups[count++] = v4 >>> 16;
      groups[count++] = v4 & 0xffff;
      break;
    }
    if (i === start || i - start > 4 || count === 8) return false;
    groups[count++] = value;
    if (i === len) break;
    if (s.charCodeAt(i) !== 58) return false;
    i++;
    if (i < len && s.charCodeAt(i) === 58) {
      if (gap >= 0) return false;
      gap = count;
      i++;
      if (i === len) break;
    } else if (i === len) {
      return false;
    }
  }
  if (gap < 0) return count === 8;
  if (count >= 8) return false;
  const tail = count - gap;
  groups.copyWithin(8 - tail, gap, count);
  groups.fill(0, gap, 8 - tail);
  return true;
}

/**
 * Strict IP parser: dotted-quad IPv4 without leading zeros, RFC 4291 IPv6 without zone id.
 * IPv4-mapped IPv6 (::ffff:a.b.c.d) comes back as IPv4. Returns null for anything else.
 */
export function parseIp(s: string): ParsedIp | null {
  if (s.length <= 15 && s.indexOf(':') < 0) {
    const n = parseV4(s, 0, s.length);
    return n < 0 ? null : { v: 4, n };
  }
  if (!parseV6Groups(s)) return null;
  const g = groups;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return { v: 4, n: (g[6] as number) * 65536 + (g[7] as number) };
  }
  const w = new Uint32Array(4);
  for (let k = 0; k < 4; k++) w[k] = (g[2 * k] as number) * 65536 + (g[2 * k + 1] as number);
  return { v: 6, w };
}

/** Canonical text for other readers (maxmind): dotted quad, or eight uncompressed hex groups. */
export function formatIp(ip: ParsedIp): string {
  if (ip.v === 4) return `${ip.n >>> 24}.${(ip.n >>> 16) & 255}.${(ip.n >>> 8) & 255}.${ip.n & 255}`;
  const w = ip.w;
  const h = (x: number): string => x.toString(16);
  return `${h((w[0] as number) >>> 16)}:${h((w[0] as number) & 0xffff)}:${h((w[1] as number) >>> 16)}:${h((w[1] as number) & 0xffff)}:${h((w[2] as number) >>> 16)}:${h((w[2] as number) & 0xffff)}:${h((w[3] as number) >>> 16)}:${h((w[3] as number) & 0xffff)}`;
}

// ---------------------------------------------------------------------------------------
// Special-purpose ranges. The ranges and names are ipaddr.js's own `range()` table
// (IPv4.prototype.SpecialRanges / IPv6.prototype.SpecialRanges), compiled once into
// masks so a check costs a few integer compares instead of allocating ipaddr objects.
// Two refinements on top: the documentation and benchmarking blocks that ipaddr files
// under 'reserved' get their own names, and IPv6 outside 2000::/3 that ipaddr calls
// 'unicast' is 'unassigned' (IANA has allocated nothing there).

interface V4Rule { name: string; base: number; mask: number }
interface V6Rule { name: string; base: Uint32Array; mask: Uint32Array }

type IpaddrSubnet = [ipaddr.IPv4 | ipaddr.IPv6, number];
type IpaddrRangeTable = Record<string, IpaddrSubnet | IpaddrSubnet[]>;

function ipaddrSubnets(proto: object): [string, IpaddrSubnet][] {
  const table = (proto as { SpecialRanges?: IpaddrRangeTable }).SpecialRanges;
  if (!table) throw new Error('ipaddr.js no longer exposes SpecialRanges; ip.ts must be updated');
  const out: [string, IpaddrSubnet][] = [];
  for (const [name, value] of Object.entries(table)) {
    // Same normalisation as ipaddr.subnetMatch: a single [addr, bits] pair or a list of them.
    const list = Array.isArray(value[0]) ? (value as IpaddrSubnet[]) : [value as IpaddrSubnet];
    for (const subnet of list) out.push([name, subnet]);
  }
  return out;
}

function maskWord(bits: number): number {
  return bits <= 0 ? 0 : bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
}

function v4Rule(name: string, octets: number[], bits: number): V4Rule {
  const mask = maskWord(bits);
  const base = ((((octets[0] as number) << 24) | ((octets[1] as number) << 16) | ((octets[2] as number) << 8) | (octets[3] as number)) & mask) >>> 0;
  return { name, base, mask };
}

function v6Rule(name: string, parts: number[], bits: number): V6Rule {
  const base = new Uint32Array(4);
  const mask = new Uint32Array(4);
  for (let k = 0; k < 4; k++) {
    mask[k] = maskWord(bits - 32 * k);
    base[k] = ((((parts[2 * k] as number) << 16) | (parts[2 * k + 1] as number)) & (mask[k] as number)) >>> 0;
  }
  return { name, base, mask };
}

const V4_RULES: V4Rule[] = [
  v4Rule('documentation', [192, 0, 2, 0], 24), // RFC 5737 TEST-NET-1
  v4Rule('documentation', [198, 51, 100, 0], 24), // TEST-NET-2
  v4Rule('documentation', [203, 0, 113, 0], 24), // TEST-NET-3
  v4Rule('benchmarking', [198, 18, 0, 0], 15), // RFC 2544
  ...ipaddrSubnets(ipaddr.IPv4.prototype).map(([name, [addr, bits]]) => v4Rule(name, addr.toByteArray(), bits)),
];

const V6_RULES: V6Rule[] = [
  v6Rule('documentation', [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // RFC 3849
  v6Rule('documentation', [0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // RFC 9637
  ...ipaddrSubnets(ipaddr.IPv6.prototype).map(([name, [addr, bits]]) => v6Rule(name, (addr as ipaddr.IPv6).parts, bits)),
];

/** Name of the special-purpose range holding ip ('private', 'loopback', 'documentation', ...) or 'unicast'. */
export function ipRangeName(ip: ParsedIp): string {
  if (ip.v === 4) {
    const n = ip.n;
    for (const r of V4_RULES) if (((n & r.mask) >>> 0) === r.base) return r.name;
    return 'unicast';
  }
  const w = ip.w;
  for (const r of V6_RULES) {
    const m = r.mask;
    const b = r.base;
    if (
      (((w[0] as number) & (m[0] as number)) >>> 0) === b[0] &&
      (((w[1] as number) & (m[1] as number)) >>> 0) === b[1] &&
      (((w[2] as number) & (m[2] as number)) >>> 0) === b[2] &&
      (((w[3] as number) & (m[3] as number)) >>> 0) === b[3]
    ) {
      return r.name;
    }
  }
  return (w[0] as number) >>> 29 === 1 ? 'unicast' : 'unassigned';
}

// Special-purpose blocks that are still globally reachable (IANA registries' "Globally
// Reachable" column) or tunnel real users: seeing them as a client IP is not a hard fact.
const ROUTABLE_RANGES: ReadonlySet<string> = new Set([
  'unicast', '6to4', 'teredo', 'rfc6052', 'as112', 'as112v6', 'amt', 'orchid2', 'droneRemoteIdProtocolEntityTags',
]);

/** True for ranges a real client on the public internet cannot have (private, loopback, documentation, ...). */
export function isBogonRange(rangeName: string): boolean {
  return !ROUTABLE_RANGES.has(rangeName);
}

// ---------------------------------------------------------------------------------------
// Curated ASN lists (data/hosting-asns.txt, data/vpn-asns.txt)

const ASN_LINE = /^AS(\d{1,10})\s+([a-z][a-z0-9-]*)$/i;

/** A set of ASNs with a category each, parsed from `AS<number>  <category>  # <org> — source: <...>` lines. */
export class AsnList {
  private constructor(private readonly byAsn: ReadonlyMap<number, string>) {}

  static readonly empty = new AsnList(new Map());

  /** Throws an Error naming fileName and the line number for any line that is not an entry, comment or blank. */
  static parse(text: string, fileName: string): AsnList {
    const byAsn = new Map<number, string>();
    const firstLine = new Map<number, number>();
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const hash = (lines[i] as string).indexOf('#');
      const body = (hash < 0 ? (lines[i] as string) : (lines[i] as string).slice(0, hash)).trim();
      if (body === '') continue;
      const where = `${fileName}:${i + 1}`;
      const m = ASN_LINE.exec(body);
      if (!m) throw new Error(`${where}: expected "AS<number> <category>  # comment", got "${body}"`);
      const asn = Number(m[1]);
      if (asn < 1 || asn > 0xffffffff) throw new Error(`${where}: AS${m[1]} is not a valid 32-bit ASN`);
      const seen = firstLine.get(asn);
      if (seen !== undefined) throw new Error(`${where}: AS${asn} is already listed on line ${seen}`);
      firstLine.set(asn, i + 1);
      byAsn.set(asn, (m[2] as string).toLowerCase());
    }
    return new AsnList(byAsn);
  }

  has(asn: number): boolean {
    return this.byAsn.has(asn);
  }

  category(asn: number): string | undefined {
    return this.byAsn.get(asn);
  }

  get size(): number {
    return this.byAsn.size;
  }

  categories(): Set<string> {
    return new Set(this.byAsn.values());
  }
}

// ---------------------------------------------------------------------------------------
// Org-name rules (data/hosting-org-patterns.txt)

export interface OrgPatterns {
  /** An org name matching any of these is a hosting provider ... */
  include: RegExp[];
  /** ... unless it also matches one of these (lines starting with "!"). */
  exclude: RegExp[];
}

/** One case-insensitive regex per line; "!regex" excludes; "#" comments. Throws naming file and line. */
export function parseOrgPatterns(text: string, fileName: string): OrgPatterns {
  const out: OrgPatterns = { include: [], exclude: [] };
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    const source = negate ? line.slice(1).trim() : line;
    try {
      (negate ? out.exclude : out.include).push(new RegExp(source, 'i'));
    } catch (e) {
      throw new Error(`${fileName}:${i + 1}: invalid regular expression: ${(e as Error).message}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The per-lookup assessment

export interface IpAssessment {
  readonly valid: boolean;
  readonly version: 4 | 6 | 0;
  /** ipRangeName(): 'unicast', 'private', 'documentation', ... ('' when invalid). */
  readonly range: string;
  readonly bogon: boolean;
  readonly asn: number;
  readonly org: string;
  /** ISO 3166-1 alpha-2, uppercase, or ''. */
  readonly country: string;
  readonly hosting: boolean;
  readonly vpn: boolean;
  readonly proxy: boolean;
  readonly tor: boolean;
  /** Why hosting is set: 'anonymous-ip-db' | 'asn-list' | 'org-pattern' | ''. */
  readonly hostingSource: string;
  /** Why vpn/proxy/tor is set: 'anonymous-ip-db' | 'asn-list' | ''. */
  readonly vpnSource: string;
}

const INVALID: IpAssessment = Object.freeze({
  valid: false, version: 0, range: '', bogon: false, asn: 0, org: '', country: '',
  hosting: false, vpn: false, proxy: false, tor: false, hostingSource: '', vpnSource: '',
});

/** Categories of data/vpn-asns.txt and the flag each one sets. */
const VPN_CATEGORIES: ReadonlyMap<string, 'vpn' | 'proxy' | 'tor'> = new Map([
  ['vpn', 'vpn'], // the VPN provider's own network
  ['vpn-host', 'vpn'], // hosting whose space is predominantly leased to VPN services
  ['proxy', 'proxy'],
  ['tor', 'tor'],
] as const);

/** Country DBs come as MaxMind's `country.iso_code` or ip-location-db's flat `country_code`. */
type CountryRecord = CountryResponse & { readonly country_code?: string };

export interface IpIntelSources {
  asnTable: AsnTable | null;
  /** When given, used instead of asnTable (e.g. GeoLite2-ASN / GeoIP2-ISP). */
  asnMmdb: Reader<AsnResponse> | null;
  countryMmdb: Reader<CountryResponse> | null;
  anonymousIpMmdb: Reader<AnonymousIPResponse> | null;
  hostingAsns: AsnList;
  vpnAsns: AsnList;
  hostingOrgPatterns: RegExp[];
  /** Org names matching these are never flagged by hostingOrgPatterns. */
  hostingOrgExclusions?: RegExp[];
  /** Assessments cached per IP string (default 100 000). */
  cacheSize?: number;
}

export class IpIntel {
  private readonly cache: LRUCache<string, IpAssessment>;
  // Org-name rule result per ASN: the org of an ASN does not change within one data set.
  private readonly orgRuleByAsn = new Map<number, boolean>();

  constructor(private readonly src: IpIntelSources) {
    for (const c of src.vpnAsns.categories()) {
      if (!VPN_CATEGORIES.has(c)) {
        throw new Error(`vpn ASN list: unknown category "${c}" (expected one of ${[...VPN_CATEGORIES.keys()].join(', ')})`);
      }
    }
    this.cache = new LRUCache({ max: src.cacheSize ?? 100_000 });
  }

  /** Assessment of one client IP string; answers are shared and must not be mutated. */
  assess(ipString: string): IpAssessment {
    const hit = this.cache.get(ipString);
    if (hit !== undefined) return hit;
    const ip = parseIp(ipString);
    if (ip === null) return INVALID; // not cached: garbage must not evict real IPs
    const a = this.compute(ip);
    this.cache.set(ipString, a);
    return a;
  }

  private compute(ip: ParsedIp): IpAssessment {
    const range = ipRangeName(ip);
    const bogon = isBogonRange(range);
    let asn = 0;
    let org = '';
    let country = '';
    let anon: AnonymousIPResponse | null = null;
    if (!bogon) {
      const { asnMmdb, asnTable, countryMmdb, anonymousIpMmdb } = this.src;
      const key = asnMmdb || countryMmdb || anonymousIpMmdb ? formatIp(ip) : '';
      if (asnMmdb) {
        const r = asnMmdb.get(key);
        asn = r?.autonomous_system_number ?? 0;
        org = r?.autonomous_system_organization ?? '';
      } else if (asnTable) {
        const r = asnTable.lookup(ip);
        if (r) ({ asn, org } = r);
      }
      if (countryMmdb) {
        const r = countryMmdb.get(key) as CountryRecord | null;
        const cc = r ? (r.country?.iso_code ?? r.country_code ?? r.registered_country?.iso_code ?? '') : '';
        country = cc.length === 2 ? cc.toUpperCase() : '';
      }
      if (anonymousIpMmdb) anon = anonymousIpMmdb.get(key);
    }

    let hostingSource = '';
    if (anon?.is_hosting_provider) hostingSource = 'anonymous-ip-db';
    else if (asn !== 0 && this.src.hostingAsns.has(asn)) hostingSource = 'asn-list';
    else if (asn !== 0 && this.orgLooksLikeHosting(asn, org)) hostingSource = 'org-pattern';

    const category = asn !== 0 ? this.src.vpnAsns.category(asn) : undefined;
    const listed = category !== undefined ? VPN_CATEGORIES.get(category) : undefined;
    const dbVpn = anon?.is_anonymous_vpn === true;
    const dbProxy = anon?.is_public_proxy === true || anon?.is_residential_proxy === true;
    const dbTor = anon?.is_tor_exit_node === true;
    const vpn = dbVpn || listed === 'vpn';
    const proxy = dbProxy || listed === 'proxy';
    const tor = dbTor || listed === 'tor';
    const vpnSource = dbVpn || dbProxy || dbTor ? 'anonymous-ip-db' : listed ? 'asn-list' : '';

    return {
      valid: true, version: ip.v, range, bogon, asn, org, country,
      hosting: hostingSource !== '', vpn, proxy, tor, hostingSource, vpnSource,
    };
  }

  private orgLooksLikeHosting(asn: number, org: string): boolean {
    let v = this.orgRuleByAsn.get(asn);
    if (v === undefined) {
      const { hostingOrgPatterns: inc, hostingOrgExclusions: exc = [] } = this.src;
      v = org !== '' && inc.some((re) => re.test(org)) && !exc.some((re) => re.test(org));
      this.orgRuleByAsn.set(asn, v);
    }
    return v;
  }
}

// ---------------------------------------------------------------------------------------
// Loading from raw bytes (the main thread reads files; lookup threads build from bytes)

export interface IpIntelFiles {
  asnBin?: Uint8Array;
  countryMmdb?: Uint8Array;
  asnMmdb?: Uint8Array;
  anonymousIpMmdb?: Uint8Array;
  hostingAsns: string;
  vpnAsns: string;
  hostingOrgPatterns?: string;
  cacheSize?: number;
}

const MMDB_DECODE_CACHE = 10_000;

// Well-known public resolvers' addresses, used to probe that a database decodes.
const PROBE_IPS = ['8.8.8.8', '1.1.1.1', '9.9.9.9', '2001:4860:4860::8888'];

/**
 * Opens an MMDB from bytes, checking that it decodes and (when a probe address is found)
 * that its records carry `field`; throws an Error naming `label` otherwise.
 */
export function openMmdb<T extends Response>(bytes: Uint8Array, label: string, field?: (rec: T) => unknown): Reader<T> {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let reader: Reader<T>;
  const found: T[] = [];
  try {
    // Many networks share one record (a country, an ASN): cache decoded records by offset;
    // it matters for MaxMind's large multi-language records.
    reader = new Reader<T>(buf, { cache: new LRUCache<number, object>({ max: MMDB_DECODE_CACHE }) });
    const md = reader.metadata;
    if (md.binaryFormatMajorVersion !== 2 || (md.ipVersion !== 4 && md.ipVersion !== 6) || !(md.nodeCount > 0)) {
      throw new Error(`unsupported metadata (format ${md.binaryFormatMajorVersion}, ip version ${md.ipVersion})`);
    }
    if (buf.length < md.searchTreeSize + 16) throw new Error('file is shorter than its search tree');
    for (const ip of PROBE_IPS) {
      if (md.ipVersion === 4 && ip.includes(':')) continue;
      const rec = reader.get(ip);
      if (rec !== null) found.push(rec);
    }
  } catch (e) {
    throw new Error(`${label}: not a readable MaxMind DB file (${(e as Error).message})`);
  }
  if (field && found.length > 0 && found.every((r) => field(r) === undefined)) {
    throw new Error(`${label}: records lack the expected fields (database type "${reader.metadata.databaseType}")`);
  }
  return reader;
}

/** Builds an IpIntel from file contents; throws a descriptive Error for any unusable input. */
export function loadIpIntel(files: IpIntelFiles): IpIntel {
  const patterns = parseOrgPatterns(files.hostingOrgPatterns ?? '', 'hosting-org-patterns.txt');
  return new IpIntel({
    asnTable: files.asnBin ? AsnTable.fromBytes(files.asnBin) : null,
    asnMmdb: files.asnMmdb ? openMmdb<AsnResponse>(files.asnMmdb, 'ASN MMDB', (r) => r.autonomous_system_number) : null,
    countryMmdb: files.countryMmdb
      ? openMmdb<CountryResponse>(files.countryMmdb, 'country MMDB', (r) => {
          const c = r as CountryRecord;
          return c.country ?? c.country_code ?? c.registered_country;
        })
      : null,
    anonymousIpMmdb: files.anonymousIpMmdb ? openMmdb<AnonymousIPResponse>(files.anonymousIpMmdb, 'anonymous-IP MMDB') : null,
    hostingAsns: AsnList.parse(files.hostingAsns, 'hosting-asns.txt'),
    vpnAsns: AsnList.parse(files.vpnAsns, 'vpn-asns.txt'),
    hostingOrgPatterns: patterns.include,
    hostingOrgExclusions: patterns.exclude,
    ...(files.cacheSize !== undefined ? { cacheSize: files.cacheSize } : {}),
  });
}
