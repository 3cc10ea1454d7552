// An OpenRTB 2.4–2.6 BidRequest (already parsed by bounded-json.ts) mapped onto the GET
// lookup's parameter slots (params.ts), so the same validation (validate.ts, with errors
// naming the OpenRTB field), signals and score run on it. README "Lookups from an OpenRTB
// bid request" documents the table below. Synchronous, no I/O; allocation is bounded by
// the body limits of ortb-body.ts.
import { iso31661Alpha2ToAlpha3, iso31661Alpha3ToAlpha2 } from 'iso-3166';
import { schainFromObject, type SchainResult } from '../signals/schain.ts';
import { CHROMIUM_BRANDS, emptySua, suaPlatform, type SuaFacts } from '../signals/sua.ts';
import { noBidReason, REASON_CLASS } from '../signals/category.ts';
import { classifyTransaction, type ScoreResult } from '../signals/score.ts';
import type { JsonObject, JsonValue } from './bounded-json.ts';
import { isJsonObject } from './bounded-json.ts';
import { P, PARAM_NAMES } from './params.ts';
import type { ValidationError, ValueNames } from './validate.ts';

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
}

function bad(field: string, why: string): ValidationError {
  return { status: 400, code: 'invalid_parameter', message: `Invalid field ${field}: ${why}.` };
}

function obj(parent: JsonObject | null, key: string, path: string): JsonObject | null | ValidationError {
  if (parent === null) return null;
  const v = parent[key];
  if (v === undefined || v === null) return null;
  if (!isJsonObject(v)) return bad(path, 'must be an object');
  return v;
}

/**
 * Longest string a mapped field may be. The GET form's values share an 8 KB request line;
 * a body of 64 KB must not carry a 60 KB UA or uid into the caches and history instead.
 */
export const ORTB_MAX_FIELD_CHARS = 2048;

function str(parent: JsonObject | null, key: string, path: string): string | ValidationError {
  if (parent === null) return '';
  const v = parent[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') return bad(path, 'must be a string');
  if (v.length > ORTB_MAX_FIELD_CHARS) return bad(path, `longer than ${ORTB_MAX_FIELD_CHARS} characters`);
  return v;
}

function int(parent: JsonObject | null, key: string, path: string): number | ValidationError {
  if (parent === null) return -1;
  const v = parent[key];
  if (v === undefined || v === null) return -1;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) return bad(path, 'must be a non-negative integer');
  return v;
}

const isErr = (v: unknown): v is ValidationError => typeof v === 'object' && v !== null && 'code' in v;

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

/** OpenRTB country (ISO-3166-1 alpha-3; alpha-2 taken too) → the GET form's alpha-2, or null. */
export function countryAlpha2(c: string): string | null {
  const u = c.toUpperCase();
  if (u.length === 2) return u in iso31661Alpha2ToAlpha3 || u === 'XK' ? u : null;
  if (u.length !== 3) return null;
  // Kosovo's user-assigned XKX / XK (used by OpenRTB exchanges and geo databases) is not in ISO's table.
  return u === 'XKX' ? 'XK' : (iso31661Alpha3ToAlpha2[u] ?? null);
}

function suaFacts(sua: JsonObject): SuaFacts | ValidationError {
  const f = emptySua();
  const platform = obj(sua, 'platform', 'device.sua.platform');
  if (isErr(platform)) return platform;
  if (platform !== null) {
    const brand = str(platform, 'brand', 'device.sua.platform.brand');
    if (isErr(brand)) return brand;
    f.platform = suaPlatform(brand);
  }
  const mobile = int(sua, 'mobile', 'device.sua.mobile');
  if (isErr(mobile)) return mobile;
  f.mobile = mobile === 0 || mobile === 1 ? mobile : -1;
  const source = int(sua, 'source', 'device.sua.source');
  if (isErr(source)) return source;
  f.source = source;
  const browsers = sua.browsers;
  if (browsers !== undefined && browsers !== null) {
    if (!Array.isArray(browsers)) return bad('device.sua.browsers', 'must be an array');
    let rank = CHROMIUM_BRANDS.length;
    for (const b of browsers) {
      if (!isJsonObject(b)) return bad('device.sua.browsers[]', 'must be an object');
      const brand = str(b, 'brand', 'device.sua.browsers[].brand');
      if (isErr(brand)) return brand;
      const r = CHROMIUM_BRANDS.indexOf(brand);
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

/** imp[0]'s format as the AdCOM ad type (video, audio, native before banner in a multi-format imp) and its size. */
function impFacts(imp0: JsonObject, v: (string | undefined)[]): ValidationError | null {
  const kinds: [string, string][] = [['video', '2'], ['audio', '3'], ['native', '4'], ['banner', '1']];
  for (const [key, adt] of kinds) {
    const o = obj(imp0, key, `imp[0].${key}`);
    if (isErr(o)) return o;
    if (o === null) continue;
    if (v[P.adt] === undefined) v[P.adt] = adt;
    if (v[P.dim] === undefined && (key === 'video' || key === 'banner')) {
      let w = int(o, 'w', `imp[0].${key}.w`);
      if (isErr(w)) return w;
      let h = int(o, 'h', `imp[0].${key}.h`);
      if (isErr(h)) return h;
      const format = o.format;
      if ((w <= 0 || h <= 0) && Array.isArray(format) && isJsonObject(format[0])) {
        const f0 = format[0];
        w = int(f0, 'w', `imp[0].${key}.format[0].w`);
        if (isErr(w)) return w;
        h = int(f0, 'h', `imp[0].${key}.format[0].h`);
        if (isErr(h)) return h;
      }
      if (w > 0 && h > 0) v[P.dim] = `${w}x${h}`;
    }
  }
  return null;
}

/**
 * Fills the body's slots of `v` (the query scanner's values; its p, k, node and optional
 * parameters stay) from the bid request, and `extra`. Null when the body maps, else the
 * 400 naming the field. Presence of required values is left to validateRequest.
 */
export function mapBidRequest(bid: JsonObject, v: (string | undefined)[], raw: (string | undefined)[], extra: OrtbExtra): ValidationError | null {
  for (const i of BODY_SLOTS) {
    v[i] = undefined;
    raw[i] = undefined;
  }
  extra.id = '';
  extra.schain = undefined;
  extra.sua = null;
  const id = bid.id;
  if (typeof id === 'string' && id.length > ORTB_MAX_FIELD_CHARS) return bad('id', `longer than ${ORTB_MAX_FIELD_CHARS} characters`);
  if (typeof id !== 'string' || id === '') return { status: 400, code: 'missing_parameter', message: 'Missing required field: id (the BidRequest id, a string).' };
  extra.id = id;

  const device = obj(bid, 'device', 'device');
  if (isErr(device)) return device;
  const site = obj(bid, 'site', 'site');
  if (isErr(site)) return site;
  const app = obj(bid, 'app', 'app');
  if (isErr(app)) return app;
  const user = obj(bid, 'user', 'user');
  if (isErr(user)) return user;
  const source = obj(bid, 'source', 'source');
  if (isErr(source)) return source;

  const ip = str(device, 'ip', 'device.ip');
  if (isErr(ip)) return ip;
  const ipv6 = str(device, 'ipv6', 'device.ipv6');
  if (isErr(ipv6)) return ipv6;
  v[P.ip] = ip || ipv6 || undefined;
  const ua = str(device, 'ua', 'device.ua');
  if (isErr(ua)) return ua;
  v[P.ua] = ua || undefined;
  const ifa = str(device, 'ifa', 'device.ifa');
  if (isErr(ifa)) return ifa;
  v[P.ifa] = ifa || undefined;
  const dvt = int(device, 'devicetype', 'device.devicetype');
  if (isErr(dvt)) return dvt;
  v[P.dvt] = dvt < 0 ? undefined : String(dvt);
  const geo = obj(device, 'geo', 'device.geo');
  if (isErr(geo)) return geo;
  const country = str(geo, 'country', 'device.geo.country');
  if (isErr(country)) return country;
  if (country !== '') {
    const a2 = countryAlpha2(country);
    if (a2 === null) return bad('device.geo.country', `"${country.slice(0, 8)}" is not an ISO-3166-1 alpha-3 country code`);
    v[P.geo] = a2;
  }
  const sua = obj(device, 'sua', 'device.sua');
  if (isErr(sua)) return sua;
  if (sua !== null) {
    const f = suaFacts(sua);
    if (isErr(f)) return f;
    extra.sua = f;
  }

  const bundle = str(app, 'bundle', 'app.bundle');
  if (isErr(bundle)) return bundle;
  v[P.app] = bundle || undefined;
  const siteDomain = str(site, 'domain', 'site.domain');
  if (isErr(siteDomain)) return siteDomain;
  const page = str(site, 'page', 'site.page');
  if (isErr(page)) return page;
  const appDomain = str(app, 'domain', 'app.domain');
  if (isErr(appDomain)) return appDomain;
  v[P.dmn] = siteDomain || pageHost(page) || appDomain || undefined;
  const publisher = obj(site ?? app, 'publisher', site !== null ? 'site.publisher' : 'app.publisher');
  if (isErr(publisher)) return publisher;
  const pub = str(publisher, 'id', site !== null ? 'site.publisher.id' : 'app.publisher.id');
  if (isErr(pub)) return pub;
  v[P.pub] = pub || undefined;

  const uid = str(user, 'id', 'user.id');
  if (isErr(uid)) return uid;
  const buyeruid = str(user, 'buyeruid', 'user.buyeruid');
  if (isErr(buyeruid)) return buyeruid;
  v[P.uid] = uid || buyeruid || undefined;

  // source.schain (2.6), source.ext.schain (2.5, Prebid), ext.schain (2.4): the first present.
  const sourceExt = obj(source, 'ext', 'source.ext');
  if (isErr(sourceExt)) return sourceExt;
  const bidExt = obj(bid, 'ext', 'ext');
  if (isErr(bidExt)) return bidExt;
  const chain: JsonValue | undefined = source?.schain ?? sourceExt?.schain ?? bidExt?.schain ?? undefined;
  if (chain !== undefined && chain !== null) {
    const r = schainFromObject(chain);
    extra.schain = r;
    // The seller to the bidder is the chain's last node: its system is the supplier (sid).
    if (v[P.sid] === undefined && r.ok) v[P.sid] = r.chain.nodes[r.chain.nodes.length - 1]!.asi;
  }

  const imp = bid.imp;
  if (imp !== undefined && imp !== null) {
    if (!Array.isArray(imp)) return bad('imp', 'must be an array');
    if (imp.length > 0) {
      if (!isJsonObject(imp[0])) return bad('imp[0]', 'must be an object');
      const e = impFacts(imp[0], v);
      if (e !== null) return e;
    }
  }
  return null;
}

/** The spec 2.2 response (`base`, a JSON object's text) with `id`, `nbr` and `reasons` added. */
export function ortbResponseJson(base: string, id: string, r: ScoreResult): string {
  const nbr = noBidReason(classifyTransaction(r) === 'valid', r.leading);
  let reasons = '';
  for (const code of r.reasons) {
    const cls = REASON_CLASS[code];
    if (cls === undefined) continue;
    reasons += `${reasons === '' ? '' : ','}{"code":"${code}","class":"${cls}"}`;
  }
  return `${base.slice(0, -1)},"id":${JSON.stringify(id)}${nbr === null ? '' : `,"nbr":${nbr}`},"reasons":[${reasons}]}`;
}
