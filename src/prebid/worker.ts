// A lookup thread: its own uWebSockets.js app on the shared pre-bid port. History and the
// verdict caches are the process's shared tables (init.memory); the data files' bytes are
// shared too. Nothing here waits on I/O or logs per request.
import uWS from 'uWebSockets.js';
import type { MessagePort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { STATUS_TEXT } from '../errors.ts';
import { fromMainThread } from '../data/thread-bundle.ts';
import { buildLookupData } from './data.ts';
import { LookupEngine } from './pipeline.ts';
import { bidRequestFrom, checkBodyHeaders, ORTB_MAX_BODY_BYTES, tooLarge } from '../ortb/body.ts';
import type { CountRow } from '../reporting/tuple.ts';
import type { NewTuple } from '../reporting/tuple-dictionary.ts';
import type { BotIpRow } from '../fleet/bot-ips.ts';
import { LATENCY_BUCKETS_US, type FromWorker, type LookupStats, type LookupWorkerInit, type SeenValues, type ToWorker } from './messages.ts';

export const LOOKUP_PATH = '/api/v1/ivt/lookup';
/** The lookup from an OpenRTB bid request (POST, the BidRequest JSON as the body). */
export const ORTB_PATH = '/api/v1/ivt/ortb';
export const HEALTH_PATH = '/health-check';
/** Spec 4.4 rule 1 / section 8: request line plus headers at most 8 KB. */
export const MAX_REQUEST_BYTES = 8192;

const JSON_TYPE = 'application/json';

function emptyStats(thread: number): LookupStats {
  return {
    thread, byStatus: {}, byBand: {}, latency: new Array(LATENCY_BUCKETS_US.length + 1).fill(0), latencySumUs: 0, overflowed: 0,
    uaHits: 0, uaMisses: 0, ipHits: 0, ipMisses: 0, contended: 0, lastError: '', heapUsed: 0, heapTotal: 0,
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
  // Null until the first data message: the port is open but lookups and health answer 503.
  let engine: LookupEngine | null = null;
  let keys = init.keys;
  let policies = new Map(init.policies.map((u) => [u.customerId, u]));
  let stats = emptyStats(init.index);
  let draining = false;
  let lastError = '';
  let listenSocket: uWS.us_listen_socket | null = null;

  // While draining, every response closes its connection so the thread can exit once
  // idle keep-alive sockets time out (terminating a thread that holds uWS sockets aborts).
  // `close`: also close this connection (a body left unread).
  const reply = (res: uWS.HttpResponse, status: number, body: string | null, close = false) => {
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[status] ?? String(status));
      if (body === null) res.end(undefined, draining || close);
      else res.writeHeader('Content-Type', JSON_TYPE).end(body, draining || close);
    });
  };
  const fail = (res: uWS.HttpResponse, status: number, code: string, message: string) =>
    reply(res, status, JSON.stringify({ error: code, message }));

  const app = uWS.App().any('/*', (res, req) => {
    const t0 = performance.now();
    const method = req.getMethod();
    const url = req.getUrl();
    const query = req.getQuery() ?? '';
    // As sent: "GET /path?query HTTP/1.1\r\n", each header "name: value\r\n", then "\r\n".
    let size = method.length + 1 + url.length + (query.length > 0 ? 1 + query.length : 0) + 11 + 2;
    req.forEach((k, v) => {
      size += k.length + v.length + 4;
    });
    let status: number;
    if (size > MAX_REQUEST_BYTES) {
      status = 413;
      fail(res, 413, 'payload_too_large', `Request is ${size} bytes; the limit for request line plus headers is ${MAX_REQUEST_BYTES}.`);
    } else if (url === LOOKUP_PATH) {
      const refused = unservable(res, method, 'get', 'Use GET for lookups.');
      if (refused !== 0) status = refused;
      else {
        try {
          const out = engine!.lookup(query, Date.now()); // unservable() checked it
          status = out.status;
          if (out.band !== '') stats.byBand[out.band] = (stats.byBand[out.band] ?? 0) + 1;
          reply(res, out.status, out.body);
        } catch (e) {
          // A bug must cost one answer, not the thread (and with it the process: see fatal()).
          status = 500;
          lastError = (e as Error).message;
          fail(res, 500, 'internal', 'The lookup failed on an internal error; it has been counted. Retry, and report it if it persists.');
        }
      }
    } else if (url === ORTB_PATH) {
      const refused = unservable(res, method, 'post', 'Use POST with the BidRequest JSON as the body.');
      if (refused !== 0) status = refused;
      else {
        ortbRequest(res, req, query, t0);
        return; // the body arrives later: ortbRequest counts the request when it answers
      }
    } else if (url === HEALTH_PATH) {
      status = draining || engine === null ? 503 : 200;
      reply(res, status, null);
      return; // health checks are not lookups: keep them out of the stats
    } else if (url.toLowerCase() === LOOKUP_PATH || url.toLowerCase() === HEALTH_PATH) {
      status = 400;
      fail(res, 400, 'uppercase_not_allowed', 'The request path must be lowercase: use /api/v1/ivt/lookup.');
    } else {
      status = 404;
      fail(res, 404, 'not_found', `No such endpoint: ${url.length > 100 ? url.slice(0, 100) + '…' : url}. Lookups are GET ${LOOKUP_PATH}.`);
    }
    record(status, t0);
  });

  /** 405 / 503 answered (its status returned) when a lookup route cannot serve now, else 0. */
  function unservable(res: uWS.HttpResponse, method: string, want: string, use: string): number {
    if (method !== want) {
      fail(res, 405, 'method_not_allowed', use);
      return 405;
    }
    if (draining || engine === null) {
      fail(res, 503, 'unavailable', draining ? 'This ivtd instance is shutting down; retry on another instance.' : 'Lookup data is still loading; retry in a moment.');
      return 503;
    }
    return 0;
  }

  function record(status: number, t0: number): void {
    const us = (performance.now() - t0) * 1000;
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    let b = 0;
    while (b < LATENCY_BUCKETS_US.length && us > LATENCY_BUCKETS_US[b]!) b++;
    stats.latency[b]!++;
    stats.latencySumUs += us;
  }

  // The OpenRTB lookup: headers read now (uWS's req is only valid in the handler), the body
  // gathered chunk by chunk up to ORTB_MAX_BODY_BYTES (413 past it, answered at once and the
  // rest ignored), then parsed with bounds and answered synchronously, like a GET lookup.
  function ortbRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, query: string, t0: number): void {
    const enc = { gzip: false };
    const headerErr = checkBodyHeaders(req.getHeader('content-type'), req.getHeader('content-encoding'), enc);
    const declared = Number(req.getHeader('content-length') || '0');
    let done = false;
    const answer = (status: number, body: string, close = false) => {
      if (done) return;
      done = true;
      reply(res, status, body, close);
      record(status, t0);
    };
    res.onAborted(() => {
      done = true;
    });
    if (headerErr !== null) return answer(headerErr.status, JSON.stringify({ error: headerErr.code, message: headerErr.message }), true);
    if (declared > ORTB_MAX_BODY_BYTES) {
      const e = tooLarge(declared);
      return answer(e.status, JSON.stringify({ error: e.code, message: e.message }), true);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (done) return;
      size += chunk.byteLength;
      if (size > ORTB_MAX_BODY_BYTES) {
        // Answered before the body ends: close, so the unread rest is never taken for a request.
        const e = tooLarge(null);
        return answer(e.status, JSON.stringify({ error: e.code, message: e.message }), true);
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
      if (!body.ok) return answer(body.error.status, JSON.stringify({ error: body.error.code, message: body.error.message }));
      const e = engine;
      if (e === null || draining) return answer(503, JSON.stringify({ error: 'unavailable', message: 'This ivtd instance is not serving lookups right now; retry on another instance.' }));
      try {
        const out = e.lookupOrtb(query, body.bid, Date.now());
        if (out.band !== '') stats.byBand[out.band] = (stats.byBand[out.band] ?? 0) + 1;
        answer(out.status, out.body);
      } catch (err) {
        lastError = (err as Error).message;
        answer(500, JSON.stringify({ error: 'internal', message: 'The lookup failed on an internal error; it has been counted. Retry, and report it if it persists.' }));
      }
    });
  }

  let reported = cumulative(null);
  const flush = (): { announced: NewTuple[]; rows: CountRow[]; botIps: BotIpRow[]; seen: SeenValues | null; stats: LookupStats } => {
    const s = stats;
    // Stats are deltas since the last report; the engine's counters are cumulative.
    const now = cumulative(engine);
    const d = now.map((v, i) => v - reported[i]!);
    [s.overflowed, s.uaHits, s.uaMisses, s.ipHits, s.ipMisses, s.contended] = d as [number, number, number, number, number, number];
    reported = now;
    s.lastError = lastError;
    lastError = '';
    const heap = getHeapStatistics();
    s.heapUsed = heap.used_heap_size;
    s.heapTotal = heap.total_heap_size;
    stats = emptyStats(init.index);
    const { announced, rows } = engine?.counts.take() ?? { announced: [], rows: [] };
    return { announced, rows, botIps: engine?.botIps?.take() ?? [], seen: engine?.takeSeen() ?? null, stats: s };
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
  const fatal = (err: unknown) => {
    if (dying) return;
    dying = true;
    draining = true;
    clearInterval(timer);
    try {
      // The counts of this last second still reach reporting.
      post({ type: 'counts', index: init.index, ...flush() });
      post({ type: 'fatal', index: init.index, message: err instanceof Error ? `${err.message}` : String(err) });
      if (listenSocket) uWS.us_listen_socket_close(listenSocket);
      listenSocket = null;
      (app as unknown as { close(): void }).close();
    } finally {
      setImmediate(() => process.exit(1));
    }
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);

  port.on('message', (m: ToWorker) => {
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
      engine?.keys.replace(keys);
    } else if (m.type === 'data') {
      try {
        // Built aside, then swapped in one assignment: lookups never see half-loaded data.
        const data = buildLookupData(fromMainThread(m.bundle), m.id).data;
        if (engine === null) {
          engine = new LookupEngine(data, init.memory, { trackBotIps: init.trackBotIps === true, seenSample: init.seenSample ?? 0 });
          engine.keys.replace(keys);
          engine.policies.apply([...policies.values()]);
          policies = new Map();
        } else {
          engine.data = data;
        }
        post({ type: 'data-ok', index: init.index, id: m.id });
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
