// Turns scanned parameter values into a typed lookup request, enforcing the types and
// conditional rules of spec 4.4. Pure and synchronous; reuses one request object.
import { CTV_DEVICE_TYPES, RENDERED_AD_TYPES } from '../base/enums.ts';
import type { ErrorAnswer } from '../base/errors.ts';
import type { SchainResult } from '../signals/schain.ts';
import type { SuaFacts } from '../signals/sua.ts';
import { ownString } from '../memory/own-string.ts';
import { isUuid } from '../base/uuid.ts';
import { P, PARAM_NAMES, REQUIRED } from './params.ts';

export interface LookupRequest {
  partnerId: string; // lowercase UUID
  key: string;
  pub: string;
  node: string;
  ip: string;
  ua: string;
  uid: string;
  ifa: string; // '' when absent
  app: string; // '' when absent
  sid: string;
  adt: number;
  dvt: number;
  rat: number; // -1 when absent
  adv: string;
  plc: string;
  cre: string;
  dim: string;
  aid: string;
  geo: string; // uppercase ISO2, '' when absent
  p1: string;
  p2: string;
  p3: string;
  p4: string;
  p5: string;
  dmn: string;
  cmp: string;
  schainRaw: string | undefined; // still percent-encoded (the schain parser decodes per field)
  /** The supply chain given as an object (an OpenRTB bid request), already checked; else undefined. */
  schainObject: SchainResult | undefined;
  /** OpenRTB 2.6 `device.sua`, when an OpenRTB bid request carried one. */
  sua: SuaFacts | null;
  /** An OpenRTB bid request's `device.ifa_type`, lowercased ('' when absent, and on the GET form). */
  ifaType: string;
  /** An OpenRTB bid request's largest `imp.ssai` (-1 when absent, and on the GET form). */
  ssai: number;
}

export function emptyRequest(): LookupRequest {
  return {
    partnerId: '', key: '', pub: '', node: '', ip: '', ua: '', uid: '', ifa: '', app: '', sid: '',
    adt: 0, dvt: 0, rat: -1, adv: '', plc: '', cre: '', dim: '', aid: '', geo: '',
    p1: '', p2: '', p3: '', p4: '', p5: '', dmn: '', cmp: '', schainRaw: undefined,
    schainObject: undefined, sua: null, ifaType: '', ssai: -1,
  };
}


/**
 * How errors name the values: the query's parameters (the GET lookup), or, for a lookup
 * built from an OpenRTB bid request, the fields each value came from.
 */
export interface ValueNames {
  /** 'parameter' or 'field'. */
  noun: string;
  /** By parameter slot (params.ts). */
  names: readonly string[];
}
export const QUERY_NAMES: ValueNames = { noun: 'parameter', names: PARAM_NAMES };

const DIM_RE = /^[1-9]\d{0,4}x[1-9]\d{0,4}$/;

/** 0-25 for an ASCII letter of either case, else outside it. */
function letterAt(s: string, i: number): number {
  return (s.charCodeAt(i) | 0x20) - 0x61;
}

/** Two ASCII letters (the form of a `geo`): what /^[A-Za-z]{2}$/ matches, without the regular expression. */
function isLetterPair(s: string): boolean {
  if (s.length !== 2) return false;
  const a = letterAt(s, 0), b = letterAt(s, 1);
  return a >= 0 && a <= 25 && b >= 0 && b <= 25;
}

/** Each two-letter code in uppercase, made once (every lookup carries one, most of them the same few). */
const UPPER_PAIRS: Array<string | undefined> = new Array<string | undefined>(26 * 26).fill(undefined);

/** `geo` in uppercase; a pair of ASCII letters from the table. */
function upperGeo(geo: string): string {
  if (!isLetterPair(geo)) return geo.toUpperCase();
  return (UPPER_PAIRS[letterAt(geo, 0) * 26 + letterAt(geo, 1)] ??= geo.toUpperCase());
}

function missing(name: string, n: ValueNames = QUERY_NAMES, why = ''): ErrorAnswer {
  return { status: 400, code: 'missing_parameter', message: `Missing required ${n.noun}: ${name}${why}.` };
}
function invalid(name: string, why: string, n: ValueNames = QUERY_NAMES): ErrorAnswer {
  return { status: 400, code: 'invalid_parameter', message: `Invalid ${n.noun} ${name}: ${why}.` };
}

/** Small non-negative integer in [lo, hi] from a decimal string, else -1. */
function smallInt(s: string, lo: number, hi: number): number {
  if (s.length === 0 || s.length > 3) return -1;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n >= lo && n <= hi ? n : -1;
}

/** Authentication fields first (401 for a missing key), then the partner id's form. */
export function validateAuth(v: (string | undefined)[], out: LookupRequest): ErrorAnswer | null {
  const k = v[P.k];
  if (!k) return { status: 401, code: 'unauthorized', message: 'Missing API key: pass the pre-bid key as query parameter k.' };
  const p = v[P.p];
  if (!p) return missing('p');
  // A thread's traffic comes from few partners: the last one checked is not checked again.
  if (p !== lastPartner) {
    if (!isUuid(p)) return invalid('p', 'the partner ID must be a UUID');
    lastPartner = ownString(p);
    lastPartnerLower = p.toLowerCase();
  }
  out.key = k;
  out.partnerId = lastPartnerLower;
  return null;
}

/** The last partner ID validateAuth accepted, as sent and lowercased (per thread: module state). */
let lastPartner = '';
let lastPartnerLower = '';

/** Every other parameter: presence, type and the conditional rules. */
export function validateRequest(
  v: (string | undefined)[],
  raw: (string | undefined)[],
  out: LookupRequest,
  n: ValueNames = QUERY_NAMES,
): ErrorAnswer | null {
  const name = n.names;
  for (let i = 0; i < REQUIRED.length; i++) {
    const idx = REQUIRED[i]!;
    if (!v[idx]) return missing(name[idx]!, n);
  }
  const adt = smallInt(v[P.adt]!, 1, 4);
  if (adt < 0) return invalid(name[P.adt]!, 'ad type must be 1 (banner), 2 (video), 3 (audio) or 4 (native)', n);
  const dvt = smallInt(v[P.dvt]!, 1, 8);
  if (dvt < 0) return invalid(name[P.dvt]!, 'device type must be an integer from 1 to 8', n);
  let rat = -1;
  const ratS = v[P.rat];
  if (ratS !== undefined && ratS !== '') {
    rat = smallInt(ratS, 0, 8);
    if (rat < 0 || !RENDERED_AD_TYPES[adt]!.has(rat)) {
      return invalid(name[P.rat]!, `rendered ad type ${ratS} is not defined for adt=${adt} (allowed: ${[...RENDERED_AD_TYPES[adt]!].join(', ')})`, n);
    }
  }
  const geo = v[P.geo] ?? '';
  if (geo !== '' && !isLetterPair(geo)) return invalid(name[P.geo]!, 'must be a two-letter ISO country code', n);
  const dim = v[P.dim] ?? '';
  if (dim !== '' && !DIM_RE.test(dim)) return invalid(name[P.dim]!, 'must be {Width}x{Height}, e.g. 300x250', n);
  const app = v[P.app] ?? '';
  const ifa = v[P.ifa] ?? '';
  if (CTV_DEVICE_TYPES.has(dvt)) {
    const why = ` (required for CTV and connected devices, ${name[P.dvt]}=${dvt})`;
    if (!app) return missing(name[P.app]!, n, why);
    if (!ifa) return missing(name[P.ifa]!, n, why);
  } else if (app && !ifa) {
    return missing(name[P.ifa]!, n, ` (required for in-app traffic, when ${name[P.app]} is given)`);
  }
  assign(v, raw, out, adt, dvt, rat, geo, dim, app, ifa);
  return null;
}

/** Every value into `out` (absent optional values as '', -1 or 0). */
function assign(
  v: (string | undefined)[],
  raw: (string | undefined)[],
  out: LookupRequest,
  adt: number,
  dvt: number,
  rat: number,
  geo: string,
  dim: string,
  app: string,
  ifa: string,
): void {
  out.pub = v[P.pub] ?? '';
  out.node = v[P.node] ?? '';
  out.ip = v[P.ip] ?? '';
  out.ua = v[P.ua] ?? '';
  out.uid = v[P.uid] ?? '';
  out.sid = v[P.sid] ?? '';
  out.ifa = ifa;
  out.app = app;
  out.adt = adt;
  out.dvt = dvt;
  out.rat = rat;
  out.geo = geo.length === 2 ? upperGeo(geo) : '';
  out.dim = dim;
  out.adv = v[P.adv] ?? '';
  out.plc = v[P.plc] ?? '';
  out.cre = v[P.cre] ?? '';
  out.aid = v[P.aid] ?? '';
  out.p1 = v[P.p1] ?? '';
  out.p2 = v[P.p2] ?? '';
  out.p3 = v[P.p3] ?? '';
  out.p4 = v[P.p4] ?? '';
  out.p5 = v[P.p5] ?? '';
  out.dmn = v[P.dmn] ?? '';
  out.cmp = v[P.cmp] ?? '';
  out.schainRaw = raw[P.schain];
  out.schainObject = undefined;
  out.sua = null;
  out.ifaType = '';
  out.ssai = -1;
}

/**
 * The lookup of an OpenRTB bid request (its values mapped by src/prebid/ortb/map.ts): nothing
 * the body carries is required, an absent value is '' (or 0 for adt and dvt) and the
 * answer lists it as missing. Only the query's own values can be refused here: `node`
 * missing, or a `dvt`, `rat`, `geo` or `dim` that the GET form would refuse.
 */
export function validateOrtbRequest(
  v: (string | undefined)[],
  raw: (string | undefined)[],
  out: LookupRequest,
  n: ValueNames,
): ErrorAnswer | null {
  const name = n.names;
  if (!v[P.node]) return missing('node (query parameter)');
  const adtS = v[P.adt];
  const adt = adtS === undefined ? 0 : smallInt(adtS, 1, 4);
  if (adt < 0) return invalid(name[P.adt]!, 'ad type must be 1 (banner), 2 (video), 3 (audio) or 4 (native)', n);
  const dvtS = v[P.dvt];
  const dvt = dvtS === undefined || dvtS === '' ? 0 : smallInt(dvtS, 1, 8);
  if (dvt < 0) return invalid(name[P.dvt]!, 'device type must be an integer from 1 to 8', n);
  let rat = -1;
  const ratS = v[P.rat];
  if (ratS !== undefined && ratS !== '') {
    rat = smallInt(ratS, 0, 8);
    if (rat < 0 || (adt > 0 && !RENDERED_AD_TYPES[adt]!.has(rat))) {
      return invalid('rat', `rendered ad type ${ratS} is not defined for ad type ${adt || 'unknown'}`);
    }
  }
  const geo = v[P.geo] ?? '';
  const dim = v[P.dim] ?? '';
  assign(v, raw, out, adt, dvt, rat, geo, dim, v[P.app] ?? '', v[P.ifa] ?? '');
  return null;
}
