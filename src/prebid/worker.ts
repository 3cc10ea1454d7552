// A lookup thread: its own uWebSockets.js app on the shared pre-bid port. History and the
// verdict caches are the process's shared tables (init.memory); the data files' bytes are
// shared too. Nothing here waits on I/O or logs per request.
import uWS from 'uWebSockets.js';
import type { MessagePort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { errorJson, STATUS_TEXT, type ErrorAnswer } from '../errors.ts';
import type { Band } from '../enums.ts';
import { fromMainThread } from '../data/thread-bundle.ts';
import { buildLookupData } from './data.ts';
import { warmUp, type WarmUp } from './warm-up.ts';
import { LookupEngine } from './pipeline.ts';
import { setVersionFloor } from '../signals/ua-analysis.ts';
import { bidRequestFrom, checkBodyHeaders, ORTB_MAX_BODY_BYTES, tooLarge } from '../ortb/body.ts';
import type { CountRow } from '../reporting/tuple.ts';
import type { NewTuple } from '../reporting/tuple-dictionary.ts';
import type { BotIpRow } from './bot-ip-tracker.ts';
import { BeaconJudge, IMP_PATH, emptyBeaconHeaders } from './beacon.ts';
import { LATENCY_BUCKETS_US, type FromWorker, type ImpressionDeltas, type LookupStats, type LookupWorkerInit, type SeenValues, type ToWorker } from './messages.ts';

export const LOOKUP_PATH = '/api/v1/ivt/lookup';
/** The lookup from an OpenRTB bid request (POST, the BidRequest JSON as the body). */
export const ORTB_PATH = '/api/v1/ivt/ortb';
export const HEALTH_PATH = '/health-check';
/** Spec 4.4 rule 1 / section 8: request line plus headers at most 8 KB. */
export const MAX_REQUEST_BYTES = 8192;

/** Longest an OpenRTB answer is held for the turn's other answers (ms; see hold()). */
const HOLD_MS = 1;

/** An OpenRTB answer waiting for the end of the event loop's turn (`gone`: its client left). */
interface HeldAnswer {
  res: uWS.HttpResponse;
  status: number;
  body: string;
  gone: boolean;
}

const JSON_TYPE = 'application/json';
// The header every answer with a body sends, as bytes: the binding takes bytes as they are,
// and copies a string through UTF-8 (measuring it first) each time.
const CONTENT_TYPE_BYTES = Buffer.from('Content-Type');
const JSON_TYPE_BYTES = Buffer.from(JSON_TYPE);
/** How long a failing thread keeps its port for the main thread's 503 listener to open. */
const HANDOVER_WAIT_MS = 1000;
/** How long a listener that stops accepting still answers the connections it accepted. */
export const LINGER_MS = 100;

// The port's own refusals (the lookup's are the pipeline's), each written once.
const USE_GET: ErrorAnswer = { status: 405, code: 'method_not_allowed', message: 'Use GET for lookups.' };
const USE_POST: ErrorAnswer = { status: 405, code: 'method_not_allowed', message: 'Use POST with the BidRequest JSON as the body.' };
/** A known path sent with capitals: the 400 names that path in lowercase (`/Health-Check` → `/health-check`). */
const LOWERCASE = new Map<string, ErrorAnswer>(
  [LOOKUP_PATH, HEALTH_PATH, IMP_PATH].map((p) => [p, { status: 400, code: 'uppercase_not_allowed', message: `The request path must be lowercase: use ${p}.` }]),
);
const DRAINING: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This ivtd instance is shutting down; retry on another instance.' };
const LOADING: ErrorAnswer = { status: 503, code: 'unavailable', message: 'Lookup data is still loading; retry in a moment.' };
const NO_KEY_SET: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This fleet edge has no key set yet: ClickHouse has not answered since it started (see its log), so it knows no API key. Retry on another host.' };
/** The same, found once an OpenRTB body has arrived. */
const NOT_SERVING: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This ivtd instance is not serving lookups right now; retry on another instance.' };
const USE_GET_IMP: ErrorAnswer = { status: 405, code: 'method_not_allowed', message: `Use GET (or POST, as navigator.sendBeacon sends) for impression beacons: GET ${IMP_PATH}?lid=<lid>.` };
const NO_BEACON: ErrorAnswer = { status: 503, code: 'unavailable', message: 'This ivtd instance does not take impression beacons (no lookup-id secret).' };
const TWO_LENGTHS: ErrorAnswer = { status: 400, code: 'invalid_request', message: 'The request has more than one Content-Length header: send one.' };
const NO_LENGTH: ErrorAnswer = { status: 411, code: 'length_required', message: 'The request has no Content-Length (nor Transfer-Encoding) header, so no body: send the BidRequest as JSON with its Content-Length.' };
/** The 1×1 transparent GIF of `&fmt=gif` (43 bytes). */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
/** Bytes of an oversized OpenRTB body read and dropped before its 413 and the close. */
const ORTB_DISCARD_BYTES = 4 * 1024 * 1024;
const INTERNAL: ErrorAnswer = { status: 500, code: 'internal', message: 'The lookup failed on an internal error; it has been counted. Retry, and report it if it persists.' };

function codingNotImplemented(te: string): ErrorAnswer {
  return { status: 501, code: 'not_implemented', message: `Transfer-Encoding ${JSON.stringify(te.length > 60 ? te.slice(0, 60) + '…' : te)} is not supported: send the body with its Content-Length, or chunked alone (gzip goes in Content-Encoding).` };
}

/**
 * Ends a HEAD answer: the length its body would have, and no body. (This build of
 * uWebSockets.js aborts the process when endWithoutBody is given a length or a close flag:
 * "Returning from a request handler without responding"; only the bare call is safe.) To
 * close the connection, an empty end() instead (Content-Length 0, no body all the same).
 */
function endHead(res: uWS.HttpResponse, bodyBytes: number, close: boolean): void {
  if (close) res.end(undefined, true);
  else res.writeHeader('Content-Length', String(bodyBytes)).endWithoutBody();
}

function notFound(url: string): ErrorAnswer {
  return { status: 404, code: 'not_found', message: `No such endpoint: ${url.length > 100 ? url.slice(0, 100) + '…' : url}. Lookups are GET ${LOOKUP_PATH}.` };
}

function emptyStats(thread: number): LookupStats {
  return {
    thread, byStatus: {}, byBand: {}, latency: new Array(LATENCY_BUCKETS_US.length + 1).fill(0), latencySumUs: 0, overflowed: 0,
    uaHits: 0, uaMisses: 0, ipHits: 0, ipMisses: 0, contended: 0, lastError: '', heapUsed: 0, heapTotal: 0,
    beacons: {}, seenEvictedLive: 0,
  };
}

/** Cumulative counters of an engine whose per-interval deltas go into the stats. */
function cumulative(e: LookupEngine | null): number[] {
  if (e === null) return [0, 0, 0, 0, 0, 0];
  const s = e.sources;
  return [e.counts.folded + e.counts.local.folded, s.uaCache.hits, s.uaCache.misses, s.ipCache.hits, s.ipCache.misses, s.history.contended + e.counts.shared.contended];
}

export function runLookupWorker(init: LookupWorkerInit, port: MessagePort): void {
  const post = (m: FromWorker) => port.postMessage(m);
  setVersionFloor(init.versionFloorMs ?? 0);
  // Null until the first data message: the port is open but lookups and health answer 503.
  let engine: LookupEngine | null = null;
  // Made with the engine (it reads the engine's history and UA cache); null without init.beacon.
  let beacon: BeaconJudge | null = null;
  const beaconHeaders = emptyBeaconHeaders();
  let keys = init.keys;
  let keysKnown = init.keysKnown ?? true;
  let policies = new Map(init.policies.map((u) => [u.customerId, u]));
  let stats = emptyStats(init.index);
  // The most frequent counts of the stats, in plain numbers until the next report (flush):
  // a lookup's band and a 200 went into objects keyed by their text and number, a keyed
  // load and store V8 could not specialise (megamorphic: about 0.1 µs a lookup in the profile).
  let answered200 = 0;
  let bandLow = 0, bandMedium = 0, bandHigh = 0;
  const countBand = (band: Band | ''): void => {
    if (band === 'low') bandLow++;
    else if (band === 'medium') bandMedium++;
    else if (band === 'high') bandHigh++;
  };
  let draining = false;
  let lastError = '';
  let listenSocket: uWS.us_listen_socket | null = null;

  // While draining, every response closes its connection so the thread can exit once
  // idle keep-alive sockets time out (terminating a thread that holds uWS sockets aborts).
  // `close`: also close this connection (a body left unread).
  /** Answers from within a route handler, where uWS has the socket corked already. */
  const reply = (res: uWS.HttpResponse, status: number, body: string | null, close = false) => {
    if (status !== 200) res.writeStatus(STATUS_TEXT[status] ?? String(status)); // (uWS writes 200 OK by itself)
    if (body === null) res.end(undefined, draining || close);
    else res.writeHeader(CONTENT_TYPE_BYTES, JSON_TYPE_BYTES).end(body, draining || close);
  };
  /** Answers from a callback after the handler returned (a body's data): corked here. */
  const replyLater = (res: uWS.HttpResponse, status: number, body: string | null, close = false) => {
    res.cork(() => reply(res, status, body, close));
  };
  /**
   * Every "no" of this port: the one error body. `method` (as uWS gives it, lowercase) is
   * passed by the routes that take any method: a HEAD gets the headers without the body (RFC
   * 9110 9.3.2; uWS does not know HEAD). `allow`: a 405's methods (RFC 9110 15.5.6).
   */
  const refuse = (res: uWS.HttpResponse, e: ErrorAnswer, close = false, method = '', allow = '') => {
    const body = errorJson(e);
    res.writeStatus(STATUS_TEXT[e.status] ?? String(e.status));
    if (allow !== '') res.writeHeader('Allow', allow);
    res.writeHeader(CONTENT_TYPE_BYTES, JSON_TYPE_BYTES);
    if (method !== 'head') res.end(body, draining || close);
    else endHead(res, Buffer.byteLength(body), draining || close);
  };

  // One route per path (uWS matches the path, then the method); a path's other methods get
  // its 405. Every route first applies spec 4.4 rule 1 (oversized).
  const app = uWS.App()
    .get(LOOKUP_PATH, (res, req) => {
      const t0 = performance.now();
      const query = req.getQuery() ?? '';
      if (oversized(res, req, query, t0, 'get')) return;
      record(lookup(res, query), t0);
    })
    .any(LOOKUP_PATH, (res, req) => {
      const t0 = performance.now();
      const method = req.getMethod();
      if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
      refuse(res, USE_GET, false, method, 'GET');
      record(USE_GET.status, t0);
    })
    .post(ORTB_PATH, (res, req) => {
      const t0 = performance.now();
      const query = req.getQuery() ?? '';
      if (oversized(res, req, query, t0, 'post')) return;
      const no = unavailable();
      if (no !== null) {
        refuse(res, no);
        record(no.status, t0);
      } else ortbRequest(res, req, query, t0); // the body arrives later: ortbRequest counts the request when it answers
    })
    .any(ORTB_PATH, (res, req) => {
      const t0 = performance.now();
      const method = req.getMethod();
      if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
      refuse(res, USE_POST, false, method, 'POST');
      record(USE_POST.status, t0);
    })
    .get(IMP_PATH, (res, req) => beaconRequest(res, req, 'get'))
    // navigator.sendBeacon, a page's way to fire a beacon as it unloads, always POSTs: the
    // same beacon, its body (empty, or whatever the page sent) never read.
    .post(IMP_PATH, (res, req) => beaconRequest(res, req, 'post'))
    .any(IMP_PATH, (res, req) => {
      const t0 = performance.now();
      const method = req.getMethod();
      if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
      refuse(res, USE_GET_IMP, false, method, 'GET, POST');
      noteBeacon('refused');
    })
    .any(HEALTH_PATH, (res, req) => {
      // Health checks are not lookups: kept out of the stats (but for the 413). Any method
      // (HEAD included) gets the status and no body.
      if (oversized(res, req, req.getQuery() ?? '', performance.now(), req.getMethod())) return;
      reply(res, unavailable() === null ? 200 : 503, null);
    })
    .any('/*', (res, req) => {
      const t0 = performance.now();
      const method = req.getMethod();
      if (oversized(res, req, req.getQuery() ?? '', t0, method)) return;
      const url = req.getUrl();
      const lower = url.toLowerCase();
      const e = LOWERCASE.get(lower) ?? notFound(url);
      refuse(res, e, false, method);
      record(e.status, t0);
    });

  // The header lines' bytes of the request being checked ("name: value\r\n" each), summed by
  // one callback made once per thread (not a closure per request), and its Content-Length
  // lines counted on the way, the first one's value kept (uWS reads the first; a second is
  // refused: RFC 9112 6.3).
  let headerBytes = 0;
  let contentLengths = 0;
  let contentLength = '';
  const addHeader = (k: string, v: string): void => {
    headerBytes += k.length + v.length + 4;
    if (k === 'content-length' && contentLengths++ === 0) contentLength = v;
  };

  /**
   * Spec 4.4 rule 1, on every path before anything else: the request line plus headers,
   * counted as sent ("GET /path?query HTTP/1.1\r\n", each header "name: value\r\n", then
   * "\r\n"), at most MAX_REQUEST_BYTES; past it the 413 is answered (and counted) here.
   * `method`: the request's, lowercase (the GET and POST routes know it without asking uWS).
   */
  function oversized(res: uWS.HttpResponse, req: uWS.HttpRequest, query: string, t0: number, method: string): boolean {
    headerBytes = 0;
    contentLengths = 0;
    contentLength = '';
    req.forEach(addHeader);
    const size = method.length + 1 + req.getUrl().length + (query.length > 0 ? 1 + query.length : 0) + 11 + 2 + headerBytes;
    if (size <= MAX_REQUEST_BYTES) return false;
    refuse(res, { status: 413, code: 'payload_too_large', message: `Request is ${size} bytes; the limit for request line plus headers is ${MAX_REQUEST_BYTES}.` });
    record(413, t0);
    return true;
  }

  /**
   * The 503 while this thread cannot serve lookups (draining, no data yet, or a fleet edge
   * without a key set), else null. `keys` false: what a beacon needs, which no API key checks.
   */
  function unavailable(keys = true): ErrorAnswer | null {
    return draining ? DRAINING : engine === null ? LOADING : keysKnown || !keys ? null : NO_KEY_SET;
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
      // A bug must cost one answer, not the thread (and with it the process: see fatal()).
      lastError = (e as Error).message;
      refuse(res, INTERNAL);
      return INTERNAL.status;
    }
  }

  /** A beacon by GET or POST: its headers read now (uWS's req is only valid in the handler), then judged. */
  function beaconRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, method: 'get' | 'post'): void {
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
      if (gif) res.writeHeader('Content-Type', 'image/gif').end(PIXEL, draining || close);
      // endWithoutBody() writes no Content-Length (none belongs on a 204); its arguments
      // would (and `undefined` makes uWS abort), so a closing answer ends with end().
      else if (draining || close) res.end(undefined, true);
      else res.endWithoutBody();
    } catch (e) {
      lastError = (e as Error).message;
      refuse(res, INTERNAL, close);
      noteBeacon('internal');
    }
  }

  function noteBeacon(outcome: string): void {
    stats.beacons[outcome] = (stats.beacons[outcome] ?? 0) + 1;
  }

  // The OpenRTB answers found in one turn of the event loop are written together once its
  // sockets have all been read (setImmediate: after the poll phase), as Redis writes its
  // replies before it sleeps: on loopback each send can wake the client's thread, and sends
  // spread one lookup apart find it asleep again each time; sent back to back, all but the
  // first find it awake. At a low rate a turn holds one answer, written a few µs later; a
  // turn holds answers for at most HOLD_MS from its first, then answers at once. Only the
  // POST answers: a client must not pipeline behind a POST (RFC 9112 9.3.2), and uWS closes
  // a connection whose next request comes while its answer is held; GETs, which clients may
  // pipeline, are answered at once.
  let heldAnswers: HeldAnswer[] = [];
  let writtenAnswers: HeldAnswer[] = [];
  let heldSince = 0;
  /** Holds `h` to the turn's end (true), or false when this turn has held for HOLD_MS already: answer it now. */
  function hold(h: HeldAnswer, now: number): boolean {
    if (heldAnswers.length === 0) {
      setImmediate(writeHeld);
      heldSince = now;
    } else if (now - heldSince > HOLD_MS) return false;
    heldAnswers.push(h);
    return true;
  }
  function writeHeld(): void {
    const list = heldAnswers;
    heldAnswers = writtenAnswers;
    writtenAnswers = list;
    for (let i = 0; i < list.length; i++) {
      const h = list[i]!;
      if (!h.gone) replyLater(h.res, h.status, h.body);
    }
    list.length = 0;
  }

  function record(status: number, t0: number, now = performance.now()): void {
    const us = (now - t0) * 1000;
    if (status === 200) answered200++;
    else stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    let b = 0;
    while (b < LATENCY_BUCKETS_US.length && us > LATENCY_BUCKETS_US[b]!) b++;
    stats.latency[b]!++;
    stats.latencySumUs += us;
  }

  // The OpenRTB lookup: headers read now (uWS's req is only valid in the handler), the body
  // gathered chunk by chunk up to ORTB_MAX_BODY_BYTES (413 past it, answered once the rest
  // is read and dropped), then parsed with bounds and judged synchronously, like a GET lookup; a
  // verdict is held to the turn's end (hold()), an error answered at once.
  function ortbRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, query: string, t0: number): void {
    const enc = { gzip: false };
    const headerErr = checkBodyHeaders(req.getHeader('content-type'), req.getHeader('content-encoding'), enc);
    const declared = Number(contentLength || '0'); // (read by oversized(), which every route runs first)
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
    // Where the body ends must be certain, or its bytes would be read as the next request:
    // two Content-Lengths, or neither it nor Transfer-Encoding (then there is no body), close.
    if (contentLengths > 1) return no(TWO_LENGTHS, true);
    if (contentLengths === 0) {
      const te = req.getHeader('transfer-encoding');
      if (te === '') return no(NO_LENGTH, true);
      // uWS reads every body with a Transfer-Encoding as chunked: another coding (gzip, chunked) would be misread.
      if (te.trim().toLowerCase() !== 'chunked') return no(codingNotImplemented(te), true);
    }
    // A 413 answered and closed while the client still sends resets the connection, and a
    // client that reads once its body is sent never sees it: the rest is read and dropped
    // first, up to ORTB_DISCARD_BYTES (a lingering close, RFC 9112 9.6), then answered and closed.
    if (declared > ORTB_DISCARD_BYTES) return no(tooLarge(declared), true);
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
        // Closed all the same: past the bound the rest is never taken for a request.
        if (isLast || size > ORTB_DISCARD_BYTES) no(oversize, true);
        return;
      }
      // uWS reuses the chunk's memory after this callback: a body in several chunks is
      // copied; one that comes whole (the usual case) is read in place, within the callback.
      if (!isLast) {
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        return;
      }
      let whole: Uint8Array;
      if (chunks.length === 0) whole = new Uint8Array(chunk);
      else {
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        whole = Buffer.concat(chunks, size);
      }
      const body = bidRequestFrom(whole, enc.gzip);
      if (!body.ok) return no(body.error);
      const e = engine;
      if (e === null || draining) return no(NOT_SERVING);
      try {
        const out = e.lookupOrtb(query, body.bid, Date.now());
        countBand(out.band);
        answer(out.status, out.body, false, true);
      } catch (err) {
        lastError = (err as Error).message;
        no(INTERNAL);
      }
    });
  }

  let reported = cumulative(null);
  let reportedEvicted = 0;
  const flush = (): { announced: NewTuple[]; rows: CountRow[]; impressions: ImpressionDeltas; botIps: BotIpRow[]; seen: SeenValues | null; stats: LookupStats } => {
    const s = stats;
    if (answered200 > 0) s.byStatus[200] = answered200;
    if (bandLow > 0) s.byBand.low = bandLow;
    if (bandMedium > 0) s.byBand.medium = bandMedium;
    if (bandHigh > 0) s.byBand.high = bandHigh;
    answered200 = bandLow = bandMedium = bandHigh = 0;
    // Stats are deltas since the last report; the engine's counters are cumulative.
    const now = cumulative(engine);
    const d = now.map((v, i) => v - reported[i]!);
    [s.overflowed, s.uaHits, s.uaMisses, s.ipHits, s.ipMisses, s.contended] = d as [number, number, number, number, number, number];
    reported = now;
    s.seenEvictedLive = beacon === null ? 0 : beacon.seen.evictedLive - reportedEvicted;
    reportedEvicted = beacon === null ? 0 : beacon.seen.evictedLive;
    s.lastError = lastError;
    lastError = '';
    const heap = getHeapStatistics();
    s.heapUsed = heap.used_heap_size;
    s.heapTotal = heap.total_heap_size;
    stats = emptyStats(init.index);
    const { announced, rows } = engine?.counts.take() ?? { announced: [], rows: [] };
    const impressions = beacon?.take() ?? { announced: [], rows: [] };
    return { announced, rows, impressions, botIps: engine?.botIps?.take() ?? [], seen: engine?.takeSeen() ?? null, stats: s };
  };
  const timer = setInterval(() => {
    post({ type: 'counts', index: init.index, ...flush() });
  }, init.countsIntervalMs);

  /**
   * An error nothing caught. A thread that ends while it holds uWS sockets aborts the whole
   * process, so close them all first, tell the main thread (which starts a new thread), then
   * end this one.
   */
  let dying = false;
  let handover: (() => void) | null = null;
  const fatal = (err: unknown) => {
    if (dying) return;
    dying = true;
    draining = true;
    clearInterval(timer);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      try {
        if (listenSocket) uWS.us_listen_socket_close(listenSocket);
        listenSocket = null;
      } finally {
        // Requests already on accepted connections are answered before those close.
        setTimeout(() => {
          try {
            (app as unknown as { close(): void }).close();
            // What it answered while handing over counts too.
            post({ type: 'counts', index: init.index, ...flush() });
          } finally {
            setImmediate(() => process.exit(1));
          }
        }, LINGER_MS);
      }
    };
    handover = close;
    try {
      // The counts of this last second still reach reporting.
      post({ type: 'counts', index: init.index, ...flush() });
      post({ type: 'fatal', index: init.index, message: err instanceof Error ? `${err.message}` : String(err) });
    } finally {
      // The port stays open until the main thread says another listener holds it (the
      // last thread's 503 listener), so no connection is refused meanwhile; not for long.
      setTimeout(close, HANDOVER_WAIT_MS);
    }
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);

  port.on('message', (m: ToWorker) => {
    if (m.type === 'handover') {
      handover?.();
      return;
    }
    if (m.type === 'gc') {
      fullGc();
      post({ type: 'gc-done', index: init.index, heapUsed: getHeapStatistics().used_heap_size });
      return;
    }
    if (m.type === 'crash') {
      // Fault injection for the supervision test: fail the way a bug would, outside a request.
      setImmediate(() => {
        throw new Error('crash requested by the main thread');
      });
      return;
    }
    if (m.type === 'policy') {
      for (const u of m.updates) policies.set(u.customerId, u);
      engine?.policies.apply(m.updates);
      post({ type: 'policy-ok', index: init.index, id: m.id });
    } else if (m.type === 'keys') {
      keys = m.keys;
      keysKnown = m.known;
      engine?.keys.replace(keys);
    } else if (m.type === 'data') {
      try {
        // Built aside, then swapped in one assignment: lookups never see half-loaded data.
        const data = buildLookupData(fromMainThread(m.bundle), m.id).data;
        let warm: WarmUp | undefined;
        if (engine === null) {
          // Before the first lookup: the code each kind of lookup runs, compiled (warm-up.ts).
          warm = warmUp(data);
          engine = new LookupEngine(data, init.memory, {
            trackBotIps: init.trackBotIps === true,
            seenSample: init.seenSample ?? 0,
            ...(init.beacon ? { lidSecret: init.beacon.lidSecret } : {}),
          });
          engine.keys.replace(keys);
          engine.policies.apply([...policies.values()]);
          if (init.beacon) beacon = new BeaconJudge(init.beacon, init.memory, engine.sources.history, engine.sources.uaCache);
          policies = new Map();
        } else {
          engine.data = data;
        }
        post({ type: 'data-ok', index: init.index, id: m.id, ...(warm ? { warmUp: warm } : {}) });
      } catch (e) {
        post({ type: 'data-failed', index: init.index, id: m.id, message: (e as Error).message });
      }
    } else if (m.type === 'stop') {
      draining = true;
      if (listenSocket) uWS.us_listen_socket_close(listenSocket);
      listenSocket = null;
      // Requests are answered synchronously, so none is in flight here. Close every kept-
      // alive connection too: a thread that still holds uWS sockets when it ends aborts the
      // whole process. TemplatedApp.close() exists in v20.30 but is missing from its typings.
      (app as unknown as { close(): void }).close();
      clearInterval(timer);
      post({ type: 'stopped', index: init.index, ...flush() });
      // Nothing else to receive: let the thread end when its last socket closes.
      port.unref();
    }
  });

  app.listen(init.host, init.port, (ls) => {
    if (!ls) {
      post({ type: 'listen-failed', index: init.index, message: `cannot listen on ${init.host}:${init.port} (port in use or address not available)` });
      clearInterval(timer);
      return;
    }
    listenSocket = ls;
    post({ type: 'listening', index: init.index, port: uWS.us_socket_local_port(ls as unknown as uWS.us_socket) });
  });
}

let gcFn: (() => void) | null = null;
/** A full garbage collection (V8's gc(), exposed on first use; never on the lookup path). */
function fullGc(): void {
  if (gcFn === null) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
}
