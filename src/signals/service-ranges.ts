// Per-service published ranges (crawlers, uptime monitors: src/signals/bot-services.ts) as
// one lookup structure of the same kind as the published IP ranges (ip-ranges.ts): sorted,
// disjoint IPv4 and IPv6 intervals in typed arrays, found by binary search
// (ip-intervals.ts). Where ip-ranges.ts keeps a byte of category bits per interval, this
// keeps the index of a set of services (their ranges overlap: Google's crawlers share
// blocks); the sets are bit sets of `words` 32-bit words each. Built once on the main
// thread into shared memory, wrapped by every lookup thread as is. No allocation per lookup.
import type { ParsedIp } from './ip-address.ts';
import { cmp128, lastStartV4, lastStartV6 } from './ip-intervals.ts';
import type { Cidr } from './ip-ranges.ts';

/** Most services one structure holds (a bit set of 32 words). */
export const MAX_SERVICES = 1024;

export interface CompiledServiceRanges {
  /** Services the bit sets are sized for. */
  services: number;
  /** 32-bit words per set. */
  words: number;
  v4Start: Uint32Array;
  v4End: Uint32Array;
  v4Set: Uint16Array;
  /** Four words per interval, most significant first. */
  v6Start: Uint32Array;
  v6End: Uint32Array;
  v6Set: Uint16Array;
  /** Set i is sets[i * words .. + words). */
  sets: Uint32Array;
}

function alloc<T extends Uint32Array | Uint16Array>(Kind: { new (b: ArrayBufferLike): T; BYTES_PER_ELEMENT: number }, n: number, shared: boolean): T {
  const bytes = n * Kind.BYTES_PER_ELEMENT;
  return new Kind(shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes));
}

interface Interval<B> {
  start: B;
  /** Exclusive. */
  end: B;
  set: number;
}

/** Splits at every boundary; each piece carries the set of services covering it (as a key into `sets`). */
function sweep<B extends number | bigint>(
  starts: B[],
  ends: B[],
  owners: number[],
  services: number,
  cmp: (a: B, b: B) => number,
  next: (x: B) => B,
  sets: Map<string, number>,
  setWords: number[][],
  words: number,
): Array<Interval<B>> {
  type Ev = { at: B; service: number; delta: 1 | -1 };
  const evs: Ev[] = [];
  for (let i = 0; i < starts.length; i++) {
    evs.push({ at: starts[i]!, service: owners[i]!, delta: 1 }, { at: next(ends[i]!), service: owners[i]!, delta: -1 });
  }
  evs.sort((a, b) => cmp(a.at, b.at));
  const count = new Int32Array(services);
  const bits = new Uint32Array(words);
  const out: Array<Interval<B>> = [];
  let k = 0;
  while (k < evs.length) {
    const at = evs[k]!.at;
    while (k < evs.length && cmp(evs[k]!.at, at) === 0) {
      const e = evs[k++]!;
      const c = (count[e.service]! += e.delta);
      if (c > 0) bits[e.service >>> 5]! |= 1 << (e.service & 31);
      else bits[e.service >>> 5]! &= ~(1 << (e.service & 31));
    }
    if (k >= evs.length) break;
    const to = evs[k]!.at;
    let any = false;
    for (let w = 0; w < words; w++) if (bits[w] !== 0) any = true;
    if (!any) continue;
    const key = bits.join(',');
    let set = sets.get(key);
    if (set === undefined) {
      set = setWords.length;
      sets.set(key, set);
      setWords.push([...bits]);
    }
    const last = out[out.length - 1];
    if (last && last.set === set && cmp(last.end, at) === 0) last.end = to;
    else out.push({ start: at, end: to, set });
  }
  return out;
}

/** Collects CIDRs per service index, then builds the lookup arrays. */
export class ServiceRangeBuilder {
  private readonly s4: number[] = [];
  private readonly e4: number[] = [];
  private readonly o4: number[] = [];
  private readonly s6: bigint[] = [];
  private readonly e6: bigint[] = [];
  private readonly o6: number[] = [];

  constructor(readonly services: number) {
    if (!Number.isInteger(services) || services < 0 || services > MAX_SERVICES) throw new Error(`${services} services: at most ${MAX_SERVICES}`);
  }

  get size(): number {
    return this.o4.length + this.o6.length;
  }

  add(cidr: Cidr, service: number): void {
    if (!(service >= 0 && service < this.services)) throw new Error(`service index ${service} out of range`);
    if (cidr.v === 4) {
      this.s4.push(cidr.start);
      this.e4.push(cidr.end);
      this.o4.push(service);
    } else {
      this.s6.push(cidr.start);
      this.e6.push(cidr.end);
      this.o6.push(service);
    }
  }

  build(opts: { shared?: boolean } = {}): CompiledServiceRanges {
    const shared = opts.shared ?? false;
    const words = Math.max(1, Math.ceil(this.services / 32));
    const sets = new Map<string, number>();
    const setWords: number[][] = [];
    const v4 = sweep(this.s4, this.e4, this.o4, this.services, (a, b) => a - b, (x) => x + 1, sets, setWords, words);
    const v6 = sweep(this.s6, this.e6, this.o6, this.services, (a, b) => (a < b ? -1 : a > b ? 1 : 0), (x) => x + 1n, sets, setWords, words);
    if (setWords.length > 0xffff) throw new Error(`${setWords.length} distinct overlaps of services: too many`);
    const out: CompiledServiceRanges = {
      services: this.services,
      words,
      v4Start: alloc(Uint32Array, v4.length, shared),
      v4End: alloc(Uint32Array, v4.length, shared),
      v4Set: alloc(Uint16Array, v4.length, shared),
      v6Start: alloc(Uint32Array, v6.length * 4, shared),
      v6End: alloc(Uint32Array, v6.length * 4, shared),
      v6Set: alloc(Uint16Array, v6.length, shared),
      sets: alloc(Uint32Array, setWords.length * words, shared),
    };
    v4.forEach((r, i) => {
      out.v4Start[i] = r.start;
      out.v4End[i] = r.end - 1;
      out.v4Set[i] = r.set;
    });
    const put = (x: bigint, into: Uint32Array, at: number) => {
      for (let k = 3; k >= 0; k--) {
        into[at + k] = Number(x & 0xffffffffn);
        x >>= 32n;
      }
    };
    v6.forEach((r, i) => {
      put(r.start, out.v6Start, i * 4);
      put(r.end - 1n, out.v6End, i * 4);
      out.v6Set[i] = r.set;
    });
    setWords.forEach((ws, i) => out.sets.set(ws, i * words));
    return out;
  }
}

/** Read-only lookups over a built structure. */
export class ServiceRanges {
  private constructor(private readonly c: CompiledServiceRanges) {}

  static readonly empty = new ServiceRanges(new ServiceRangeBuilder(0).build());

  static fromCompiled(c: CompiledServiceRanges): ServiceRanges {
    if (c.v4Start.length !== c.v4Set.length || c.v4End.length !== c.v4Set.length) throw new Error('IPv4 service range arrays differ in length');
    if (c.v6Start.length !== c.v6Set.length * 4 || c.v6End.length !== c.v6Set.length * 4) throw new Error('IPv6 service range arrays differ in length');
    if (c.words < 1 || c.sets.length % c.words !== 0) throw new Error('service sets are not whole');
    return new ServiceRanges(c);
  }

  get services(): number {
    return this.c.services;
  }

  /** Number of disjoint intervals. */
  get size(): number {
    return this.c.v4Set.length + this.c.v6Set.length;
  }

  /** The set index of the interval holding the address, or -1 (then no service lists it). */
  setOf(ip: ParsedIp): number {
    const c = this.c;
    if (ip.v === 4) {
      const at = lastStartV4(c.v4Start, 0, c.v4Set.length, ip.n);
      return at >= 0 && ip.n <= c.v4End[at]! ? c.v4Set[at]! : -1;
    }
    const at = lastStartV6(c.v6Start, 0, 4, c.v6Set.length, ip.w);
    return at >= 0 && cmp128(c.v6End, at * 4, ip.w, 0) >= 0 ? c.v6Set[at]! : -1;
  }

  /** Whether set `set` (from setOf) holds service `service`. */
  inSet(set: number, service: number): boolean {
    if (set < 0 || service < 0 || service >= this.c.services) return false;
    return (this.c.sets[set * this.c.words + (service >>> 5)]! & (1 << (service & 31))) !== 0;
  }

  /** Whether the address is in a range of service `service`. */
  has(ip: ParsedIp, service: number): boolean {
    return this.inSet(this.setOf(ip), service);
  }
}
