// Supply chain (schain) for the pre-bid lookup: parse the OpenRTB SupplyChain string form
// and verify its nodes against IAB sellers.json records.
//
// String form (IAB supplychainobject.md, "Serialization ... into a URL parameter"):
//   <ver>,<complete>!<asi>,<sid>,<hp>,<rid>,<name>,<domain>[,<ext>]!<node>...
// Decisions:
// - Callers send either that form (literal `,`/`!`, each field URL-encoded so a comma in a
//   name is %2C) or the whole value URL-encoded once more (delimiters %2C/%21, fields
//   double-encoded). Every valid chain has a literal comma in the first form, so a value
//   without one is decoded once before splitting. Fields are then decoded with
//   decodeURIComponent semantics (RFC 3986: `+` stays `+`).
// - Trailing optional fields may be omitted (`asi,sid,hp` is a whole node). A 7th field is
//   the spec's exchange-specific `ext`: accepted if it decodes, not kept. More than 7 fields
//   is an error.
// - Errors are stable codes (SCHAIN_ERRORS) so they can be counted; the result objects for
//   errors are shared and frozen, so a bad string costs no allocation beyond the scan.

export interface SchainNode {
  asi: string;
  sid: string;
  hp: 0 | 1;
  rid: string;
  name: string;
  domain: string;
}

export interface SupplyChain {
  ver: string;
  complete: 0 | 1;
  nodes: SchainNode[];
}

export type SchainResult = { ok: true; chain: SupplyChain } | { ok: false; error: string };

export const SCHAIN_MAX_NODES = 20;
/** The whole lookup request is capped at 8 KB (spec 4.4), so no valid schain is longer. */
export const SCHAIN_MAX_LENGTH = 8192;
const NODE_MAX_FIELDS = 7;
const NODE_MIN_FIELDS = 3;

export const SCHAIN_ERRORS = [
  'empty',
  'too_long',
  'bad_encoding',
  'bad_header',
  'bad_version',
  'bad_complete',
  'no_nodes',
  'too_many_nodes',
  'empty_node',
  'node_too_few_fields',
  'node_too_many_fields',
  'empty_asi',
  'empty_sid',
  'bad_hp',
] as const;
export type SchainError = (typeof SCHAIN_ERRORS)[number];

const FAILURES = new Map<SchainError, SchainResult>(
  SCHAIN_ERRORS.map((e) => [e, Object.freeze({ ok: false as const, error: e })]),
);
function fail(error: SchainError): SchainResult {
  return FAILURES.get(error)!;
}

const VERSION = /^\d{1,3}\.\d{1,3}$/;

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

/** Percent-decode, or null when the encoding is broken (bad %XX or invalid UTF-8). */
function decode(s: string): string | null {
  const pct = s.indexOf('%');
  if (pct === -1) return s;
  // Cheap syntax check first, so the common broken case does not cost an exception.
  for (let i = pct; i < s.length; i++) {
    if (s.charCodeAt(i) !== 0x25) continue;
    if (i + 2 >= s.length || !isHex(s.charCodeAt(i + 1)) || !isHex(s.charCodeAt(i + 2))) return null;
    i += 2;
  }
  try {
    return decodeURIComponent(s);
  } catch {
    return null; // well-formed %XX that is not UTF-8, e.g. %FF
  }
}

function isBlank(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09) return false;
  }
  return true;
}

/** Parse one node from s[start, end); returns the node or an error code. */
function parseNode(s: string, start: number, end: number): SchainNode | SchainError {
  if (start === end) return 'empty_node';
  // At most 7 fields, so named locals instead of a split() array.
  let asi = '';
  let sid = '';
  let hp = '';
  let rid = '';
  let name = '';
  let domain = '';
  let field = 0;
  let from = start;
  while (from <= end) {
    let to = s.indexOf(',', from);
    if (to === -1 || to > end) to = end;
    if (field === NODE_MAX_FIELDS) return 'node_too_many_fields';
    const value = decode(s.slice(from, to));
    if (value === null) return 'bad_encoding';
    switch (field) {
      case 0: asi = value; break;
      case 1: sid = value; break;
      case 2: hp = value; break;
      case 3: rid = value; break;
      case 4: name = value; break;
      case 5: domain = value; break;
      default: break; // ext: validated by decoding, not kept
    }
    field++;
    from = to + 1;
  }
  if (field < NODE_MIN_FIELDS) return 'node_too_few_fields';
  if (isBlank(asi)) return 'empty_asi';
  if (isBlank(sid)) return 'empty_sid';
  if (hp !== '0' && hp !== '1') return 'bad_hp';
  return { asi, sid, hp: hp === '1' ? 1 : 0, rid, name, domain };
}

/** Parse the raw (still percent-encoded) `schain` query value. Never throws. */
export function parseSchain(raw: string): SchainResult {
  if (raw.length === 0) return fail('empty');
  if (raw.length > SCHAIN_MAX_LENGTH) return fail('too_long');
  let s = raw;
  if (s.indexOf(',') === -1) {
    const once = decode(s);
    if (once === null) return fail('bad_encoding');
    s = once;
  }

  const bang = s.indexOf('!');
  const headerEnd = bang === -1 ? s.length : bang;
  const comma = s.indexOf(',');
  if (comma === -1 || comma >= headerEnd) return fail('bad_header');
  const extra = s.indexOf(',', comma + 1);
  if (extra !== -1 && extra < headerEnd) return fail('bad_header');
  const ver = decode(s.slice(0, comma));
  const complete = decode(s.slice(comma + 1, headerEnd));
  if (ver === null || complete === null) return fail('bad_encoding');
  if (!VERSION.test(ver)) return fail('bad_version');
  if (complete !== '0' && complete !== '1') return fail('bad_complete');
  if (bang === -1) return fail('no_nodes');

  const nodes: SchainNode[] = [];
  let start = bang + 1;
  for (;;) {
    let end = s.indexOf('!', start);
    if (end === -1) end = s.length;
    if (nodes.length === SCHAIN_MAX_NODES) return fail('too_many_nodes');
    const node = parseNode(s, start, end);
    if (typeof node === 'string') return fail(node);
    nodes.push(node);
    if (end === s.length) break;
    start = end + 1;
  }
  return { ok: true, chain: { ver, complete: complete === '1' ? 1 : 0, nodes } };
}

// ---- sellers.json records --------------------------------------------------------------

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

  sellerIds(asi: string): ReadonlySet<string> | undefined {
    return this.lookup(asi);
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
