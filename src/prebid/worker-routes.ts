// A lookup thread's routes: one named handler per path and method (uWS matches the path,
// then the method; a path's other methods get its 405), each first applying spec 4.4 rule 1
// (oversized(), worker-framing.ts). The GET lookup, the OpenRTB lookup, the impression beacon,
// the health check, and every other path's 404. Module-level functions, registered once per
// thread (addRoutes): no closure is made per request but the OpenRTB body's own callbacks.
import type uWS from 'uWebSockets.js';
import { performance } from 'node:perf_hooks';
import { errorJson, type ErrorAnswer } from '../base/errors.ts';
import { bidRequestFrom, checkBodyHeaders, ORTB_MAX_BODY_BYTES, tooLarge } from './ortb/body.ts';
import { IMP_PATH, emptyBeaconHeaders } from './beacon.ts';
import { beacon, draining, engine, unavailable } from './worker-state.ts';
import { countBand, noteBeacon, noteError, record } from './worker-stats.ts';
import {
  bodyFramingError, contentLength, endWith, contentLengths, hold, keepChunk, oversized, refuse, reply, replyLater, wholeBody, type HeldAnswer,
  declaredLength,
  ORTB_DISCARD_BYTES,
} from './worker-framing.ts';

export const LOOKUP_PATH = '/api/v1/ivt/lookup';
/** The lookup from an OpenRTB bid request (POST, the BidRequest JSON as the body). */
export const ORTB_PATH = '/api/v1/ivt/ortb';
export const HEALTH_PATH = '/health-check';

// The port's own refusals (the lookup's are the pipeline's), each written once.
const USE_GET: ErrorAnswer = { status: 405, code: 'method_not_allowed', message: 'Use GET for lookups.' };
const USE_POST: ErrorAnswer = { status: 405, code: 'method_not_allowed', message: 'Use POST with the BidRequest JSON as the body.' };
/** A known path sent with capitals: the 400 names that path in lowercase (`/Health-Check` → `/health-check`). */
const LOWERCASE = new Map<string, ErrorAnswer>(
  [LOOKUP_PATH, HEALTH_PATH, IMP_PATH].map((p) => [p, { status: 400, code: 'uppercase_not_allowed', message: `The request path must be lowercase: use ${p}.` }]),
);
/** The same as unavailable()'s, found once an OpenRTB body has arrived. */
const NOT_SERVING: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This ivtd instance is not serving lookups right now; retry on another instance.' };
const USE_GET_IMP: ErrorAnswer = { status: 405, code: 'method_not_allowed', message: `Use GET (or POST, as navigator.sendBeacon sends) for impression beacons: GET ${IMP_PATH}?lid=<lid>.` };
const NO_BEACON: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This ivtd instance does not take impression beacons (no lookup-id secret).' };
/** The 1×1 transparent GIF of `&fmt=gif` (43 bytes). */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
const INTERNAL: ErrorAnswer = { status: 500, code: 'internal', message: 'The lookup failed on an internal error; it has been counted. Retry, and report it if it persists.' };

function notFound(url: string): ErrorAnswer {
  return { status: 404, code: 'not_found', message: `No such endpoint: ${url.length > 100 ? url.slice(0, 100) + '…' : url}. Lookups are GET ${LOOKUP_PATH}.` };
}

/**
 * Every route's first call: an abort handler, so that uWS never finds a request handler
 * returned with its answer unfinished and nothing attached, which it punishes by ending the
 * process ("Returning from a request handler without responding or attaching an abort handler
 * is forbidden!", then std::terminate). Clients pipelining lookups into sockets they never
 * read and then reset made it happen about one run in six before the held answers of
 * endWith(), and one in two with them (bench:hostile --phases unread); with this, none in
 * twelve. A shared function: nothing is allocated per request.
 */
function guard(res: uWS.HttpResponse): void {
  res.onAborted(NOTHING);
}
function NOTHING(): void {}

/** The routes of a lookup thread's app, in the order uWS is to try them. */
export function addRoutes(app: uWS.TemplatedApp): uWS.TemplatedApp {
  return app
    .get(LOOKUP_PATH, getLookup)
    .any(LOOKUP_PATH, otherLookupMethod)
    .post(ORTB_PATH, postOrtb)
    .any(ORTB_PATH, otherOrtbMethod)
    .get(IMP_PATH, getBeacon)
    // navigator.sendBeacon, a page's way to fire a beacon as it unloads, always POSTs: the
    // same beacon, its body (empty, or whatever the page sent) never read.
    .post(IMP_PATH, postBeacon)
    .any(IMP_PATH, otherBeaconMethod)
    .any(HEALTH_PATH, healthCheck)
    .any('/*', otherPath);
}

/** GET /api/v1/ivt/lookup: the lookup. */
function getLookup(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  const t0 = performance.now();
  const query = req.getQuery() ?? '';
  if (oversized(res, req, query, t0, 'get')) return;
  record(lookup(res, query), t0);
}

function otherLookupMethod(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  const t0 = performance.now();
  const method = req.getMethod();
  if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
  refuse(res, USE_GET, false, method, 'GET');
  record(USE_GET.status, t0);
}

/** POST /api/v1/ivt/ortb: the OpenRTB lookup, its body read by ortbRequest(). */
function postOrtb(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  const t0 = performance.now();
  const query = req.getQuery() ?? '';
  if (oversized(res, req, query, t0, 'post')) return;
  const no = unavailable();
  if (no !== null) {
    refuse(res, no);
    record(no.status, t0);
  } else ortbRequest(res, req, query, t0); // the body arrives later: ortbRequest counts the request when it answers
}

function otherOrtbMethod(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  const t0 = performance.now();
  const method = req.getMethod();
  if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
  refuse(res, USE_POST, false, method, 'POST');
  record(USE_POST.status, t0);
}

/** GET /api/v1/ivt/imp: an impression beacon. */
function getBeacon(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  beaconRequest(res, req, 'get');
}

/** POST /api/v1/ivt/imp: the same beacon, as navigator.sendBeacon sends it. */
function postBeacon(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  beaconRequest(res, req, 'post');
}

function otherBeaconMethod(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  const t0 = performance.now();
  const method = req.getMethod();
  if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
  refuse(res, USE_GET_IMP, false, method, 'GET, POST');
  noteBeacon('refused');
}

/**
 * Any method of /health-check. Health checks are not lookups: kept out of the stats (but
 * for the 413). Any method (HEAD included) gets the status and no body.
 */
function healthCheck(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  if (oversized(res, req, req.getQuery() ?? '', performance.now(), req.getMethod())) return;
  reply(res, unavailable() === null ? 200 : 503, null);
}

/** Every other path: a 404, or a 400 for a known path in capitals. */
function otherPath(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  guard(res);
  const t0 = performance.now();
  const method = req.getMethod();
  if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
  const url = req.getUrl();
  const lower = url.toLowerCase();
  const e = LOWERCASE.get(lower) ?? notFound(url);
  refuse(res, e, false, method);
  record(e.status, t0);
}

/** A GET lookup answered; its status returned. */
function lookup(res: uWS.HttpResponse, query: string): number {
  const no = unavailable();
  if (no !== null) {
    refuse(res, no);
    return no.status;
  }
  try {
    const out = engine!.lookup(query, Date.now()); // unavailable() checked it
    countBand(out.band);
    reply(res, out.status, out.body);
    return out.status;
  } catch (e) {
    // A bug must cost one answer, not the thread (and with it the process: see fatal() in worker.ts).
    noteError(e);
    refuse(res, INTERNAL);
    return INTERNAL.status;
  }
}

/** The request headers a beacon is judged with, one object per thread, refilled per beacon. */
const beaconHeaders = emptyBeaconHeaders();

/** A beacon by GET or POST: its headers read now (uWS's req is only valid in the handler), then judged. */
function beaconRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, method: 'get' | 'post'): void {
  guard(res);
  const t0 = performance.now();
  const query = req.getQuery() ?? '';
  if (oversized(res, req, query, t0, method)) return;
  const h = beaconHeaders;
  h.userAgent = req.getHeader('user-agent');
  h.deviceIp = req.getHeader('x-device-ip');
  h.deviceUa = req.getHeader('x-device-user-agent');
  h.forwardedFor = req.getHeader('x-forwarded-for');
  h.peer = Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
  // A POST's body is never read: one that has a body (sendBeacon's data) closes its
  // connection after the answer, so no byte of it is ever taken for a next request.
  const unread = method === 'post' && ((contentLength !== '' && contentLength !== '0') || contentLengths > 1 || req.getHeader('transfer-encoding') !== '');
  impression(res, query, unread);
}

/**
 * An impression beacon: judged and counted synchronously (src/prebid/beacon.ts), then
 * 204 (or the GIF); a garbled or forged lid gets its 400, counted in /metrics only.
 * `close`: close the connection after the answer (a body left unread).
 */
function impression(res: uWS.HttpResponse, query: string, close: boolean): void {
  const no = unavailable(false) ?? (beacon === null ? NO_BEACON : null);
  if (no !== null) {
    refuse(res, no, close);
    noteBeacon('unavailable');
    return;
  }
  try {
    const b = beacon!;
    const outcome = b.judge(query, beaconHeaders, Date.now());
    noteBeacon(outcome);
    if (outcome === 'refused') return refuse(res, b.error!, close);
    const gif = b.gif;
    // (In the handler: uWS has the socket corked.)
    res.writeStatus(gif ? '200 OK' : '204 No Content').writeHeader('Cache-Control', 'no-store');
    if (gif) endWith(res.writeHeader('Content-Type', 'image/gif'), PIXEL, close);
    // endWithoutBody() writes no Content-Length (none belongs on a 204); its arguments
    // would (and `undefined` makes uWS abort), so a closing answer ends with end().
    else if (draining || close) res.end(undefined, true);
    else res.endWithoutBody();
  } catch (e) {
    noteError(e);
    refuse(res, INTERNAL, close);
    noteBeacon('internal');
  }
}

// The OpenRTB lookup: headers read now (uWS's req is only valid in the handler), the body
// gathered chunk by chunk up to ORTB_MAX_BODY_BYTES (413 past it, answered once the rest
// is read and dropped, up to ORTB_DISCARD_BYTES), then parsed with bounds and judged synchronously, like a GET lookup; a
// verdict is held to the turn's end (hold()), an error answered at once.
function ortbRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, query: string, t0: number): void {
  const enc = { gzip: false };
  const headerErr = checkBodyHeaders(req.getHeader('content-type'), req.getHeader('content-encoding'), enc);
  let done = false;
  /** The verdict (`verdict`) may be held to the turn's end; an error is answered at once. */
  let held: HeldAnswer | null = null;
  const answer = (status: number, body: string, close = false, verdict = false) => {
    if (done) return;
    done = true;
    const now = performance.now();
    record(status, t0, now);
    if (verdict && hold((held = { res, status, body, gone: false }), now)) return;
    held = null;
    replyLater(res, status, body, close);
  };
  const no = (e: ErrorAnswer, close = false) => answer(e.status, errorJson(e), close);
  res.onAborted(() => {
    done = true;
    if (held !== null) held.gone = true;
  });
  if (headerErr !== null) return no(headerErr, true);
  const framing = bodyFramingError(req);
  if (framing !== null) return no(framing, true);
  const declared = declaredLength();
  let oversize = declared > ORTB_MAX_BODY_BYTES ? tooLarge(declared) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    if (done) return;
    size += chunk.byteLength;
    if (oversize === null && size > ORTB_MAX_BODY_BYTES) {
      oversize = tooLarge(null);
      chunks.length = 0;
    }
    if (oversize !== null) {
      // Read and dropped, then answered and closed all the same: past the bound the rest is
      // never taken for a request.
      if (isLast || size > ORTB_DISCARD_BYTES) no(oversize, true);
      return;
    }
    if (!isLast) return keepChunk(chunks, chunk);
    const body = bidRequestFrom(wholeBody(chunks, chunk, size), enc.gzip);
    if (!body.ok) return no(body.error);
    const e = engine;
    if (e === null || draining) return no(NOT_SERVING);
    try {
      const out = e.lookupOrtb(query, body.bid, Date.now());
      countBand(out.band);
      answer(out.status, out.body, false, true);
    } catch (err) {
      noteError(err);
      no(INTERNAL);
    }
  });
}
