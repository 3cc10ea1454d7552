// Published IP ranges (cloud providers, Tor exits, VPN lists, iCloud Private Relay) as a
// lookup structure: sorted, non-overlapping IPv4 and IPv6 intervals in typed arrays, each
// carrying a bit set of categories, found by binary search. Built once from CIDR lists
// (on the main thread, into shared memory), then wrapped by every lookup thread as is.
//
// Overlapping lists are expected (a Tor exit inside a cloud range, a VPN range inside a
// hosting range): the builder splits intervals at every boundary and ORs the categories,
// so one lookup answers every list at once.
import { parseIp, type ParsedIp } from './ip-address.ts';
import { cmp128, lastStartV4, lastStartV6 } from './ip-intervals.ts';

/**
 * `crawler`: an address a crawler operator publishes for its crawlers (src/signals/bot-services.ts).
 * Only lines that name no service carry it: a service's own ranges are in service-ranges.ts.
 */
export const RANGE_CATEGORIES = ['hosting', 'vpn', 'proxy', 'tor', 'relay', 'crawler'] as const;
export type RangeCategory = (typeof RANGE_CATEGORIES)[number];

/** Bit of each category in a lookup answer. */
export const RANGE_BIT: Readonly<Record<RangeCategory, number>> = Object.freeze({ hosting: 1, vpn: 2, proxy: 4, tor: 8, relay: 16, crawler: 32 });

export function isRangeCategory(s: string): s is RangeCategory {
  return (RANGE_CATEGORIES as readonly string[]).includes(s);
}

/**
 * Shortest prefixes accepted: a published list never covers a /7 or an IPv6 /15 (the
 * largest cloud blocks are IPv4 /10–/11 and IPv6 /24–/28), and a garbage line such as
 * `0.0.0.0/0` must not turn the whole internet into a data center.
 */
export const MIN_PREFIX = Object.freeze({ 4: 8, 6: 16 });

export type Cidr = { v: 4; start: number; end: number } | { v: 6; start: bigint; end: bigint };

const V6_MAX = (1n << 128n) - 1n;

function v6Value(w: Uint32Array): bigint {
  return (BigInt(w[0]!) << 96n) | (BigInt(w[1]!) << 64n) | (BigInt(w[2]!) << 32n) | BigInt(w[3]!);
}

/**
 * Parses `a.b.c.d/n`, `x:y::/n` or a bare address (a /32 or /128). Host bits below the
 * prefix are cleared (`10.0.0.1/24` is `10.0.0.0/24`). Returns a sentence on error.
 */
export function parseCidr(text: string): Cidr | string {
  const s = text.trim();
  if (s.length === 0 || s.length > 64) return 'not a CIDR';
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const ip = parseIp(addr);
  if (ip === null) return `"${addr.slice(0, 45)}" is not an IP address`;
  const written6 = addr.indexOf(':') >= 0;
  const max = written6 ? 128 : 32;
  let bits = max;
  if (slash >= 0) {
    const p = s.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p)) return `prefix "/${p.slice(0, 8)}" is not a number`;
    bits = Number(p);
    if (bits > max) return `prefix /${bits} is longer than ${max}`;
  }
  if (ip.v === 4) {
    // ::ffff:a.b.c.d/n comes back as IPv4: its prefix counts the 96 mapped bits.
    if (written6) {
      if (bits < 96) return `prefix /${bits} reaches outside the IPv4-mapped range`;
      bits -= 96;
    }
    if (bits < MIN_PREFIX[4]) return `prefix /${bits} is broader than /${MIN_PREFIX[4]}`;
    const size = 2 ** (32 - bits);
    const start = ip.n - (ip.n % size);
    return { v: 4, start, end: start + size - 1 };
  }
  if (bits < MIN_PREFIX[6]) return `prefix /${bits} is broader than /${MIN_PREFIX[6]}`;
  const host = (1n << BigInt(128 - bits)) - 1n;
  const start = v6Value(ip.w) & (V6_MAX ^ host);
  return { v: 6, start, end: start | host };
}

/** The typed arrays of a built set; backed by SharedArrayBuffer when built `shared`. */
export interface CompiledRanges {
  v4Start: Uint32Array;
  v4End: Uint32Array;
  v4Bits: Uint8Array;
  /** Four words per interval, most significant first. */
  v6Start: Uint32Array;
  v6End: Uint32Array;
  v6Bits: Uint8Array;
}

function alloc<T extends Uint32Array | Uint8Array>(Kind: { new (b: ArrayBufferLike): T; BYTES_PER_ELEMENT: number }, n: number, shared: boolean): T {
  const bytes = n * Kind.BYTES_PER_ELEMENT;
  return new Kind(shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
}

/**
 * Splits intervals at every boundary and ORs categories. Boundaries are sorted once; each
 * input interval adds +1/−1 to its category's counter at its start and just past its end.
 */
function sweep<B extends number | bigint>(
  starts: B[],
  ends: B[],
  bits: number[],
  cmp: (a: B, b: B) => number,
  next: (x: B) => B,
): Array<{ start: B; end: B; bits: number }> {
  const bounds: B[] = [];
  for (let i = 0; i < starts.length; i++) bounds.push(starts[i]!, next(ends[i]!));
  bounds.sort(cmp);
  const uniq: B[] = [];
  for (const b of bounds) if (uniq.length === 0 || cmp(uniq[uniq.length - 1]!, b) !== 0) uniq.push(b);
  const indexOf = (x: B): number => {
    let lo = 0;
    let hi = uniq.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cmp(uniq[mid]!, x) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const cats = RANGE_CATEGORIES.length;
  const delta = new Int32Array(uniq.length * cats);
  for (let i = 0; i < starts.length; i++) {
    const a = indexOf(starts[i]!);
    const b = indexOf(next(ends[i]!));
    for (let c = 0; c < cats; c++) {
      if ((bits[i]! & (1 << c)) === 0) continue;
      delta[a * cats + c]!++;
      delta[b * cats + c]!--;
    }
  }
  const out: Array<{ start: B; end: B; bits: number }> = [];
  const count = new Int32Array(cats);
  for (let k = 0; k + 1 < uniq.length; k++) {
    let mask = 0;
    for (let c = 0; c < cats; c++) {
      count[c]! += delta[k * cats + c]!;
      if (count[c]! > 0) mask |= 1 << c;
    }
    if (mask === 0) continue;
    const start = uniq[k]!;
    const last = out[out.length - 1];
    // Adjacent intervals with the same categories become one.
    // Ends are exclusive here (the caller subtracts one): adjacent means last.end === start.
    if (last && last.bits === mask && cmp(last.end, start) === 0) {
      last.end = uniq[k + 1]!;
    } else {
      out.push({ start, end: uniq[k + 1]!, bits: mask });
    }
  }
  return out;
}

/** Collects CIDRs with their categories, then builds the lookup arrays. */
export class RangeSetBuilder {
  private readonly s4: number[] = [];
  private readonly e4: number[] = [];
  private readonly b4: number[] = [];
  private readonly s6: bigint[] = [];
  private readonly e6: bigint[] = [];
  private readonly b6: number[] = [];

  get size(): number {
    return this.s4.length + this.s6.length;
  }

  /** Adds a parsed CIDR. */
  add(cidr: Cidr, category: RangeCategory): void {
    const bit = RANGE_BIT[category];
    if (cidr.v === 4) {
      this.s4.push(cidr.start);
      this.e4.push(cidr.end);
      this.b4.push(bit);
    } else {
      this.s6.push(cidr.start);
      this.e6.push(cidr.end);
      this.b6.push(bit);
    }
  }

  build(opts: { shared?: boolean } = {}): CompiledRanges {
    const shared = opts.shared ?? false;
    // Exclusive upper bounds during the sweep: 2^32 and 2^128 are representable in both types.
    const v4 = sweep(this.s4, this.e4, this.b4, (a, b) => a - b, (x) => x + 1);
    const v6 = sweep(this.s6, this.e6, this.b6, (a, b) => (a < b ? -1 : a > b ? 1 : 0), (x) => x + 1n);
    const out: CompiledRanges = {
      v4Start: alloc(Uint32Array, v4.length, shared),
      v4End: alloc(Uint32Array, v4.length, shared),
      v4Bits: alloc(Uint8Array, v4.length, shared),
      v6Start: alloc(Uint32Array, v6.length * 4, shared),
      v6End: alloc(Uint32Array, v6.length * 4, shared),
      v6Bits: alloc(Uint8Array, v6.length, shared),
    };
    v4.forEach((r, i) => {
      out.v4Start[i] = r.start;
      out.v4End[i] = r.end - 1;
      out.v4Bits[i] = r.bits;
    });
    const words = (x: bigint, into: Uint32Array, at: number) => {
      for (let k = 3; k >= 0; k--) {
        into[at + k] = Number(x & 0xffffffffn);
        x >>= 32n;
      }
    };
    v6.forEach((r, i) => {
      words(r.start, out.v6Start, i * 4);
      words(r.end - 1n, out.v6End, i * 4);
      out.v6Bits[i] = r.bits;
    });
    return out;
  }
}

/** Read-only lookups over a built set. No allocation per lookup. */
export class IpRanges {
  private constructor(private readonly c: CompiledRanges) {}

  static readonly empty = new IpRanges(new RangeSetBuilder().build());

  /** Wraps arrays built by RangeSetBuilder (possibly in another thread): O(1). */
  static fromCompiled(c: CompiledRanges): IpRanges {
    if (c.v4Start.length !== c.v4Bits.length || c.v4End.length !== c.v4Bits.length) throw new Error('IPv4 range arrays differ in length');
    if (c.v6Start.length !== c.v6Bits.length * 4 || c.v6End.length !== c.v6Bits.length * 4) throw new Error('IPv6 range arrays differ in length');
    return new IpRanges(c);
  }

  /** Whether any interval carries one of the category bits in `mask` (RANGE_BIT): O(intervals), at load. */
  hasAny(mask: number): boolean {
    for (const b of this.c.v4Bits) if ((b & mask) !== 0) return true;
    for (const b of this.c.v6Bits) if ((b & mask) !== 0) return true;
    return false;
  }

  /** Number of disjoint intervals (after merging). */
  get size(): number {
    return this.c.v4Bits.length + this.c.v6Bits.length;
  }

  /** Category bits (RANGE_BIT) of an IPv4 address given as uint32; 0 when in no range. */
  lookupV4(n: number): number {
    const { v4Start: s, v4End: e, v4Bits: b } = this.c;
    const at = lastStartV4(s, 0, b.length, n);
    return at >= 0 && n <= e[at]! ? b[at]! : 0;
  }

  /** Category bits of an IPv6 address given as four 32-bit words, most significant first. */
  lookupV6(w: ArrayLike<number>): number {
    const { v6Start: s, v6End: e, v6Bits: b } = this.c;
    const at = lastStartV6(s, 0, 4, b.length, w);
    return at >= 0 && cmp128(e, at * 4, w, 0) >= 0 ? b[at]! : 0;
  }

  /** Category bits of a parsed address (ip.ts parseIp). */
  lookup(ip: ParsedIp): number {
    return ip.v === 4 ? this.lookupV4(ip.n) : this.lookupV6(ip.w);
  }
}

/** Category names of a bit set, for logs and the explain tool. */
export function rangeCategoryNames(bits: number): RangeCategory[] {
  return RANGE_CATEGORIES.filter((c) => (bits & RANGE_BIT[c]) !== 0);
}

// ---------------------------------------------------------------------------------------
// The on-disk list: <data-dir>/ranges/*.txt, one `<cidr> <category>` per line, `#` comments.
// Written by `ivtd data update`; an operator may add files of their own in the same form.

/** Longest line considered; anything longer is an error, not a slow parse. */
const MAX_LINE = 200;

/** A service name in a ranges file's third field (`<cidr> crawler <service>`): src/signals/bot-services.ts serviceSlug. */
const SERVICE_SLUG = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/**
 * Adds every line of one ranges file to `into`; throws an Error naming file:line on the first
 * bad line. `counts`, when given, gains the entries added per category. A `crawler` line may
 * name the service its ranges are of (`<cidr> crawler <service>`, the service's slug): such
 * a line goes to `onService` instead of `into` (without it, the line is an error).
 */
export function addRangeList(
  into: RangeSetBuilder,
  text: string,
  fileName: string,
  counts?: Partial<Record<RangeCategory, number>>,
  onService?: (cidr: Cidr, service: string) => void,
): number {
  let added = 0;
  let lineNo = 0;
  let from = 0;
  while (from <= text.length) {
    let to = text.indexOf('\n', from);
    if (to < 0) to = text.length;
    lineNo++;
    let line = text.slice(from, Math.min(to, from + MAX_LINE + 1));
    from = to + 1;
    const hash = line.indexOf('#');
    if (hash >= 0) line = line.slice(0, hash);
    line = line.trim();
    if (line === '') continue;
    const where = `${fileName}:${lineNo}`;
    if (line.length > MAX_LINE) throw new Error(`${where}: line longer than ${MAX_LINE} characters`);
    const parts = line.split(/[ \t]+/);
    const named = parts.length === 3 && onService !== undefined;
    if (parts.length !== 2 && !named) throw new Error(`${where}: expected "<cidr> <category>"${onService ? ' or "<cidr> crawler <service>"' : ''}, got "${line.slice(0, 80)}"`);
    const cat = parts[1]!.toLowerCase();
    if (!isRangeCategory(cat)) throw new Error(`${where}: unknown category "${parts[1]}" (expected one of ${RANGE_CATEGORIES.join(', ')})`);
    if (named && cat !== 'crawler') throw new Error(`${where}: only crawler ranges name a service (got "${line.slice(0, 80)}")`);
    if (named && !SERVICE_SLUG.test(parts[2]!)) throw new Error(`${where}: "${parts[2]!.slice(0, 64)}" is not a service name (lowercase letters, digits and -, as \`ivtd data status\` lists them)`);
    const cidr = parseCidr(parts[0]!);
    if (typeof cidr === 'string') throw new Error(`${where}: ${cidr}`);
    if (named) onService(cidr, parts[2]!);
    else into.add(cidr, cat);
    if (counts !== undefined) counts[cat] = (counts[cat] ?? 0) + 1;
    added++;
  }
  return added;
}

/** Text of one CIDR for the on-disk list. */
export function formatCidr(c: Cidr): string {
  if (c.v === 4) {
    const size = c.end - c.start + 1;
    const bits = 32 - Math.round(Math.log2(size));
    const n = c.start;
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/${bits}`;
  }
  let size = c.end - c.start + 1n;
  let host = 0;
  while (size > 1n) {
    size >>= 1n;
    host++;
  }
  const groups: string[] = [];
  for (let k = 7; k >= 0; k--) groups.push(((c.start >> BigInt(k * 16)) & 0xffffn).toString(16));
  return `${groups.join(':')}/${128 - host}`;
}
