// The fields of a scanning project and their rules, for create (all required fields,
// defaults for the rest) and PATCH (any subset). Each failure is a 422 naming the field.
import { COUNTRY_CODES } from '../base/countries.ts';
import { FieldError, refuseUnknownFields } from './field-error.ts';

export const NAME_MAX = 200;
export const DEMAND_ID_MAX = 100;
export const CREATIVE_ID_MAX = 100;
/** UTF-8 bytes; kept under the 64 KB body limit so the rule can be met inside one request. */
export const TAG_MAX_BYTES = 60 * 1024;
export const URL_MAX = 2048;
export const TIMES_PER_DAY_MAX = 96;
export const LOCATIONS_MAX = COUNTRY_CODES.size;

export interface ProjectFields {
  name: string;
  demand_id: string;
  /** An https URL of the ad tag, or the tag's HTML. */
  tag: string;
  scan_now: 0 | 1;
  times_per_day: number;
  alert_pixel: string | null;
  /** ISO 3166-1 alpha-2 codes, uppercase, no repeats; empty = no restriction. */
  locations: string[];
  creative_id: string | null;
}

type Rule<K extends keyof ProjectFields> = (v: unknown) => ProjectFields[K];

// Control characters would garble the dashboard and logs; tags may hold newlines and tabs.
const CONTROL = /\p{Cc}/u;
const TAG_CONTROL = /[\0-\x08\x0B\x0C\x0E-\x1F\x7F]/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
/** Where an element, comment or end tag may begin: `<` then a letter, `!` or `/`. */
const ELEMENT_START = /<[A-Za-z!/]/;

/**
 * True when `s` holds something shaped like an HTML element: an element start followed,
 * anywhere later, by `>`. Same answer as /<[A-Za-z!/][^>]*>/, in one pass: that regex
 * retries from every `<` and is quadratic on `<a<a<a…` (seconds for a 60 KB tag).
 */
export function looksLikeHtml(s: string): boolean {
  const start = s.search(ELEMENT_START);
  return start >= 0 && s.indexOf('>', start + 2) >= 0;
}

function text(field: string, max: number): (v: unknown) => string {
  return (v) => {
    if (typeof v !== 'string') throw new FieldError(field, `${field} must be a string.`);
    if (v.trim() === '') throw new FieldError(field, `${field} must not be empty.`);
    if (v.length > max) throw new FieldError(field, `${field} must be at most ${max} characters.`);
    if (CONTROL.test(v)) throw new FieldError(field, `${field} must not contain control characters.`);
    return v;
  };
}

function isUrl(v: string, protocols: readonly string[]): boolean {
  if (v.length > URL_MAX || /\s/.test(v)) return false;
  try {
    const u = new URL(v);
    return protocols.includes(u.protocol) && u.hostname !== '';
  } catch {
    return false;
  }
}

const tag: Rule<'tag'> = (v) => {
  if (typeof v !== 'string') throw new FieldError('tag', 'tag must be a string: an https URL or HTML markup.');
  if (Buffer.byteLength(v) > TAG_MAX_BYTES) throw new FieldError('tag', `tag must be at most ${TAG_MAX_BYTES} bytes.`);
  const s = v.trim();
  if (SCHEME.test(s) && !s.startsWith('<')) {
    if (!isUrl(s, ['https:'])) throw new FieldError('tag', 'tag is a URL but not a valid https:// URL.');
    return s;
  }
  if (!looksLikeHtml(s)) throw new FieldError('tag', 'tag must be an https:// URL or HTML markup (such as a <script> or <iframe> tag).');
  if (TAG_CONTROL.test(v)) throw new FieldError('tag', 'tag must not contain control characters other than tabs and line breaks.');
  return v;
};

const scanNow: Rule<'scan_now'> = (v) => {
  if (v === 0 || v === false) return 0;
  if (v === 1 || v === true) return 1;
  throw new FieldError('scan_now', 'scan_now must be 0 or 1.');
};

const timesPerDay: Rule<'times_per_day'> = (v) => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > TIMES_PER_DAY_MAX) {
    throw new FieldError('times_per_day', `times_per_day must be a whole number from 1 to ${TIMES_PER_DAY_MAX}.`);
  }
  return v;
};

const alertPixel: Rule<'alert_pixel'> = (v) => {
  if (v === null) return null;
  if (typeof v !== 'string' || !isUrl(v, ['http:', 'https:'])) {
    throw new FieldError('alert_pixel', `alert_pixel must be an http:// or https:// URL of at most ${URL_MAX} characters.`);
  }
  return v;
};

/** One code, a comma-separated list ("US,GB") or an array of codes; any case; null = none. */
const locations: Rule<'locations'> = (v) => {
  if (v === null) return [];
  let list: unknown[];
  if (typeof v === 'string') list = v.split(',').map((s) => s.trim());
  else if (Array.isArray(v)) list = v;
  else throw new FieldError('locations', 'locations must be a country code, a comma-separated list of codes or an array of codes.');
  if (list.length > LOCATIONS_MAX) throw new FieldError('locations', `locations holds at most ${LOCATIONS_MAX} codes.`);
  const out = new Set<string>();
  for (const c of list) {
    const code = typeof c === 'string' ? c.toUpperCase() : '';
    if (!COUNTRY_CODES.has(code)) {
      const shown = typeof c === 'string' ? JSON.stringify(c.slice(0, 20)) : typeof c;
      throw new FieldError('locations', `locations: ${shown} is not an ISO 3166-1 alpha-2 country code.`);
    }
    out.add(code);
  }
  return [...out];
};

const creativeId: Rule<'creative_id'> = (v) => (v === null ? null : text('creative_id', CREATIVE_ID_MAX)(v));

const RULES: { [K in keyof ProjectFields]: Rule<K> } = {
  name: text('name', NAME_MAX),
  demand_id: text('demand_id', DEMAND_ID_MAX),
  tag,
  scan_now: scanNow,
  times_per_day: timesPerDay,
  alert_pixel: alertPixel,
  locations,
  creative_id: creativeId,
};

const FIELD_NAMES = new Set(Object.keys(RULES) as Array<keyof ProjectFields>);
const REQUIRED = ['name', 'demand_id', 'tag'] as const;
/** The optional fields whose rules take null (to clear them). */
const NULLABLE: ReadonlySet<string> = new Set(['alert_pixel', 'locations', 'creative_id']);

function defaults(): Omit<ProjectFields, (typeof REQUIRED)[number]> {
  return { scan_now: 0, times_per_day: 1, alert_pixel: null, locations: [], creative_id: null };
}

function check<K extends keyof ProjectFields>(k: K, v: unknown): ProjectFields[K] {
  if (v === null && !NULLABLE.has(k)) throw new FieldError(k, `${k} cannot be null.`);
  return RULES[k](v);
}

/** A new project's fields from a create body; unknown fields are refused. */
export function parseProjectCreate(body: Record<string, unknown>): ProjectFields {
  refuseUnknownFields(body, FIELD_NAMES);
  for (const k of REQUIRED) if (body[k] === undefined) throw new FieldError(k, `${k} is required.`);
  const out: Record<string, unknown> = defaults();
  for (const k of FIELD_NAMES) if (body[k] !== undefined) out[k] = check(k, body[k]);
  return out as unknown as ProjectFields;
}

/** The fields a PATCH body changes; at least one. null clears alert_pixel, locations and creative_id. */
export function parseProjectPatch(body: Record<string, unknown>): Partial<ProjectFields> {
  refuseUnknownFields(body, FIELD_NAMES);
  const out: Record<string, unknown> = {};
  for (const k of FIELD_NAMES) if (body[k] !== undefined) out[k] = check(k, body[k]);
  if (Object.keys(out).length === 0) {
    throw new FieldError('body', `Name at least one field to change: ${[...FIELD_NAMES].join(', ')}.`);
  }
  return out as Partial<ProjectFields>;
}
