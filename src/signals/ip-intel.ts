// IP intelligence for the pre-bid lookup: ASN/org, country, hosting and VPN/proxy/Tor
// flags from the loaded data (ASN table or MaxMind files, curated lists, org-name rules,
// the published ranges that `ivtd data update` keeps current), and iCloud Private Relay.
import type { AnonymousIPResponse, AsnResponse, CountryResponse, Reader } from 'maxmind';
import { AsnTable } from './asn-table.ts';
import { AsnList } from './asn-list.ts';
import { parseIp, type ParsedIp } from './ip-address.ts';
import { MmdbTree, openMmdb } from './mmdb.ts';
import { parseOrgPatterns } from './org-patterns.ts';
import { RANGE_BIT, type IpRanges } from './ip-ranges.ts';
import { ipRangeName, isBogonRange } from './special-ranges.ts';

/**
 * The whole assessment of an address (the admin side and tests): the hot path's verdict
 * (IpVerdict, below) with what it rests on.
 */
export interface IpAssessment extends Readonly<IpVerdict> {
  readonly valid: boolean;
  readonly version: 4 | 6 | 0;
  /** ipRangeName(): 'unicast', 'private', 'documentation', ... ('' when invalid). */
  readonly range: string;
  readonly org: string;
  /** Why hosting is set: 'anonymous-ip-db' | 'published-ranges' | 'asn-list' | 'org-pattern' | ''. */
  readonly hostingSource: string;
  /** Why vpn/proxy/tor is set: 'anonymous-ip-db' | 'published-ranges' | 'asn-list' | ''. */
  readonly vpnSource: string;
}

const INVALID: IpAssessment = Object.freeze({
  valid: false, version: 0, range: '', bogon: false, asn: 0, org: '', country: '',
  hosting: false, vpn: false, proxy: false, tor: false, relay: false, crawler: false, hostingSource: '', vpnSource: '',
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

/** A country record's ISO 3166-1 alpha-2 code, uppercase, or ''. */
function countryCode(rec: CountryResponse): string {
  const r = rec as CountryRecord;
  const cc = r.country?.iso_code ?? r.country_code ?? r.registered_country?.iso_code ?? '';
  return /^[A-Za-z]{2}$/.test(cc) ? cc.toUpperCase() : '';
}

const NO_ASN = Object.freeze({ asn: 0, org: '' });

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
  /** Published ranges (<data-dir>/ranges/*.txt, built once on the main thread); empty when none. */
  ranges?: IpRanges;
}

/**
 * What the lookup path needs of an IP: the flags, ASN and country (reused per thread; the
 * shared verdict cache holds it). IpAssessment adds what it rests on.
 */
export interface IpVerdict {
  bogon: boolean;
  asn: number;
  /** ISO 3166-1 alpha-2, uppercase, or ''. */
  country: string;
  hosting: boolean;
  vpn: boolean;
  proxy: boolean;
  tor: boolean;
  /**
   * An egress address of a privacy relay (iCloud Private Relay's published ranges): real
   * Safari users sit behind it, so it is neither hosting nor VPN, only a weaker signal.
   */
  relay: boolean;
  /** In a crawler operator's published ranges (crawlers.ts): where its crawlers really come from. */
  crawler: boolean;
}

export function emptyIpVerdict(): IpVerdict {
  return { bogon: false, asn: 0, country: '', hosting: false, vpn: false, proxy: false, tor: false, relay: false, crawler: false };
}

/**
 * IP intelligence over one data set (ASN table or MMDB, country MMDB, optional
 * Anonymous-IP MMDB, curated lists). Immutable once built; a reload builds a new one.
 * The lookup path reaches it through the shared IpCache (ip-cache.ts); `assess` is the
 * whole answer with its sources, for the admin side and tests.
 */
export class IpIntel {
  // Org-name rule result per ASN: the org of an ASN does not change within one data set.
  private readonly orgRuleByAsn = new Map<number, boolean>();
  // The MMDBs' trees, walked from the parsed address, with what is read of each record.
  private readonly asnTree: MmdbTree<AsnResponse, { asn: number; org: string }> | null;
  private readonly countryTree: MmdbTree<CountryResponse, string> | null;
  private readonly anonTree: MmdbTree<AnonymousIPResponse, AnonymousIPResponse | null> | null;

  constructor(private readonly src: IpIntelSources) {
    this.asnTree = src.asnMmdb ? new MmdbTree(src.asnMmdb, (r) => ({ asn: r.autonomous_system_number ?? 0, org: r.autonomous_system_organization ?? '' }), NO_ASN) : null;
    this.countryTree = src.countryMmdb ? new MmdbTree(src.countryMmdb, countryCode, '') : null;
    this.anonTree = src.anonymousIpMmdb ? new MmdbTree<AnonymousIPResponse, AnonymousIPResponse | null>(src.anonymousIpMmdb, (r) => r, null) : null;
    for (const c of src.vpnAsns.categories()) {
      if (!VPN_CATEGORIES.has(c)) {
        throw new Error(`vpn ASN list: unknown category "${c}" (expected one of ${[...VPN_CATEGORIES.keys()].join(', ')})`);
      }
    }
  }

  /** Assessment of one client IP string (uncached). */
  assess(ipString: string): IpAssessment {
    const ip = parseIp(ipString);
    return ip === null ? INVALID : this.assessParsed(ip);
  }

  /** Assessment of a parsed address (uncached): every database and list is consulted. */
  assessParsed(ip: ParsedIp): IpAssessment {
    const range = ipRangeName(ip);
    const bogon = isBogonRange(range);
    let asn = 0;
    let org = '';
    let country = '';
    const { asnTable } = this.src;
    if (!bogon) {
      if (this.asnTree !== null) ({ asn, org } = this.asnTree.get(ip));
      else if (asnTable) {
        const r = asnTable.lookup(ip);
        if (r) ({ asn, org } = r);
      }
      if (this.countryTree !== null) country = this.countryTree.get(ip);
    }
    // The Anonymous-IP database is asked for special ranges too: an operator's MaxMind file
    // may list them (MaxMind's own test data puts VPN exits in unassigned IPv6), whereas the
    // ASN and country sources hold junk for private space.
    const anon = this.anonTree !== null ? this.anonTree.get(ip) : null;
    // Published ranges (cloud providers, Tor exits, VPN lists, relays): one binary search.
    const bits = this.src.ranges !== undefined && !bogon ? this.src.ranges.lookup(ip) : 0;
    // A relay egress (iCloud Private Relay) sits in CDN networks (Akamai, Cloudflare,
    // Fastly) that the hosting ASN list and org rules name, and carries real Safari users:
    // it is neither hosting nor VPN, whatever those lists say. A Tor or proxy listing of
    // the very address still counts.
    const relay = (bits & RANGE_BIT.relay) !== 0;

    let hostingSource = '';
    if (anon?.is_hosting_provider) hostingSource = 'anonymous-ip-db';
    else if ((bits & RANGE_BIT.hosting) !== 0) hostingSource = 'published-ranges';
    else if (asn !== 0 && this.src.hostingAsns.has(asn)) hostingSource = 'asn-list';
    else if (asn !== 0 && this.orgLooksLikeHosting(asn, org)) hostingSource = 'org-pattern';
    if (relay) hostingSource = '';

    const category = asn !== 0 ? this.src.vpnAsns.category(asn) : undefined;
    const listed = category !== undefined ? VPN_CATEGORIES.get(category) : undefined;
    const dbVpn = anon?.is_anonymous_vpn === true;
    const dbProxy = anon?.is_public_proxy === true || anon?.is_residential_proxy === true;
    const dbTor = anon?.is_tor_exit_node === true;
    const rVpn = (bits & RANGE_BIT.vpn) !== 0;
    const rProxy = (bits & RANGE_BIT.proxy) !== 0;
    const rTor = (bits & RANGE_BIT.tor) !== 0;
    const vpn = !relay && (dbVpn || rVpn || listed === 'vpn');
    const proxy = dbProxy || rProxy || (!relay && listed === 'proxy');
    const tor = dbTor || rTor || (!relay && listed === 'tor');
    const vpnSource = !(vpn || proxy || tor) ? ''
      : (dbVpn && vpn) || dbProxy || dbTor ? 'anonymous-ip-db'
      : (rVpn && vpn) || rProxy || rTor ? 'published-ranges'
      : 'asn-list';

    return {
      valid: true, version: ip.v, range, bogon, asn, org, country,
      hosting: hostingSource !== '', vpn, proxy, tor, relay, crawler: (bits & RANGE_BIT.crawler) !== 0, hostingSource, vpnSource,
    };
  }

  /** The lookup path's part of assessParsed (what IpCache stores). */
  verdict(ip: ParsedIp, out: IpVerdict): IpVerdict {
    const a = this.assessParsed(ip);
    out.bogon = a.bogon;
    out.asn = a.asn;
    out.country = a.country;
    out.hosting = a.hosting;
    out.vpn = a.vpn;
    out.proxy = a.proxy;
    out.tor = a.tor;
    out.relay = a.relay;
    out.crawler = a.crawler;
    return out;
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

export interface IpIntelFiles {
  asnBin?: Uint8Array;
  countryMmdb?: Uint8Array;
  asnMmdb?: Uint8Array;
  anonymousIpMmdb?: Uint8Array;
  hostingAsns: string;
  vpnAsns: string;
  hostingOrgPatterns?: string;
  ranges?: IpRanges;
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
    ...(files.ranges ? { ranges: files.ranges } : {}),
  });
}
