// Special-purpose IP ranges (private, loopback, documentation, ...) and which of them no
// real client on the public internet can have (bogons).
import ipaddr from 'ipaddr.js';
import type { ParsedIp } from './ip-address.ts';

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

