// An OpenRTB 2.4–2.6 BidRequest (already parsed by bounded-json.ts) mapped onto the GET
// lookup's parameter slots (params.ts), so the same validation (validate.ts, with errors
// naming the OpenRTB field), signals and score run on it. docs/lookup.md "Lookups from an OpenRTB
// bid request" documents the table below. Synchronous, no I/O; allocation is bounded by
// the body limits of body.ts.
import { CTV_DEVICE_TYPES } from '../../base/enums.ts';
import { ownString } from '../../memory/own-string.ts';
import { ipScratch, parseIpInto, type IpScratch } from '../../signals/ip-address.ts';
import { countryAlpha2 } from '../../base/countries.ts';
import { SCHAIN_SHAPE, schainFromObject, type SchainResult } from '../../signals/schain.ts';
import { CHROMIUM_BRANDS, emptySua, suaPlatform, type SuaFacts } from '../../signals/sua.ts';
import { REASON_CLASS } from '../../signals/category.ts';
import { CONFIDENCE_DECISIVE_MIN, type ScoreResult } from '../../signals/score.ts';
import { Fields, keysOf, WHOLE, type JsonShape, type Pruned } from '../../base/shape.ts';
import { P, PARAM_NAMES } from '../params.ts';
import type { ErrorAnswer } from '../../base/errors.ts';
import type { LookupRequest, ValueNames } from '../validate.ts';

/** The OpenRTB field each slot comes from, for error messages (the query's own parameters keep their names). */
const FIELD: Partial<Record<(typeof PARAM_NAMES)[number], string>> = {
  pub: 'site.publisher.id (or app.publisher.id, or the pub query parameter)',
  ip: 'device.ip (or device.ipv6)',
  ua: 'device.ua',
  uid: 'user.id (or user.buyeruid, or the uid query parameter)',
  ifa: 'device.ifa',
  app: 'app.bundle',
  sid: 'source.schain last node asi (or the sid query parameter)',
  adt: 'imp[0].banner / video / audio / native',
  dvt: 'device.devicetype (or the dvt query parameter)',
  dim: 'imp[0] w x h',
  geo: 'device.geo.country (ISO-3166-1 alpha-3 or alpha-2)',
  dmn: 'site.domain (or site.page, app.domain)',
  node: 'node (query parameter)',
};
export const ORTB_NAMES: ValueNames = { noun: 'field', names: PARAM_NAMES.map((n) => FIELD[n] ?? n) };

/**
 * Slots the body owns: a query value for them is dropped, so the query cannot override the
 * bid request. `sid`, `pub`, `uid` and `dvt` are not among them: a query value fills what
 * the body lacks (the body's own value wins).
 */
const BODY_SLOTS: readonly number[] = [P.ip, P.ua, P.ifa, P.app, P.adt, P.dim, P.geo, P.dmn, P.schain];

/**
 * IFA types (OpenRTB 2.6-202309 `device.ifa_type`, before that `device.ext.ifa_type`) that
 * do not name a device: a publisher-, SSP- or session-scoped ID. Such an `ifa` is neither a
 * device ID nor a malformed one: ivtd reads it as no IFA.
 */
export const NON_DEVICE_IFA_TYPES: ReadonlySet<string> = new Set(['ppid', 'sspid', 'sessionid']);

/** An imp's format object: its size, or its first format's. */
const FORMAT = { w: WHOLE, h: WHOLE } as const;
const IMP_FORMAT = { w: WHOLE, h: WHOLE, format: [FORMAT] } as const;
const IMP = { ssai: WHOLE, video: IMP_FORMAT, audio: IMP_FORMAT, native: IMP_FORMAT, banner: IMP_FORMAT } as const;
/** An `ext` holding a supply chain (source.ext, and the request's own ext in 2.4). */
const SCHAIN_HOLDER = { schain: SCHAIN_SHAPE } as const;
/** What suaFacts reads of `device.sua`. */
const SUA_BROWSER = { brand: WHOLE, version: [WHOLE] } as const;
const SUA = { platform: { brand: WHOLE }, mobile: WHOLE, source: WHOLE, browsers: [SUA_BROWSER] } as const;
const DEVICE = { ip: WHOLE, ipv6: WHOLE, ua: WHOLE, ifa: WHOLE, ifa_type: WHOLE, devicetype: WHOLE, ext: { ifa_type: WHOLE }, geo: { country: WHOLE }, sua: SUA } as const;
const PUBLISHER = { id: WHOLE } as const;
const SITE = { domain: WHOLE, page: WHOLE, publisher: PUBLISHER } as const;
const APP = { bundle: WHOLE, domain: WHOLE, publisher: PUBLISHER } as const;
const USER = { id: WHOLE, buyeruid: WHOLE } as const;
const SOURCE = { schain: SCHAIN_SHAPE, ext: SCHAIN_HOLDER } as const;

/**
 * Every field mapBidRequest reads: the body is read by this shape (src/base/shape.ts), and the
 * mapping takes each field at its index here (the constants below), so it can read no other.
 */
export const BID_REQUEST_SHAPE = {
  id: WHOLE,
  imp: [IMP],
  device: DEVICE,
  site: SITE,
  app: APP,
  user: USER,
  source: SOURCE,
  ext: SCHAIN_HOLDER,
  /** Not mapped: the filter (src/filter/) bounds its wait for the upstream by it. */
  tmax: WHOLE,
} as const satisfies { readonly [key: string]: JsonShape };

// Each field's index in the Fields of its object (shape.ts keysOf).
const BID = keysOf(BID_REQUEST_SHAPE);
const IMP_AT = keysOf(IMP);
const FORMAT_AT = keysOf(IMP_FORMAT);
const SIZE_AT = keysOf(FORMAT);
const DEVICE_AT = keysOf(DEVICE);
const DEVICE_EXT_AT = keysOf(DEVICE.ext);
const GEO_AT = keysOf(DEVICE.geo);
const SUA_AT = keysOf(SUA);
const PLATFORM_AT = keysOf(SUA.platform);
const BROWSER_AT = keysOf(SUA_BROWSER);
const SITE_AT = keysOf(SITE);
const APP_AT = keysOf(APP);
const PUBLISHER_AT = keysOf(PUBLISHER);
const USER_AT = keysOf(USER);
const SOURCE_AT = keysOf(SOURCE);
const HOLDER_AT = keysOf(SCHAIN_HOLDER);

/** What the mapping yields beside the slots. */
export interface OrtbExtra {
  id: string;
  schain: SchainResult | undefined;
  sua: SuaFacts | null;
  /** The engine's one SuaFacts, refilled per request (`sua` points at it when the request has one). */
  readonly suaScratch: SuaFacts;
  /** `device.ifa_type` (else `device.ext.ifa_type`), lowercased; '' when absent. */
  ifaType: string;
  /** The largest `imp[].ssai` (0 unknown, 1 client-side, 2 and 3 stitched server-side); -1 when absent. */
  ssai: number;
  /** Paths of the fields read that were absent or unusable (reused; see noteMissing). */
  readonly missing: string[];
  /** Unusable fields as (path, why) pairs, in reading order (reused). */
  readonly unusable: string[];
  /** Scratch for checking `device.ip` / `device.ipv6`. */
  readonly ip: IpScratch;
}

export function emptyOrtbExtra(): OrtbExtra {
  return { id: '', schain: undefined, sua: null, suaScratch: emptySua(), ifaType: '', ssai: -1, missing: [], unusable: [], ip: ipScratch() };
}

/** A body the mapping refuses (no `id`, no `imp`, a mapped string over the limit): thrown by the readers, caught once in mapBidRequest. */
class BodyRefusal {
  constructor(readonly error: ErrorAnswer) {}
}

function bad(field: string, why: string): BodyRefusal {
  return new BodyRefusal({ status: 400, code: 'invalid_parameter', message: `Invalid field ${field}: ${why}.` });
}

// The request being mapped: its extra, where readers note unusable fields (one thread, synchronous).
let cur: OrtbExtra = emptyOrtbExtra();

/** Notes an unusable field: it is treated as absent and named in the answer's `missing` / `unusable`. */
function unusable(path: string, why: string): void {
  cur.unusable.push(path, why);
}

// Readers of one field of an object read by its shape (`parent`, null when absent), at the
// field's index (`key`); `path` names it in the answer when it is unusable.

function obj(parent: Fields | null, key: number, path: string): Fields | null {
  if (parent === null) return null;
  const v = parent.at[key];
  if (v === undefined || v === null) return null;
  if (!(v instanceof Fields)) {
    unusable(path, 'must be an object');
    return null;
  }
  return v;
}

/** An `ext` object (exchange-specific, where ivtd looks for one field), else null: any other value is not ivtd's business. */
function ext(parent: Fields | null, key: number): Fields | null {
  const v = parent === null ? undefined : parent.at[key];
  return v instanceof Fields ? v : null;
}

/**
 * Longest string a mapped field may be. The GET form's values share an 8 KB request line;
 * a body of 64 KB must not carry a 60 KB UA or uid into the caches and history instead.
 */
export const ORTB_MAX_FIELD_CHARS = 2048;

function str(parent: Fields | null, key: number, path: string): string {
  if (parent === null) return '';
  const v = parent.at[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') {
    unusable(path, 'must be a string');
    return '';
  }
  if (v.length > ORTB_MAX_FIELD_CHARS) throw bad(path, `longer than ${ORTB_MAX_FIELD_CHARS} characters`);
  return v;
}

function int(parent: Fields | null, key: number, path: string): number {
  if (parent === null) return -1;
  const v = parent.at[key];
  if (v === undefined || v === null) return -1;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    unusable(path, 'must be a non-negative integer');
    return -1;
  }
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
function suaFacts(sua: Fields, f: SuaFacts): SuaFacts {
  const platform = obj(sua, SUA_AT.platform, 'device.sua.platform');
  f.platform = platform === null ? '' : suaPlatform(str(platform, PLATFORM_AT.brand, 'device.sua.platform.brand'));
  const mobile = int(sua, SUA_AT.mobile, 'device.sua.mobile');
  f.mobile = mobile === 0 || mobile === 1 ? mobile : -1;
  f.source = int(sua, SUA_AT.source, 'device.sua.source');
  f.chromium = false;
  f.chromiumMajor = NaN;
  const browsers = sua.at[SUA_AT.browsers];
  if (browsers !== undefined && browsers !== null) {
    if (!Array.isArray(browsers)) unusable('device.sua.browsers', 'must be an array');
    else {
      let rank = CHROMIUM_BRANDS.length;
      for (const b of browsers) {
        if (!(b instanceof Fields)) {
          unusable('device.sua.browsers[]', 'must be an object');
          continue;
        }
        const r = CHROMIUM_BRANDS.indexOf(str(b, BROWSER_AT.brand, 'device.sua.browsers[].brand'));
        if (r === -1) continue;
        f.chromium = true;
        if (r < rank) {
          const version = b.at[BROWSER_AT.version];
          const major = Array.isArray(version) && typeof version[0] === 'string' ? Number.parseInt(version[0], 10) : NaN;
          if (Number.isFinite(major)) {
            rank = r;
            f.chromiumMajor = major;
          }
        }
      }
    }
  }
  return f;
}

/** imp[0]'s formats in the order they decide the AdCOM ad type (video, audio, native before banner), with their field paths. */
const IMP_KINDS = (['video', 'audio', 'native', 'banner'] as const).map((key) => ({
  key: IMP_AT[key],
  adt: { video: '2', audio: '3', native: '4', banner: '1' }[key],
  sized: key === 'video' || key === 'banner',
  path: `imp[0].${key}`,
  w: `imp[0].${key}.w`,
  h: `imp[0].${key}.h`,
  fw: `imp[0].${key}.format[0].w`,
  fh: `imp[0].${key}.format[0].h`,
}));

const DIM_MAX = 99_999;

/** imp[0]'s format as the AdCOM ad type (video, audio, native before banner in a multi-format imp) and its size. */
function impFacts(imp0: Fields, v: (string | undefined)[]): void {
  for (const k of IMP_KINDS) {
    const o = obj(imp0, k.key, k.path);
    if (o === null) continue;
    if (v[P.adt] === undefined) v[P.adt] = k.adt;
    if (v[P.dim] === undefined && k.sized) {
      let w = int(o, FORMAT_AT.w, k.w);
      let h = int(o, FORMAT_AT.h, k.h);
      const format = o.at[FORMAT_AT.format];
      const first = Array.isArray(format) ? format[0] : undefined;
      if ((w <= 0 || h <= 0) && first instanceof Fields) {
        w = int(first, SIZE_AT.w, k.fw);
        h = int(first, SIZE_AT.h, k.fh);
      }
      if (w > 0 && h > 0 && w <= DIM_MAX && h <= DIM_MAX) v[P.dim] = `${w}x${h}`;
    }
  }
}

/** An address ivtd can read in `device.ip` / `device.ipv6`, else '' (noted unusable). */
function address(device: Fields | null, key: number, path: string): string {
  const s = str(device, key, path);
  if (s === '') return '';
  if (parseIpInto(s, cur.ip)) return s;
  unusable(path, key === DEVICE_AT.ip ? 'must be an IPv4 address' : 'must be an IPv6 address');
  return '';
}

/**
 * Fills the body's slots of `v` (the query scanner's values; its p, k, node and optional
 * parameters stay, and its sid, pub, uid and dvt fill what the body lacks) from the bid
 * request, and `extra`. Null when the body maps, else the 400: only a BidRequest without
 * its `id` or `imp`, or a mapped string past ORTB_MAX_FIELD_CHARS. Any other field that is
 * absent or unusable is absent: noteMissing() lists it after validation.
 */
export function mapBidRequest(bid: Fields, v: (string | undefined)[], raw: (string | undefined)[], extra: OrtbExtra): ErrorAnswer | null {
  for (const i of BODY_SLOTS) {
    v[i] = undefined;
    raw[i] = undefined;
  }
  extra.id = '';
  extra.schain = undefined;
  extra.sua = null;
  extra.ifaType = '';
  extra.ssai = -1;
  extra.missing.length = 0;
  extra.unusable.length = 0;
  cur = extra;
  try {
    return mapBody(bid, v, extra);
  } catch (e) {
    if (e instanceof BodyRefusal) return e.error;
    throw e;
  }
}

function mapBody(bid: Fields, v: (string | undefined)[], extra: OrtbExtra): ErrorAnswer | null {
  const id = bid.at[BID.id];
  if (typeof id === 'string' && id.length > ORTB_MAX_FIELD_CHARS) throw bad('id', `longer than ${ORTB_MAX_FIELD_CHARS} characters`);
  if (id === undefined || id === null || id === '') return { status: 400, code: 'missing_parameter', message: 'Missing required field: id (the BidRequest id, a non-empty string).' };
  if (typeof id !== 'string') return { status: 400, code: 'invalid_parameter', message: 'Invalid field id: must be a string (the BidRequest id).' };
  extra.id = id;
  const imp = bid.at[BID.imp];
  if (!Array.isArray(imp) || imp.length === 0) {
    const why = imp === undefined || imp === null ? 'Missing required field: imp' : 'Invalid field imp';
    return { status: 400, code: imp === undefined || imp === null ? 'missing_parameter' : 'invalid_parameter', message: `${why} (an array of at least one Imp object).` };
  }
  const imp0 = imp[0];
  if (!(imp0 instanceof Fields)) return { status: 400, code: 'invalid_parameter', message: 'Invalid field imp[0]: must be an Imp object.' };

  const device = obj(bid, BID.device, 'device');
  const site = obj(bid, BID.site, 'site');
  const app = obj(bid, BID.app, 'app');
  const user = obj(bid, BID.user, 'user');
  const source = obj(bid, BID.source, 'source');

  // Every field is type-checked, also when another one is taken instead.
  const ip = address(device, DEVICE_AT.ip, 'device.ip');
  const ipv6 = address(device, DEVICE_AT.ipv6, 'device.ipv6');
  v[P.ip] = ip || ipv6 || undefined;
  // (Its own string: the UA cache may keep it, and the body's JS parser returns slices of the body.)
  v[P.ua] = ownString(str(device, DEVICE_AT.ua, 'device.ua')) || undefined;
  const ifa = str(device, DEVICE_AT.ifa, 'device.ifa');
  const deviceExt = ext(device, DEVICE_AT.ext);
  const ifaType = (str(device, DEVICE_AT.ifa_type, 'device.ifa_type') || str(deviceExt, DEVICE_EXT_AT.ifa_type, 'device.ext.ifa_type')).toLowerCase();
  extra.ifaType = ifaType;
  // An SSP-, session- or publisher-scoped ID is no device ID: not the device's IFA.
  v[P.ifa] = ifa !== '' && !NON_DEVICE_IFA_TYPES.has(ifaType) ? ifa : undefined;
  const dvt = int(device, DEVICE_AT.devicetype, 'device.devicetype');
  if (dvt >= 1 && dvt <= 8) v[P.dvt] = String(dvt);
  else if (dvt !== -1) unusable('device.devicetype', 'must be an AdCOM device type, 1 to 8');
  const country = str(obj(device, DEVICE_AT.geo, 'device.geo'), GEO_AT.country, 'device.geo.country');
  if (country !== '') {
    const a2 = countryAlpha2(country);
    if (a2 === null) unusable('device.geo.country', `${JSON.stringify(country.slice(0, 8))} is not an ISO-3166-1 country code (alpha-3, e.g. "USA", or alpha-2, e.g. "US")`);
    else v[P.geo] = a2;
  }
  const sua = obj(device, DEVICE_AT.sua, 'device.sua');
  if (sua !== null) extra.sua = suaFacts(sua, extra.suaScratch);

  v[P.app] = str(app, APP_AT.bundle, 'app.bundle') || undefined;
  const siteDomain = str(site, SITE_AT.domain, 'site.domain');
  const page = str(site, SITE_AT.page, 'site.page');
  const appDomain = str(app, APP_AT.domain, 'app.domain');
  v[P.dmn] = siteDomain || pageHost(page) || appDomain || undefined;
  const publisher = site !== null ? obj(site, SITE_AT.publisher, 'site.publisher') : obj(app, APP_AT.publisher, 'app.publisher');
  v[P.pub] = str(publisher, PUBLISHER_AT.id, site !== null ? 'site.publisher.id' : 'app.publisher.id') || v[P.pub];

  const uid = str(user, USER_AT.id, 'user.id');
  const buyeruid = str(user, USER_AT.buyeruid, 'user.buyeruid');
  v[P.uid] = uid || buyeruid || v[P.uid];

  // source.schain (2.6), source.ext.schain (2.5, Prebid), ext.schain (2.4): the first present.
  const sourceExt = ext(source, SOURCE_AT.ext);
  const bidExt = ext(bid, BID.ext);
  const chain: Pruned | undefined = source?.at[SOURCE_AT.schain] ?? sourceExt?.at[HOLDER_AT.schain] ?? bidExt?.at[HOLDER_AT.schain] ?? undefined;
  if (chain !== undefined && chain !== null) {
    const r = schainFromObject(chain);
    extra.schain = r;
    // The seller to the bidder is the chain's last node: its system is the supplier (sid).
    if (v[P.sid] === undefined && r.ok) v[P.sid] = r.chain.nodes[r.chain.nodes.length - 1]!.asi;
  }

  impFacts(imp0, v);
  for (let i = 0; i < imp.length; i++) {
    const one = imp[i];
    if (!(one instanceof Fields)) continue;
    const ssai = one.at[IMP_AT.ssai];
    if (ssai === undefined || ssai === null) continue;
    if (typeof ssai === 'number' && Number.isInteger(ssai) && ssai >= 0 && ssai <= 3) {
      if (ssai > extra.ssai) extra.ssai = ssai;
    } else unusable(`imp[${i}].ssai`, 'must be 0, 1, 2 or 3');
  }
  return null;
}

/** The OpenRTB path of the publisher ID, as the body would carry it. */
function publisherPath(req: LookupRequest): string {
  return req.app !== '' ? 'app.publisher.id' : 'site.publisher.id';
}

/**
 * Lists, after validation, every field ivtd reads that the request lacks (absent, or
 * unusable and so treated as absent; the query's values fill first), then the other
 * unusable fields: `extra.missing`, in a fixed order.
 */
export function noteMissing(req: LookupRequest, extra: OrtbExtra): void {
  const m = extra.missing;
  if (req.ip === '') m.push('device.ip');
  if (req.ua === '' && extra.sua === null) m.push('device.ua');
  if (req.dvt === 0) m.push('device.devicetype');
  if (req.ifa === '' && (req.app !== '' || CTV_DEVICE_TYPES.has(req.dvt))) m.push('device.ifa');
  if (req.app === '' && CTV_DEVICE_TYPES.has(req.dvt)) m.push('app.bundle');
  if (req.uid === '') m.push('user.id');
  if (req.pub === '') m.push(publisherPath(req));
  if (extra.schain === undefined) m.push('source.schain');
  const u = extra.unusable;
  for (let i = 0; i < u.length; i += 2) if (!m.includes(u[i]!)) m.push(u[i]!);
}

/** How much of the verdict's basis each absent value takes away (docs/lookup.md, "Lookups from an OpenRTB bid request"). */
export const MISSING_WEIGHTS = {
  ip: 0.4,
  /** No UA string and no `device.sua` either. */
  ua: 0.3,
  /** No UA string, but `device.sua` describes the device. */
  uaWithSua: 0.1,
  /** Neither a user ID nor a device IFA. */
  user: 0.1,
  devicetype: 0.1,
  /** A device IFA an app or CTV request should carry. */
  ifa: 0.05,
  pub: 0.05,
} as const;

/**
 * The confidence of an OpenRTB verdict: the model's, scaled down by what the request lacks
 * (MISSING_WEIGHTS), except when a hard or GIVT fact is decisive on its own.
 */
export function ortbConfidence(r: ScoreResult, req: LookupRequest, hasSua: boolean): number {
  if (Math.max(r.p_hard, r.p_givt) >= CONFIDENCE_DECISIVE_MIN) return r.confidence;
  const w = MISSING_WEIGHTS;
  let cover = 1;
  if (req.ip === '') cover -= w.ip;
  if (req.ua === '') cover -= hasSua ? w.uaWithSua : w.ua;
  if (req.uid === '' && req.ifa === '') cover -= w.user;
  if (req.dvt === 0) cover -= w.devicetype;
  if (req.ifa === '' && (req.app !== '' || CTV_DEVICE_TYPES.has(req.dvt))) cover -= w.ifa;
  if (req.pub === '') cover -= w.pub;
  return Math.round(r.confidence * cover * 10_000) / 10_000;
}

/** Each reason's entry in the answer's `reasons`, made once: `{"code":…,"class":…}`. */
const REASON_JSON: ReadonlyMap<string, string> = new Map(Object.entries(REASON_CLASS).map(([code, cls]) => [code, JSON.stringify({ code, class: cls })]));

/** Printable ASCII but the quote and the backslash: a string JSON writes as it is, between quotes. */
const PLAIN_JSON_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** `s` as a JSON string: the usual bid request id (a UUID) without a call to JSON.stringify. */
export function jsonString(s: string): string {
  return PLAIN_JSON_STRING.test(s) ? '"' + s + '"' : JSON.stringify(s);
}

/**
 * What the OpenRTB answer adds to the spec 2.2 response (responseJson's `tail`): `id`, `nbr`
 * (null: none), `reasons`, `missing` and, when a field was unusable, `unusable`.
 */
export function ortbResponseTail(extra: OrtbExtra, r: ScoreResult, nbr: number | null): string {
  let reasons = '';
  for (const code of r.reasons) {
    const json = REASON_JSON.get(code);
    if (json === undefined) continue;
    reasons = reasons === '' ? json : reasons + ',' + json;
  }
  // Paths are the mapping's own constants (no escaping needed); the reasons may quote the sender's value.
  let missing = '';
  for (const m of extra.missing) missing += `${missing === '' ? '' : ','}"${m}"`;
  let out = `,"id":${jsonString(extra.id)}${nbr === null ? '' : `,"nbr":${nbr}`},"reasons":[${reasons}],"missing":[${missing}]`;
  const u = extra.unusable;
  if (u.length > 0) {
    out += ',"unusable":[';
    for (let i = 0; i < u.length; i += 2) out += `${i === 0 ? '' : ','}{"field":"${u[i]}","why":${JSON.stringify(u[i + 1])}}`;
    out += ']';
  }
  return out;
}
