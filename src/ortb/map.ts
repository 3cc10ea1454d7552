// An OpenRTB 2.4–2.6 BidRequest (already parsed by bounded-json.ts) mapped onto the GET
// lookup's parameter slots (params.ts), so the same validation (validate.ts, with errors
// naming the OpenRTB field), signals and score run on it. README "Lookups from an OpenRTB
// bid request" documents the table below. Synchronous, no I/O; allocation is bounded by
// the body limits of body.ts.
import { countryAlpha2 } from '../countries.ts';
import { schainFromObject, type SchainResult } from '../signals/schain.ts';
import { CHROMIUM_BRANDS, emptySua, suaPlatform, type SuaFacts } from '../signals/sua.ts';
import { noBidReason, REASON_CLASS } from '../signals/category.ts';
import type { ScoreResult } from '../signals/score.ts';
import type { JsonObject, JsonValue } from './bounded-json.ts';
import { isJsonObject } from './bounded-json.ts';
import { P, PARAM_NAMES } from '../prebid/params.ts';
import type { ErrorAnswer } from '../errors.ts';
import type { ValueNames } from '../prebid/validate.ts';

/** The OpenRTB field each slot comes from, for error messages. */
const FIELD: Partial<Record<(typeof PARAM_NAMES)[number], string>> = {
  pub: 'site.publisher.id (or app.publisher.id)',
  ip: 'device.ip (or device.ipv6)',
  ua: 'device.ua',
  uid: 'user.id (or user.buyeruid)',
  ifa: 'device.ifa',
  app: 'app.bundle',
  sid: 'source.schain last node asi (or the sid query parameter)',
  adt: 'imp[0].banner / video / audio / native',
  dvt: 'device.devicetype',
  dim: 'imp[0] w x h',
  geo: 'device.geo.country',
  dmn: 'site.domain (or site.page, app.domain)',
  node: 'node (query parameter)',
};
export const ORTB_NAMES: ValueNames = { noun: 'field', names: PARAM_NAMES.map((n) => FIELD[n] ?? n) };

/** Slots the body owns: a query value for them is dropped, so the query cannot override the bid request. */
const BODY_SLOTS: readonly number[] = [P.pub, P.ip, P.ua, P.uid, P.ifa, P.app, P.adt, P.dvt, P.dim, P.geo, P.dmn, P.schain];

/** What the mapping yields beside the slots. */
export interface OrtbExtra {
  id: string;
  schain: SchainResult | undefined;
  sua: SuaFacts | null;
  /** The engine's one SuaFacts, refilled per request (`sua` points at it when the request has one). */
  readonly suaScratch: SuaFacts;
}

export function emptyOrtbExtra(): OrtbExtra {
  return { id: '', schain: undefined, sua: null, suaScratch: emptySua() };
}

/** A field the mapping refuses: thrown by the readers below, caught once in mapBidRequest (the 400 path only). */
class FieldError {
  constructor(readonly error: ErrorAnswer) {}
}

function bad(field: string, why: string): FieldError {
  return new FieldError({ status: 400, code: 'invalid_parameter', message: `Invalid field ${field}: ${why}.` });
}

function obj(parent: JsonObject | null, key: string, path: string): JsonObject | null {
  if (parent === null) return null;
  const v = parent[key];
  if (v === undefined || v === null) return null;
  if (!isJsonObject(v)) throw bad(path, 'must be an object');
  return v;
}

/**
 * Longest string a mapped field may be. The GET form's values share an 8 KB request line;
 * a body of 64 KB must not carry a 60 KB UA or uid into the caches and history instead.
 */
export const ORTB_MAX_FIELD_CHARS = 2048;

function str(parent: JsonObject | null, key: string, path: string): string {
  if (parent === null) return '';
  const v = parent[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw bad(path, 'must be a string');
  if (v.length > ORTB_MAX_FIELD_CHARS) throw bad(path, `longer than ${ORTB_MAX_FIELD_CHARS} characters`);
  return v;
}

function int(parent: JsonObject | null, key: string, path: string): number {
  if (parent === null) return -1;
  const v = parent[key];
  if (v === undefined || v === null) return -1;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw bad(path, 'must be a non-negative integer');
  return v;
}

/** The host of a page URL ('' when it has none), lowercased. */
export function pageHost(page: string): string {
  let s = page;
  const scheme = s.indexOf('://');
  if (scheme !== -1) s = s.slice(scheme + 3);
  else if (s.startsWith('//')) s = s.slice(2);
  else return '';
  const at = s.search(/[/?#]/);
  if (at !== -1) s = s.slice(0, at);
  const cred = s.lastIndexOf('@');
  if (cred !== -1) s = s.slice(cred + 1);
  const colon = s.lastIndexOf(':');
  if (colon !== -1 && !s.endsWith(']')) s = s.slice(0, colon);
  return s.toLowerCase();
}

/** Fills `f` from `device.sua`. */
function suaFacts(sua: JsonObject, f: SuaFacts): SuaFacts {
  const platform = obj(sua, 'platform', 'device.sua.platform');
  f.platform = platform === null ? '' : suaPlatform(str(platform, 'brand', 'device.sua.platform.brand'));
  const mobile = int(sua, 'mobile', 'device.sua.mobile');
  f.mobile = mobile === 0 || mobile === 1 ? mobile : -1;
  f.source = int(sua, 'source', 'device.sua.source');
  f.chromium = false;
  f.chromiumMajor = NaN;
  const browsers = sua.browsers;
  if (browsers !== undefined && browsers !== null) {
    if (!Array.isArray(browsers)) throw bad('device.sua.browsers', 'must be an array');
    let rank = CHROMIUM_BRANDS.length;
    for (const b of browsers) {
      if (!isJsonObject(b)) throw bad('device.sua.browsers[]', 'must be an object');
      const r = CHROMIUM_BRANDS.indexOf(str(b, 'brand', 'device.sua.browsers[].brand'));
      if (r === -1) continue;
      f.chromium = true;
      if (r < rank) {
        const version = b.version;
        const major = Array.isArray(version) && typeof version[0] === 'string' ? Number.parseInt(version[0], 10) : NaN;
        if (Number.isFinite(major)) {
          rank = r;
          f.chromiumMajor = major;
        }
      }
    }
  }
  return f;
}

/** imp[0]'s formats in the order they decide the AdCOM ad type (video, audio, native before banner), with their field paths. */
const IMP_KINDS = (['video', 'audio', 'native', 'banner'] as const).map((key) => ({
  key,
  adt: { video: '2', audio: '3', native: '4', banner: '1' }[key],
  sized: key === 'video' || key === 'banner',
  path: `imp[0].${key}`,
  w: `imp[0].${key}.w`,
  h: `imp[0].${key}.h`,
  fw: `imp[0].${key}.format[0].w`,
  fh: `imp[0].${key}.format[0].h`,
}));

/** imp[0]'s format as the AdCOM ad type (video, audio, native before banner in a multi-format imp) and its size. */
function impFacts(imp0: JsonObject, v: (string | undefined)[]): void {
  for (const k of IMP_KINDS) {
    const o = obj(imp0, k.key, k.path);
    if (o === null) continue;
    if (v[P.adt] === undefined) v[P.adt] = k.adt;
    if (v[P.dim] === undefined && k.sized) {
      let w = int(o, 'w', k.w);
      let h = int(o, 'h', k.h);
      const format = o.format;
      if ((w <= 0 || h <= 0) && Array.isArray(format) && isJsonObject(format[0])) {
        w = int(format[0], 'w', k.fw);
        h = int(format[0], 'h', k.fh);
      }
      if (w > 0 && h > 0) v[P.dim] = `${w}x${h}`;
    }
  }
}

/**
 * Fills the body's slots of `v` (the query scanner's values; its p, k, node and optional
 * parameters stay) from the bid request, and `extra`. Null when the body maps, else the
 * 400 naming the field. Presence of required values is left to validateRequest.
 */
export function mapBidRequest(bid: JsonObject, v: (string | undefined)[], raw: (string | undefined)[], extra: OrtbExtra): ErrorAnswer | null {
  for (const i of BODY_SLOTS) {
    v[i] = undefined;
    raw[i] = undefined;
  }
  extra.id = '';
  extra.schain = undefined;
  extra.sua = null;
  try {
    return mapBody(bid, v, extra);
  } catch (e) {
    if (e instanceof FieldError) return e.error;
    throw e;
  }
}

function mapBody(bid: JsonObject, v: (string | undefined)[], extra: OrtbExtra): ErrorAnswer | null {
  const id = bid.id;
  if (typeof id === 'string' && id.length > ORTB_MAX_FIELD_CHARS) throw bad('id', `longer than ${ORTB_MAX_FIELD_CHARS} characters`);
  if (typeof id !== 'string' || id === '') return { status: 400, code: 'missing_parameter', message: 'Missing required field: id (the BidRequest id, a string).' };
  extra.id = id;

  const device = obj(bid, 'device', 'device');
  const site = obj(bid, 'site', 'site');
  const app = obj(bid, 'app', 'app');
  const user = obj(bid, 'user', 'user');
  const source = obj(bid, 'source', 'source');

  // Every field is type-checked, also when another one is taken instead.
  const ip = str(device, 'ip', 'device.ip');
  const ipv6 = str(device, 'ipv6', 'device.ipv6');
  v[P.ip] = ip || ipv6 || undefined;
  v[P.ua] = str(device, 'ua', 'device.ua') || undefined;
  v[P.ifa] = str(device, 'ifa', 'device.ifa') || undefined;
  const dvt = int(device, 'devicetype', 'device.devicetype');
  v[P.dvt] = dvt < 0 ? undefined : String(dvt);
  const country = str(obj(device, 'geo', 'device.geo'), 'country', 'device.geo.country');
  if (country !== '') {
    const a2 = countryAlpha2(country);
    if (a2 === null) throw bad('device.geo.country', `"${country.slice(0, 8)}" is not an ISO-3166-1 alpha-3 country code`);
    v[P.geo] = a2;
  }
  const sua = obj(device, 'sua', 'device.sua');
  if (sua !== null) extra.sua = suaFacts(sua, extra.suaScratch);

  v[P.app] = str(app, 'bundle', 'app.bundle') || undefined;
  const siteDomain = str(site, 'domain', 'site.domain');
  const page = str(site, 'page', 'site.page');
  const appDomain = str(app, 'domain', 'app.domain');
  v[P.dmn] = siteDomain || pageHost(page) || appDomain || undefined;
  const publisher = obj(site ?? app, 'publisher', site !== null ? 'site.publisher' : 'app.publisher');
  v[P.pub] = str(publisher, 'id', site !== null ? 'site.publisher.id' : 'app.publisher.id') || undefined;

  const uid = str(user, 'id', 'user.id');
  const buyeruid = str(user, 'buyeruid', 'user.buyeruid');
  v[P.uid] = uid || buyeruid || undefined;

  // source.schain (2.6), source.ext.schain (2.5, Prebid), ext.schain (2.4): the first present.
  const sourceExt = obj(source, 'ext', 'source.ext');
  const bidExt = obj(bid, 'ext', 'ext');
  const chain: JsonValue | undefined = source?.schain ?? sourceExt?.schain ?? bidExt?.schain ?? undefined;
  if (chain !== undefined && chain !== null) {
    const r = schainFromObject(chain);
    extra.schain = r;
    // The seller to the bidder is the chain's last node: its system is the supplier (sid).
    if (v[P.sid] === undefined && r.ok) v[P.sid] = r.chain.nodes[r.chain.nodes.length - 1]!.asi;
  }

  const imp = bid.imp;
  if (imp !== undefined && imp !== null) {
    if (!Array.isArray(imp)) throw bad('imp', 'must be an array');
    if (imp.length > 0) {
      if (!isJsonObject(imp[0])) throw bad('imp[0]', 'must be an object');
      impFacts(imp[0], v);
    }
  }
  return null;
}

/**
 * The spec 2.2 response (`base`, a JSON object's text) with `id`, `nbr` and `reasons` added;
 * `valid`: the transaction's class (classifyTransaction), which the caller has already.
 */
export function ortbResponseJson(base: string, id: string, r: ScoreResult, valid: boolean): string {
  const nbr = noBidReason(valid, r.leading);
  let reasons = '';
  for (const code of r.reasons) {
    const cls = REASON_CLASS[code];
    if (cls === undefined) continue;
    reasons += `${reasons === '' ? '' : ','}{"code":"${code}","class":"${cls}"}`;
  }
  return `${base.slice(0, -1)},"id":${JSON.stringify(id)}${nbr === null ? '' : `,"nbr":${nbr}`},"reasons":[${reasons}]}`;
}
