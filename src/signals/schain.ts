// Supply chain (schain) for the pre-bid lookup: parse the OpenRTB SupplyChain string form.
// Verifying its nodes against sellers.json records is sellers.ts.
//
// String form (IAB supplychainobject.md, "Serialization ... into a URL parameter"):
//   <ver>,<complete>!<asi>,<sid>,<hp>,<rid>,<name>,<domain>[,<ext>]!<node>...
// Decisions:
// - Callers send either that form (literal `,`/`!`, each field URL-encoded so a comma in a
//   name is %2C) or the whole value URL-encoded once more (delimiters %2C/%21, fields
//   double-encoded). Every valid chain has a literal comma in the first form, so a value
//   without one is decoded once before splitting; so is a value holding an encoded percent
//   sign (%25): the caller encoded the already-encoded string once more (encodeURI-style,
//   commas left literal), and its fields must still decode after that. Fields are then decoded with
//   decodeURIComponent semantics (RFC 3986: `+` stays `+`).
// - Trailing optional fields may be omitted (`asi,sid,hp` is a whole node). A 7th field is
//   the spec's exchange-specific `ext`: accepted if it decodes, not kept. More than 7 fields
//   is an error.
// - Errors are stable codes (SCHAIN_ERRORS) so they can be counted; the result objects for
//   errors are shared and frozen, so a bad string costs no allocation beyond the scan.
import { percentDecode } from '../base/percent.ts';
import { Fields, keysOf, WHOLE, type Pruned } from '../base/shape.ts';

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

function isBlank(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09) return false;
  }
  return true;
}

/**
 * Parse one node from s[start, end); returns the node or an error code. `escaped`: s holds
 * a '%' (else its fields are taken as they are, with no decoding to try).
 */
function parseNode(s: string, start: number, end: number, escaped: boolean): SchainNode | SchainError {
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
    const value = escaped ? percentDecode(s.slice(from, to)) : s.slice(from, to);
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
  if (s.indexOf(',') === -1 || s.indexOf('%25') !== -1) {
    const once = percentDecode(s);
    if (once === null) return fail('bad_encoding');
    s = once;
  }

  const bang = s.indexOf('!');
  const headerEnd = bang === -1 ? s.length : bang;
  const comma = s.indexOf(',');
  if (comma === -1 || comma >= headerEnd) return fail('bad_header');
  const extra = s.indexOf(',', comma + 1);
  if (extra !== -1 && extra < headerEnd) return fail('bad_header');
  const ver = percentDecode(s.slice(0, comma));
  const complete = percentDecode(s.slice(comma + 1, headerEnd));
  if (ver === null || complete === null) return fail('bad_encoding');
  if (!VERSION.test(ver)) return fail('bad_version');
  if (complete !== '0' && complete !== '1') return fail('bad_complete');
  if (bang === -1) return fail('no_nodes');

  const nodes: SchainNode[] = [];
  const escaped = s.indexOf('%', bang) !== -1;
  let start = bang + 1;
  for (;;) {
    let end = s.indexOf('!', start);
    if (end === -1) end = s.length;
    if (nodes.length === SCHAIN_MAX_NODES) return fail('too_many_nodes');
    const node = parseNode(s, start, end, escaped);
    if (typeof node === 'string') return fail(node);
    nodes.push(node);
    if (end === s.length) break;
    start = end + 1;
  }
  return { ok: true, chain: { ver, complete: complete === '1' ? 1 : 0, nodes } };
}


/** What schainFromObject reads of a supply-chain object (part of the bid request's shape: src/prebid/ortb/map.ts). */
export const SCHAIN_NODE_SHAPE = { asi: WHOLE, sid: WHOLE, hp: WHOLE, rid: WHOLE, name: WHOLE, domain: WHOLE } as const;
export const SCHAIN_SHAPE = { ver: WHOLE, complete: WHOLE, nodes: [SCHAIN_NODE_SHAPE] } as const;
const CHAIN = keysOf(SCHAIN_SHAPE);
const NODE = keysOf(SCHAIN_NODE_SHAPE);

/**
 * The object form (OpenRTB 2.5 `source.ext.schain`, 2.6 `source.schain`) under the string
 * form's rules: `ver` d.d, `complete` 0 or 1, 1 to SCHAIN_MAX_NODES nodes, each with a
 * non-blank `asi` and `sid` and `hp` 0 or 1. Optional fields of another type than the
 * spec's (a numeric `rid`, say) are dropped, as `ext` is; a field of a wrong type that the
 * rules read fails like its malformed string: an object that is not one is 'bad_header'.
 * `value` is the object as read by SCHAIN_SHAPE (src/base/shape.ts). Never throws.
 */
export function schainFromObject(value: Pruned | undefined): SchainResult {
  if (!(value instanceof Fields)) return fail('bad_header');
  const o = value.at;
  const ver = o[CHAIN.ver];
  if (typeof ver !== 'string' || !VERSION.test(ver)) return fail('bad_version');
  const complete = o[CHAIN.complete];
  if (complete !== 0 && complete !== 1) return fail('bad_complete');
  const list = o[CHAIN.nodes];
  if (!Array.isArray(list) || list.length === 0) return fail('no_nodes');
  if (list.length > SCHAIN_MAX_NODES) return fail('too_many_nodes');
  const nodes: SchainNode[] = [];
  for (let i = 0; i < list.length; i++) {
    const n = list[i];
    if (!(n instanceof Fields)) return fail('empty_node');
    const f = n.at;
    const asi = f[NODE.asi], sid = f[NODE.sid], hp = f[NODE.hp];
    if (typeof asi !== 'string' || isBlank(asi)) return fail('empty_asi');
    if (typeof sid !== 'string' || isBlank(sid)) return fail('empty_sid');
    if (hp !== 0 && hp !== 1) return fail('bad_hp');
    nodes.push({ asi, sid, hp, rid: text(f[NODE.rid]), name: text(f[NODE.name]), domain: text(f[NODE.domain]) });
  }
  return { ok: true, chain: { ver, complete, nodes } };
}

function text(v: Pruned | undefined): string {
  return typeof v === 'string' ? v : '';
}
