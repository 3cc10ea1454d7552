// IP address text → numbers: strict parsing (dotted-quad IPv4 without leading zeros,
// RFC 4291 IPv6 without zone id; IPv4-mapped IPv6 comes back as IPv4) and the canonical
// text other readers (maxmind) take. The hot path parses into a reused IpScratch.

export type ParsedIp = { v: 4; n: number /* uint32 */ } | { v: 6; w: Uint32Array /* 4 words, most significant first */ };

/** A reusable parse target (one per thread): v 4 → `n` holds the address, v 6 → `w`. */
export interface IpScratch {
  v: 0 | 4 | 6;
  n: number;
  readonly w: Uint32Array;
}

export function ipScratch(): IpScratch {
  return { v: 0, n: 0, w: new Uint32Array(4) };
}

/** The scratch as a ParsedIp (valid after parseIpInto returned true). */
export function asParsed(ip: IpScratch): ParsedIp {
  return ip as unknown as ParsedIp;
}

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
 * Strict IP parser into `out` (no allocation): dotted-quad IPv4 without leading zeros,
 * RFC 4291 IPv6 without zone id. IPv4-mapped IPv6 (::ffff:a.b.c.d) comes back as IPv4.
 * Returns false (out.v = 0) for anything else.
 */
export function parseIpInto(s: string, out: IpScratch): boolean {
  out.v = 0;
  if (s.length <= 15 && s.indexOf(':') < 0) {
    const n = parseV4(s, 0, s.length);
    if (n < 0) return false;
    out.v = 4;
    out.n = n;
    return true;
  }
  if (!parseV6Groups(s)) return false;
  const g = groups;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    out.v = 4;
    out.n = (g[6] as number) * 65536 + (g[7] as number);
    return true;
  }
  for (let k = 0; k < 4; k++) out.w[k] = (g[2 * k] as number) * 65536 + (g[2 * k + 1] as number);
  out.v = 6;
  return true;
}

/** parseIpInto returning a new ParsedIp, or null (tests, tools, the admin side). */
export function parseIp(s: string): ParsedIp | null {
  const out = ipScratch();
  if (!parseIpInto(s, out)) return null;
  return out.v === 4 ? { v: 4, n: out.n } : { v: 6, w: out.w };
}

/** Canonical text for other readers (maxmind): dotted quad, or eight uncompressed hex groups. */
export function formatIp(ip: ParsedIp): string {
  if (ip.v === 4) return `${ip.n >>> 24}.${(ip.n >>> 16) & 255}.${(ip.n >>> 8) & 255}.${ip.n & 255}`;
  const w = ip.w;
  const h = (x: number): string => x.toString(16);
  return `${h((w[0] as number) >>> 16)}:${h((w[0] as number) & 0xffff)}:${h((w[1] as number) >>> 16)}:${h((w[1] as number) & 0xffff)}:${h((w[2] as number) >>> 16)}:${h((w[2] as number) & 0xffff)}:${h((w[3] as number) >>> 16)}:${h((w[3] as number) & 0xffff)}`;
}

