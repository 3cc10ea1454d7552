// Sellers records for `schain.verified`: seller IDs per advertising system (asi domain),
// from IAB sellers.json files.
import type { SupplyChain } from './schain.ts';

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
  private readonly byDomain: ReadonlyMap<string, ReadonlySet<string>>;

  private constructor(byDomain: ReadonlyMap<string, ReadonlySet<string>>) {
    this.byDomain = byDomain;
  }

  static empty(): SellersRegistry {
    return new SellersRegistry(new Map());
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
        doc = JSON.parse(file.text.charCodeAt(0) === 0xfeff ? file.text.slice(1) : file.text);
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
    return { registry: new SellersRegistry(byDomain), errors };
  }

  /** Number of advertising systems with records. */
  get size(): number {
    return this.byDomain.size;
  }

  /** Advertising-system domains with records, sorted. */
  domains(): string[] {
    return [...this.byDomain.keys()].sort();
  }

  has(asi: string): boolean {
    return this.lookup(asi) !== undefined;
  }

  /** Every node's asi has a sellers file and lists the node's sid as a seller_id. */
  verify(chain: SupplyChain): boolean {
    if (chain.nodes.length === 0) return false;
    for (const node of chain.nodes) {
      const ids = this.lookup(node.asi);
      if (ids === undefined || !ids.has(node.sid.trim())) return false;
    }
    return true;
  }

  // Exact key first: asi values are normally already lowercase, so this allocates nothing.
  private lookup(asi: string): ReadonlySet<string> | undefined {
    return this.byDomain.get(asi) ?? this.byDomain.get(asi.trim().toLowerCase());
  }
}
