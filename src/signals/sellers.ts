// Sellers records for `schain.verified`: seller IDs per advertising system (asi domain),
// from IAB sellers.json files. The main thread parses the files once and compiles them into
// an index of sorted 64-bit keys (one per domain, one per domain and seller ID) in shared
// memory; every lookup thread searches that same index, so a sellers.json with a million
// entries costs its keys once per process, not a Set per thread. A key is a hash: two
// names share one with probability 2^-64.
import { HASH, hashAdd, hashAddNumber, hashBegin, hashEnd, hashString } from '../memory/hash.ts';
import type { SupplyChain } from './schain.ts';
import { withoutBom } from '../base/text.ts';

const INDEX_MAGIC = 0x534c4c53; // "SLLS"
const INDEX_HEADER = 4;
const SELLERS_SEED = 0x5e11e5;

function domainKey(domain: string): void {
  hashString(domain, SELLERS_SEED);
}

function sellerKey(domain: string, sid: string): void {
  hashBegin(SELLERS_SEED);
  hashAdd(domain);
  hashAddNumber(0);
  hashAdd(sid);
  hashEnd();
}

/** Sorted (hi, lo) pairs, no duplicates. */
function sortedKeys(keys: Array<[number, number]>): Uint32Array {
  keys.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: number[] = [];
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (i > 0 && keys[i - 1]![0] === k[0] && keys[i - 1]![1] === k[1]) continue;
    out.push(k[0], k[1]);
  }
  return Uint32Array.from(out);
}

/** Binary search for (hi, lo) in `count` sorted pairs starting at word `from`. */
function contains(u: Uint32Array, from: number, count: number, hi: number, lo: number): boolean {
  let a = 0, b = count - 1;
  while (a <= b) {
    const m = (a + b) >>> 1;
    const h = u[from + 2 * m]!, l = u[from + 2 * m + 1]!;
    if (h === hi && l === lo) return true;
    if (h < hi || (h === hi && l < lo)) a = m + 1;
    else b = m - 1;
  }
  return false;
}

const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

function sellerIdOf(entry: unknown): string | null {
  if (entry === null || typeof entry !== 'object') return null;
  const id = (entry as { seller_id?: unknown }).seller_id;
  // The spec says string; numeric ids are common enough in the wild to accept as their decimal text.
  if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  if (typeof id !== 'string') return null;
  const trimmed = id.trim();
  return trimmed.length > 0 ? trimmed : null;
}

/**
 * Seller ids per advertising system (asi domain), from IAB sellers.json files.
 *
 * A real deployment refreshes these files from each exchange's https://<domain>/sellers.json
 * and drops them in `<data-dir>/sellers/` as `<domain>.json`; a reload builds a new registry
 * and swaps it in. Immutable once built, so lookup threads can share it without locks.
 */
export class SellersRegistry {
  private readonly words: Uint32Array;
  private readonly domainCount: number;
  private readonly pairCount: number;
  /** Domain names (only where the files were parsed: the main thread, tests). */
  private readonly names: readonly string[];

  private constructor(index: Uint32Array, names: readonly string[]) {
    if (index.length < INDEX_HEADER || index[0] !== INDEX_MAGIC) throw new Error('not a sellers index');
    this.words = index;
    this.domainCount = index[1]!;
    this.pairCount = index[2]!;
    if (index.length !== INDEX_HEADER + 2 * (this.domainCount + this.pairCount)) throw new Error('sellers index is truncated');
    this.names = names;
  }

  static empty(): SellersRegistry {
    return SellersRegistry.compile(new Map());
  }

  /** Compiles parsed records into the shared index. */
  private static compile(byDomain: ReadonlyMap<string, ReadonlySet<string>>): SellersRegistry {
    const domains: Array<[number, number]> = [];
    const pairs: Array<[number, number]> = [];
    for (const [domain, ids] of byDomain) {
      domainKey(domain);
      domains.push([HASH[0]!, HASH[1]!]);
      for (const id of ids) {
        sellerKey(domain, id);
        pairs.push([HASH[0]!, HASH[1]!]);
      }
    }
    const d = sortedKeys(domains);
    const p = sortedKeys(pairs);
    const index = new Uint32Array(new SharedArrayBuffer((INDEX_HEADER + d.length + p.length) * 4));
    index.set([INDEX_MAGIC, d.length / 2, p.length / 2, 0]);
    index.set(d, INDEX_HEADER);
    index.set(p, INDEX_HEADER + d.length);
    return new SellersRegistry(index, [...byDomain.keys()].sort());
  }

  /** A lookup thread's registry: the main thread's index, shared, not copied. */
  static fromIndex(bytes: Uint8Array): SellersRegistry {
    return new SellersRegistry(new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2), []);
  }

  /** The index's bytes (in shared memory), to hand to the lookup threads. */
  get index(): Uint8Array {
    return new Uint8Array(this.words.buffer, this.words.byteOffset, this.words.byteLength);
  }

  /** Seller IDs indexed (all domains). */
  get sellerCount(): number {
    return this.pairCount;
  }

  /**
   * Build from files named `<asi domain>.json`. Names not ending in `.json` are ignored (a
   * README may sit in the folder); a path prefix is dropped. A file that is not JSON, not an
   * object, has no `sellers` array, has a name that is not a domain, or repeats a domain is
   * reported in `errors` and skipped. Entries without a usable `seller_id` are skipped and
   * counted in `errors`; the rest of that file is kept, so one bad line in an exchange's
   * file does not unverify every chain through it.
   */
  static fromFiles(files: ReadonlyArray<{ name: string; text: string }>): {
    registry: SellersRegistry;
    errors: string[];
  } {
    const byDomain = new Map<string, ReadonlySet<string>>();
    const errors: string[] = [];
    for (const file of files) {
      const base = file.name.slice(file.name.lastIndexOf('/') + 1);
      if (!base.toLowerCase().endsWith('.json')) continue;
      const domain = base.slice(0, -'.json'.length).toLowerCase();
      if (!DOMAIN.test(domain)) {
        errors.push(`${file.name}: file name is not <domain>.json`);
        continue;
      }
      if (byDomain.has(domain)) {
        errors.push(`${file.name}: duplicate sellers file for ${domain}`);
        continue;
      }
      let doc: unknown;
      try {
        doc = JSON.parse(withoutBom(file.text));
      } catch (err) {
        errors.push(`${file.name}: not JSON (${(err as Error).message})`);
        continue;
      }
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
        errors.push(`${file.name}: not a JSON object`);
        continue;
      }
      const sellers = (doc as { sellers?: unknown }).sellers;
      if (!Array.isArray(sellers)) {
        errors.push(`${file.name}: no "sellers" array`);
        continue;
      }
      const ids = new Set<string>();
      let bad = 0;
      for (const entry of sellers) {
        const id = sellerIdOf(entry);
        if (id === null) bad++;
        else ids.add(id);
      }
      if (bad > 0) {
        errors.push(`${file.name}: ${bad} of ${sellers.length} sellers entries without a string seller_id skipped`);
      }
      byDomain.set(domain, ids);
    }
    return { registry: SellersRegistry.compile(byDomain), errors };
  }

  /** Number of advertising systems with records. */
  get size(): number {
    return this.domainCount;
  }

  /** Advertising-system domains with records, sorted (where the files were parsed). */
  domains(): string[] {
    return this.names.slice();
  }

  has(asi: string): boolean {
    domainKey(normalizeAsi(asi));
    return contains(this.words, INDEX_HEADER, this.domainCount, HASH[0]!, HASH[1]!);
  }

  /** Every node's asi has a sellers file and lists the node's sid as a seller_id. */
  verify(chain: SupplyChain): boolean {
    if (chain.nodes.length === 0) return false;
    const pairsAt = INDEX_HEADER + 2 * this.domainCount;
    for (const node of chain.nodes) {
      sellerKey(normalizeAsi(node.asi), node.sid.trim());
      if (!contains(this.words, pairsAt, this.pairCount, HASH[0]!, HASH[1]!)) return false;
    }
    return true;
  }
}

/** asi values are normally lowercase already: then this allocates nothing. */
function normalizeAsi(asi: string): string {
  for (let i = 0; i < asi.length; i++) {
    const c = asi.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || c === 0x20 || c === 0x09) return asi.trim().toLowerCase();
  }
  return asi;
}
