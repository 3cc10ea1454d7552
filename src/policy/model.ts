// A customer's own policy: allow and deny entries and the two band thresholds. This file
// is the one place that says what an entry may be; the account API, the CLI, the
// dashboard's import and the store all go through parseEntry / parsePolicy, and every
// refusal names the field it is about (`entries[3].value`). docs/policy.md is the
// reference for people. Pure (no Node modules): the dashboard's CSV import runs it too.
import { parseIp } from '../signals/ip-address.ts';
import { quoted } from '../base/text.ts';
import { BAND_HIGH_MIN, BAND_MEDIUM_MIN } from '../signals/score.ts';
import { ACTIONS, ENTRY_KINDS, entryKey, type Action, type EntryKind, type Policy, type PolicyEntry } from '../base/policy-entry.ts';

// The shape, re-exported so that the policy's callers find the whole vocabulary here.
export { ACTIONS, ENTRY_KINDS, entryKey, type Action, type EntryKind, type Policy, type PolicyEntry };

/** The per-customer cap: entries in one policy (413 past it). */
export const MAX_ENTRIES = 100_000;
/** All ua_substring values of one policy together, in characters (413 past it). */
export const MAX_SUBSTRING_CHARS = 64 * 1024;
/** Longest value of each kind, in characters. */
export const MAX_VALUE_LENGTH: Readonly<Record<EntryKind, number>> = {
  ip: 43,
  ua: 1024,
  ua_substring: 256,
  app: 256,
  domain: 253,
  publisher: 256,
  seller: 253 + 1 + 256,
  ssai: 43,
};
/** Shortest UA substring: one or two characters would match nearly every UA. */
export const MIN_SUBSTRING_LENGTH = 3;
/** Bounds of the thresholds (inclusive); medium must stay below high. */
export const THRESHOLD_BOUNDS = { medium: { min: 0.05, max: 0.9 }, high: { min: 0.1, max: 0.99 } } as const;
export const DEFAULT_THRESHOLDS = { medium: BAND_MEDIUM_MIN, high: BAND_HIGH_MIN } as const;

/** A 422 (or 413 with `tooLarge`) about one field of the input. */
export class PolicyError extends Error {
  constructor(
    readonly field: string,
    message: string,
    readonly tooLarge = false,
  ) {
    super(message);
  }
}

const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
// C0 and C1 controls, DEL: never part of a UA or an identifier, and they break CSV and logs.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const SPACE = /\s/;

/** Parses `a.b.c.d[/n]` or an IPv6 `addr[/n]` into canonical text; throws PolicyError. */
function canonicalCidr(raw: string, field: string): string {
  const slash = raw.indexOf('/');
  const addr = slash < 0 ? raw : raw.slice(0, slash);
  const v = parseIp(addr) === null ? 0 : addr.includes(':') ? 6 : 4;
  if (v === 0) throw new PolicyError(field, `${quoted(raw)} is not an IP address or CIDR block (e.g. 192.0.2.0/24, 2001:db8::/32).`);
  const bits = v === 4 ? 32 : 128;
  let len = bits;
  if (slash >= 0) {
    const p = raw.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > bits) throw new PolicyError(field, `${quoted(raw)}: the prefix length must be a whole number from 0 to ${bits}.`);
    len = Number(p);
  }
  const n = ipToBigInt(addr, v);
  const hostMask = (1n << BigInt(bits - len)) - 1n;
  if ((n & hostMask) !== 0n) {
    throw new PolicyError(field, `${quoted(raw)} has bits set past its /${len} prefix; write the block's first address, ${bigIntToIp(n & ~hostMask, v)}/${len}.`);
  }
  const text = bigIntToIp(n, v);
  return len === bits ? text : `${text}/${len}`;
}

/** An address (already checked by isIP) as a number. IPv4-mapped IPv6 stays IPv6 here. */
export function ipToBigInt(addr: string, v: 4 | 6): bigint {
  if (v === 4) return addr.split('.').reduce((a, o) => (a << 8n) | BigInt(Number(o)), 0n);
  let s = addr;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const n = ipToBigInt(dotted[1]!, 4);
    s = s.slice(0, -dotted[1]!.length) + ((n >> 16n) & 0xffffn).toString(16) + ':' + (n & 0xffffn).toString(16);
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...new Array(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n);
}

export function bigIntToIp(n: bigint, v: 4 | 6): string {
  if (v === 4) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
  const g: string[] = [];
  for (let i = 7; i >= 0; i--) g.push(((n >> BigInt(i * 16)) & 0xffffn).toString(16));
  // RFC 5952: the longest run of two or more zero groups becomes "::".
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === '0') j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  if (best < 0) return g.join(':');
  return `${g.slice(0, best).join(':')}::${g.slice(best + bestLen).join(':')}`;
}

/** Checks one entry's value and returns it in its stored form; throws PolicyError naming `field`. */
export function normalizeValue(kind: EntryKind, raw: unknown, field: string): string {
  if (typeof raw !== 'string') throw new PolicyError(field, `${field} must be a string.`);
  const max = MAX_VALUE_LENGTH[kind];
  if (raw.length === 0) throw new PolicyError(field, `${field} is empty.`);
  if (raw.length > max) throw new PolicyError(field, `${field} is ${raw.length} characters; a ${kind} entry is at most ${max}.`);
  if (!raw.isWellFormed()) throw new PolicyError(field, `${field} holds a lone UTF-16 surrogate; send valid Unicode text.`);
  if (CONTROL.test(raw)) throw new PolicyError(field, `${field} holds a control character (tab, newline, …); remove it.`);
  switch (kind) {
    case 'ip':
    case 'ssai':
      return canonicalCidr(raw.trim(), field);
    case 'ua':
      return raw;
    case 'ua_substring':
      if (raw.length < MIN_SUBSTRING_LENGTH) throw new PolicyError(field, `${field}: a UA substring needs at least ${MIN_SUBSTRING_LENGTH} characters (shorter ones match nearly every UA).`);
      return raw;
    case 'app':
    case 'publisher':
      if (SPACE.test(raw)) throw new PolicyError(field, `${field} holds white space; ${kind} identifiers have none.`);
      return raw;
    case 'domain': {
      const d = raw.trim().toLowerCase().replace(/\.$/, '');
      if (!DOMAIN.test(d)) throw new PolicyError(field, `${quoted(raw)} is not a domain name (e.g. example.com; letters, digits, hyphens and dots).`);
      return d;
    }
    case 'seller': {
      const colon = raw.indexOf(':');
      const asi = (colon < 0 ? raw : raw.slice(0, colon)).trim().toLowerCase();
      const sid = colon < 0 ? '' : raw.slice(colon + 1);
      if (!DOMAIN.test(asi) || sid === '' || SPACE.test(sid) || sid.length > 256) {
        throw new PolicyError(field, `${quoted(raw)}: a seller is "<asi>:<sid>", the exchange's domain and the seller's ID there (e.g. exchange.example:1234).`);
      }
      return `${asi}:${sid}`;
    }
  }
}

function parseKind(raw: unknown, field: string): EntryKind {
  if (!ENTRY_KINDS.includes(raw as EntryKind)) throw new PolicyError(field, `${field} must be one of ${ENTRY_KINDS.join(', ')}.`);
  return raw as EntryKind;
}

function parseAction(raw: unknown, field: string): Action {
  if (!ACTIONS.includes(raw as Action)) throw new PolicyError(field, `${field} must be "allow" or "deny".`);
  return raw as Action;
}

function refuseUnknown(o: Record<string, unknown>, known: readonly string[], at: string): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) {
      const name = at ? `${at}.${k.slice(0, 60)}` : k.slice(0, 60);
      throw new PolicyError(name, `Unknown field "${name}"; accepted: ${known.join(', ')}.`);
    }
  }
}

/** One entry of a request body (`at` names it in errors, e.g. "entries[3]"). */
export function parseEntry(raw: unknown, at: string, opts: { actionOptional?: boolean } = {}): PolicyEntry {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyError(at, `${at} must be an object with kind, value and action.`);
  const o = raw as Record<string, unknown>;
  refuseUnknown(o, ['kind', 'value', 'action'], at);
  const kind = parseKind(o.kind, `${at}.kind`);
  const value = normalizeValue(kind, o.value, `${at}.value`);
  // An `ssai` entry declares a stitching provider's servers: it only ever allows (their data centre, for stitched imps).
  const action = opts.actionOptional && o.action === undefined ? (kind === 'ssai' ? 'allow' : 'deny') : parseAction(o.action, `${at}.action`);
  if (kind === 'ssai' && action !== 'allow') throw new PolicyError(`${at}.action`, `${at}.action must be "allow": an ssai entry declares a server-side ad insertion provider's addresses, whose data centre is not held against stitched imps.`);
  return { kind, value, action };
}

/** A list of entries: checked, duplicates of one (kind, value) refused, the cap applied. */
export function parseEntries(raw: unknown, field: string, opts: { actionOptional?: boolean } = {}): PolicyEntry[] {
  if (!Array.isArray(raw)) throw new PolicyError(field, `${field} must be an array of {kind, value, action}.`);
  if (raw.length > MAX_ENTRIES) throw new PolicyError(field, `${field} has ${raw.length} entries; a policy holds at most ${MAX_ENTRIES}.`, true);
  const seen = new Map<string, number>();
  const out: PolicyEntry[] = [];
  for (let i = 0; i < raw.length; i++) {
    const e = parseEntry(raw[i], `${field}[${i}]`, opts);
    const key = entryKey(e);
    const before = seen.get(key);
    if (before !== undefined) {
      throw new PolicyError(`${field}[${i}].value`, `${field}[${i}] repeats ${field}[${before}] (${e.kind} ${quoted(e.value)}); a value is either allowed or denied, once.`);
    }
    seen.set(key, i);
    out.push(e);
  }
  return out;
}

function parseThreshold(raw: unknown, name: 'medium' | 'high'): number | null {
  if (raw === null || raw === undefined) return null;
  const b = THRESHOLD_BOUNDS[name];
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < b.min || raw > b.max || Math.round(raw * 10_000) !== raw * 10_000) {
    throw new PolicyError(name, `${name} must be a number from ${b.min} to ${b.max} with at most 4 decimals, or null for the default (${DEFAULT_THRESHOLDS[name]}).`);
  }
  return raw;
}

/** Checks the thresholds together: medium below high, defaults filled in. */
export function effectiveThresholds(p: { medium: number | null; high: number | null }): { medium: number; high: number } {
  const medium = p.medium ?? DEFAULT_THRESHOLDS.medium;
  const high = p.high ?? DEFAULT_THRESHOLDS.high;
  if (!(medium < high)) throw new PolicyError(p.medium !== null ? 'medium' : 'high', `medium (${medium}) must be below high (${high}).`);
  return { medium, high };
}

export function parseThresholds(o: Record<string, unknown>): { medium: number | null; high: number | null } {
  const t = { medium: parseThreshold(o.medium, 'medium'), high: parseThreshold(o.high, 'high') };
  effectiveThresholds(t);
  return t;
}

/** A whole policy (PUT /v1/policy, `ivtd policy set`). */
export function parsePolicy(raw: unknown): Policy {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new PolicyError('', 'The policy must be a JSON object: {"medium", "high", "entries"}.');
  const o = raw as Record<string, unknown>;
  refuseUnknown(o, ['medium', 'high', 'entries'], '');
  const t = parseThresholds(o);
  const entries = parseEntries(o.entries ?? [], 'entries');
  checkCaps(entries);
  return { ...t, entries };
}

/** The per-customer caps over a whole list (entries, substring characters): 413. */
export function checkCaps(entries: readonly PolicyEntry[]): void {
  if (entries.length > MAX_ENTRIES) throw new PolicyError('entries', `The policy would hold ${entries.length} entries; the limit is ${MAX_ENTRIES} per customer. Remove some first.`, true);
  let chars = 0;
  for (const e of entries) if (e.kind === 'ua_substring') chars += e.value.length;
  if (chars > MAX_SUBSTRING_CHARS) {
    throw new PolicyError('entries', `The policy's UA substrings would total ${chars} characters; the limit is ${MAX_SUBSTRING_CHARS} per customer.`, true);
  }
}
