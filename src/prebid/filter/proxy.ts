// A filter (docs/filter.md): an HTTP listener of its own in front of an OpenRTB endpoint. Each
// POST body gets the verdict POST /api/v1/ivt/ortb would give (the same engine, called the
// same way, counted the same); a request the customer's thresholds block is answered no-bid
// at once, every other one is sent on to the upstream byte for byte, with one header added,
// and the upstream's answer is returned as it came.
//
// It runs on a thread of its own (a lookup thread whose listener is this one instead of the
// pre-bid port's: src/prebid/worker.ts), so waiting on an upstream never delays a lookup on
// 9898; while that thread is being replaced, the main thread holds the port with the same
// code and no engine, sending every request on as is (src/server/filter-fallback.ts). A small HTTP/1.1 server of its own on the client side (client-http.ts: pipelined
// requests answered in order, which uWebSockets.js cannot do for answers given after the
// handler returns) and a small HTTP/1.1 client (upstream-client.ts), its connections to the
// upstream kept alive and bounded (maxSockets).
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { bidRequestFrom, checkBodyHeaders, ORTB_MAX_BODY_BYTES } from '../ortb/body.ts';
import { BID_REQUEST_SHAPE } from '../ortb/map.ts';
import { keysOf } from '../../base/shape.ts';
import type { LookupEngine } from '../pipeline.ts';
import type { FilterSettings } from '../../base/filter-settings.ts';
import { OverCapError, UpstreamPool, type PendingRequest } from './upstream-client.ts';
import { HeldBytes, REQUEST_STATE_BYTES } from './held-bytes.ts';
import { FILTER_HELD_MB } from '../../memory/budget.ts';
import { createClientServer, type ClientRequest, type ClientResponse, type ClientServer } from './client-http.ts';
import { emptyFilterStats, UPSTREAM_BUCKETS_US, type FailOpenReason, type FilterStats } from './filter-stats.ts';

/** The header a forwarded request carries its verdict in (band, score, lid; nbr when it would block). */
export const VERDICT_HEADER = 'X-Ivtd-Verdict';
/** On the filter's own no-bid answers: why (blocked, upstream-error, upstream-timeout). */
export const NOBID_HEADER = 'X-Ivtd-Nobid';
/** Largest request body the filter takes (bid requests are 1–10 KB; a judged body is at most ORTB_MAX_BODY_BYTES, a larger one goes on unjudged). */
export const MAX_FORWARD_BODY_BYTES = 1 << 20;
/** Largest upstream answer returned (held whole until it ends: past the deadline it is a no-bid, never half an answer). */
export const MAX_ANSWER_BYTES = 8 << 20;
/** OpenRTB no-bid reason of an answer the upstream could not give in time or at all: 1, technical error. */
export const NBR_TECHNICAL = 1;
/**
 * When a listener lets go of the filter's port (a thread failing, or the main thread's fail-open
 * listener as the replacement takes it), how long its kept-alive connections with nothing under
 * way are kept for one more request (answered with `Connection: close`) before they are closed.
 */
export const RETIRE_GRACE_MS = 1000;
/**
 * Client connections a filter keeps open at most (more are closed as they come, counted):
 * each costs its thread some kilobytes of socket and parser state outside the held-bytes cap
 * (the budget's FILTER_NATIVE_MB and FILTER_RUNTIME_MB count them).
 */
export const MAX_CLIENT_CONNECTIONS = 1024;

/** Hop-by-hop headers (RFC 9110 7.6.1), never passed on; and the ones the filter sets itself. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect']);
/** The lengths of those names: a header of another length is none of them (not lowercased to look). */
const HOP_BY_HOP_LENGTHS = new Set([...HOP_BY_HOP].map((h) => h.length));
const SET_HERE = new Set(['host', 'content-length', 'x-forwarded-for', VERDICT_HEADER.toLowerCase()]);

const BID = keysOf(BID_REQUEST_SHAPE);

/** What a filter's host lends it: its lookup thread, or the main thread (no engine) while that thread is replaced. */
export interface FilterHost {
  /** The engine while this thread serves lookups (data loaded, keys known, not draining), else null. */
  engine(): LookupEngine | null;
  /** An error of ivtd's own (the request went on unjudged): the thread reports the last one once a second. */
  noteError(message: string): void;
  /** The most bytes of requests and answers the filter may hold (the memory budget's filter_held part, a filter's). */
  heldCapBytes: number;
}

export interface RunningFilter {
  readonly port: number;
  /** The figures since the last call (the thread's per-second report). */
  take(): FilterStats;
  /** Listens now (a deferred start: see startFilter). */
  listen(): void;
  /**
   * Stops listening at once (another listener takes the port); the connections it accepted
   * are answered and closed (client-http.ts retire), then `onDone`.
   */
  release(graceMs: number, onDone: () => void): void;
  /**
   * New settings of this filter (same name and port; a reload): requests that come after go by
   * them, those under way finish under the ones they started with. A new upstream gets its own
   * connections; the old one's are closed as their answers end.
   */
  update(s: FilterSettings): void;
  /** Stops listening and closes every connection, the upstream's too; then `onClosed`. */
  close(onClosed?: () => void): void;
}

/** One verdict, as the filter acts on it. */
interface Verdict {
  band: string;
  score: number;
  /** The OpenRTB no-bid reason when the verdict blocks, else -1. */
  nbr: number;
  lid: string;
}

/** What the body said besides the verdict (known when it parsed). */
interface BidFacts {
  id: string;
  tmax: number;
}

/** Where a request's path goes upstream: the upstream URL's path is a prefix of the request's, added unless the request names it already. */
export function forwardPath(base: string, baseQuery: string, url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q + 1);
  let out: string;
  if (base === '/' || path === base || path.startsWith(base.endsWith('/') ? base : base + '/')) out = path;
  else if (path === '/' || path === '') out = base;
  else out = (base.endsWith('/') ? base.slice(0, -1) : base) + path;
  const both = baseQuery !== '' && query !== '' ? baseQuery + '&' + query : baseQuery + query;
  return both === '' ? out : out + '?' + both;
}

/** The header value of a verdict: `band=low; score=0.0123; lid=…` (and `; nbr=N` when it blocks). */
export function verdictValue(v: Verdict): string {
  return 'band=' + v.band + '; score=' + v.score + (v.lid === '' ? '' : '; lid=' + v.lid) + (v.nbr >= 0 ? '; nbr=' + v.nbr : '');
}

/** The upstream's answer's headers to return: all but the hop-by-hop ones, and its length as received. */
function answerHeaders(raw: string[], length: number, hadLength: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (HOP_BY_HOP_LENGTHS.has(name.length) && HOP_BY_HOP.has(name.toLowerCase())) continue;
    out.push(name, raw[i + 1]!);
  }
  // A chunked answer is returned with its length (framing is the hop's own).
  if (!hadLength && length > 0) out.push('Content-Length', String(length));
  return out;
}

/**
 * One filter: its settings, its upstream pool and its figures; its requests judged with the
 * engine its host lends (none on the main thread's fail-open listener: every request goes on
 * unjudged, `not_ready`). A lookup thread runs one; the main thread one per filter whose thread
 * is being replaced (src/server/filter-fallback.ts).
 */
export class Filter {
  /** The upstream's Host header, its URL's path (a prefix of forwarded paths) and query. */
  private upAuthority = '';
  private basePath = '/';
  private baseQuery = '';
  /** The engine's query: the reporting node is the filter's name (no key: the filter acts for its partner). */
  private readonly engineQuery: string;
  private pool!: UpstreamPool;
  /** The bytes of requests and answers this filter holds, against its cap (held-bytes.ts). */
  readonly held: HeldBytes;
  private stats: FilterStats;
  /** The longest timeout any of its settings gave (how long its close waits for requests under way). */
  longestTimeoutMs: number;

  constructor(private cfg: FilterSettings, private readonly from: FilterHost) {
    // (A plan made without filters, as tests' engines have, gives none: the budget's per-filter figure then.)
    this.held = new HeldBytes(from.heldCapBytes > 0 ? from.heldCapBytes : FILTER_HELD_MB * 1048576);
    this.longestTimeoutMs = cfg.timeoutMs;
    this.engineQuery = 'node=' + encodeURIComponent(cfg.name);
    this.useUpstream(cfg);
    this.stats = emptyFilterStats(cfg.name);
  }

  /** Where forwarded requests go from now on: the upstream's Host, path prefix and query, and a pool of connections to it. */
  private useUpstream(s: FilterSettings): void {
    const up = new URL(s.upstream);
    const upHost = up.hostname.startsWith('[') ? up.hostname.slice(1, -1) : up.hostname;
    const upPort = up.port === '' ? 80 : Number(up.port);
    this.upAuthority = up.host;
    this.basePath = up.pathname === '' ? '/' : up.pathname;
    this.baseQuery = up.search.startsWith('?') ? up.search.slice(1) : '';
    this.pool = new UpstreamPool(upHost, upPort, s.maxSockets, MAX_ANSWER_BYTES, this.held);
  }

  /** A reload's new settings of this filter (its name and port unchanged). */
  update(s: FilterSettings): void {
    const old = this.cfg;
    this.cfg = s;
    this.longestTimeoutMs = Math.max(this.longestTimeoutMs, s.timeoutMs);
    if (s.upstream !== old.upstream) {
      // Requests under way keep the old pool (forward() holds its request); its idle connections close now, the others as their answers end.
      const retired = this.pool;
      this.useUpstream(s);
      retired.retire();
    } else if (s.maxSockets !== old.maxSockets) this.pool.setMaxSockets(s.maxSockets);
  }

  /** A listener of this filter's (not listening yet): its requests judged and sent on here. */
  server(): ClientServer {
    return createClientServer({
      maxBodyBytes: MAX_FORWARD_BODY_BYTES, maxHeadBytes: 16 * 1024, idleMs: 30_000, requestMs: 10_000, maxInFlight: 64,
      onRequest: (req, body, res) => this.onRequest(req, body, res),
      maxConnections: MAX_CLIENT_CONNECTIONS, held: this.held, onDropped: () => void this.stats.droppedConnections++,
      onTooLarge: () => void this.stats.refused++,
      tooLargeBody: `{"error":"payload_too_large","message":"The request body is over the filter's limit of ${MAX_FORWARD_BODY_BYTES} bytes."}`,
    });
  }

  /** The figures since the last call. */
  take(): FilterStats {
    const out = this.stats;
    out.heldBytes = this.held.held;
    out.heldPeakBytes = this.held.takePeak();
    this.stats = emptyFilterStats(this.cfg.name);
    return out;
  }

  /** Anything counted since the last take(). */
  get counted(): boolean {
    const s = this.stats;
    return s.forwarded + s.blocked + s.refused + s.upstreamErrors + s.timeouts > 0 || Object.keys(s.failOpen).length > 0;
  }

  /** Closes the upstream's connections (requests still queued for one get their no-bid). */
  destroy(): void {
    this.pool.destroy();
  }

  private failOpen(why: FailOpenReason): null {
    const f = this.stats.failOpen;
    f[why] = (f[why] ?? 0) + 1;
    return null;
  }

  private noteLatency(us: number): void {
    let b = 0;
    while (b < UPSTREAM_BUCKETS_US.length && us > UPSTREAM_BUCKETS_US[b]!) b++;
    this.stats.upstreamLatency[b]!++;
    this.stats.upstreamLatencySumUs += us;
  }

  /** The verdict of a POST body, or null to send it on unjudged (fail open; counted why). `facts` filled when the body parsed. */
  private judge(req: ClientRequest, body: Buffer, facts: BidFacts): Verdict | null {
    const e = this.from.engine();
    if (e === null) return this.failOpen('not_ready');
    const enc = { gzip: false };
    if (checkBodyHeaders(req.headers['content-type'] ?? '', req.headers['content-encoding'] ?? '', enc) !== null) return this.failOpen('media_type');
    if (body.byteLength > ORTB_MAX_BODY_BYTES) return this.failOpen('unparseable');
    const now = Date.now();
    const customer = e.keys.customerOf(this.cfg.partner, now);
    if (customer === null) return this.failOpen('unknown_partner');
    const parsed = bidRequestFrom(body, enc.gzip);
    if (!parsed.ok) return this.failOpen('unparseable');
    const id = parsed.bid.at[BID.id];
    facts.id = typeof id === 'string' ? id : '';
    const tmax = parsed.bid.at[BID.tmax];
    facts.tmax = typeof tmax === 'number' && Number.isInteger(tmax) && tmax > 0 ? tmax : 0;
    try {
      const out = e.lookupOrtb(this.engineQuery, parsed.bid, now, customer, true);
      if (out.status !== 200) return this.failOpen('refused');
      const v = e.lastOrtb;
      return { band: v.band, score: v.score, nbr: v.nbr, lid: v.lid };
    } catch (err) {
      this.from.noteError((err as Error).message);
      return this.failOpen('internal');
    }
  }

  /** A no-bid answered by the filter itself: 204, or 200 {"id","nbr"} (`c`: the settings the request started under). */
  private noBid(c: FilterSettings, res: ClientResponse, nbr: number, id: string, why: string, verdict: Verdict | null): void {
    const headers: string[] = [NOBID_HEADER, why];
    if (verdict !== null) headers.push(VERDICT_HEADER, verdictValue(verdict));
    if (c.nobid === '204') {
      res.end(204, 'No Content', headers);
    } else {
      const body = '{"id":' + JSON.stringify(id) + ',"nbr":' + nbr + '}';
      headers.push('Content-Type', 'application/json', 'Content-Length', String(Buffer.byteLength(body)));
      res.end(200, 'OK', headers, body);
    }
  }

  /**
   * The request's head to send on (request line, headers, the empty line): end-to-end headers
   * as received, Host the upstream's, X-Forwarded-For extended, the verdict added. Built as one
   * string (latin1, as the head was read).
   */
  private forwardHead(req: ClientRequest, path: string, body: Buffer, verdict: Verdict | null): string {
    const raw = req.rawHeaders;
    // Headers the Connection header names are hop-by-hop too.
    const conn = req.headers.connection;
    const named = conn === undefined || conn === 'keep-alive' || conn === 'close' ? null : new Set(conn.split(',').map((x) => x.trim().toLowerCase()));
    let head = req.method + ' ' + path + ' HTTP/1.1\r\nHost: ' + this.upAuthority + '\r\n';
    let xff = '';
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || (named !== null && named.has(lower))) continue;
      if (SET_HERE.has(lower)) {
        if (lower === 'x-forwarded-for') xff = xff === '' ? raw[i + 1]! : xff + ', ' + raw[i + 1]!;
        continue;
      }
      head += name + ': ' + raw[i + 1]! + '\r\n';
    }
    let peer = req.remoteAddress;
    if (peer.startsWith('::ffff:')) peer = peer.slice(7);
    head += 'X-Forwarded-For: ' + (xff === '' ? peer : xff + ', ' + peer) + '\r\n';
    // A body's length as sent (a chunked one re-framed); none for a request that had none.
    if (body.byteLength > 0 || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) head += 'Content-Length: ' + body.byteLength + '\r\n';
    if (verdict !== null) head += VERDICT_HEADER + ': ' + verdictValue(verdict) + '\r\n';
    return head + '\r\n';
  }

  /** Sends a request on to the upstream and its answer back; a no-bid when the upstream fails or runs out of time. */
  private forward(req: ClientRequest, res: ClientResponse, body: Buffer, verdict: Verdict | null, facts: BidFacts): void {
    // The settings and the upstream it starts with (a reload may change them while it is under way).
    const c = this.cfg;
    const budget = facts.tmax > 0 && facts.tmax < c.timeoutMs ? facts.tmax : c.timeoutMs;
    const head = this.forwardHead(req, forwardPath(this.basePath, this.baseQuery, req.url), body, verdict);
    // The copy sent upstream and the request's state, held until it ends: past the cap, a no-bid at once (never sent).
    const charge = head.length + body.byteLength + REQUEST_STATE_BYTES;
    const held = this.held;
    if (!held.tryTake(charge)) {
      this.stats.upstreamErrors++;
      this.stats.overCap++;
      this.noBid(c, res, NBR_TECHNICAL, facts.id, 'upstream-error', verdict);
      return;
    }
    this.stats.forwarded++;
    const sentAt = performance.now();
    let done = false;
    let pending: PendingRequest | null = null;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      clearTimeout(timer);
      held.release(charge);
      return true;
    };
    const fail = (why: 'upstream-error' | 'upstream-timeout', overCap = false) => {
      if (!finish()) return;
      if (why === 'upstream-timeout') this.stats.timeouts++;
      else this.stats.upstreamErrors++;
      if (overCap) this.stats.overCap++;
      pending?.abort();
      if (!res.destroyed) this.noBid(c, res, NBR_TECHNICAL, facts.id, why, verdict);
    };
    const timer = setTimeout(() => fail('upstream-timeout'), budget);
    // The client left: nothing to answer, nothing to wait for.
    res.onClose(() => {
      if (finish()) pending?.abort();
    });
    pending = this.pool.request(head, body, req.method === 'HEAD', (err, a) => {
      if (err !== null || a === null) return fail('upstream-error', err instanceof OverCapError);
      if (!finish()) return;
      this.noteLatency((performance.now() - sentAt) * 1000);
      if (res.destroyed) return;
      res.end(a.status, a.reason, answerHeaders(a.rawHeaders, a.body.byteLength, a.hadLength), a.body, a.hold ?? null);
    });
  }

  /** A request whose body is whole: judged (a POST), then answered no-bid or sent on. */
  private onRequest(req: ClientRequest, body: Buffer, res: ClientResponse): void {
    const facts: BidFacts = { id: '', tmax: 0 };
    const verdict = req.method === 'POST' ? this.judge(req, body, facts) : null;
    if (verdict !== null && verdict.nbr >= 0) {
      if (this.cfg.mode === 'block') {
        this.stats.blocked++;
        this.noBid(this.cfg, res, verdict.nbr, facts.id, 'blocked', verdict);
        return;
      }
      this.stats.wouldBlock++;
    }
    this.forward(req, res, body, verdict, facts);
  }
}

/** Why a filter cannot listen on host:port, as said to the operator. */
export function listenFailure(s: FilterSettings, host: string, port: number, e: NodeJS.ErrnoException): string {
  return `filter ${s.name}: cannot listen on ${host}:${port}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : e.message} (--filter-port, or the filter's "port")`;
}

/** The milliseconds of the process's monotonic clock (the same on every thread: hand-over gaps are measured across threads with it). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Starts this thread's filter (once per thread). `deferred`: it does not listen until told to
 * (listen()): a replacement thread takes its port from the main thread once its data is loaded.
 */
export function startFilter(s: FilterSettings, host: string, lender: FilterHost, onListening: (port: number) => void, onFailed: (message: string) => void, deferred = false): RunningFilter {
  const filter = new Filter(s, lender);
  const server = filter.server();
  const srv = server.server;
  let listeningPort = 0;
  let asked = false;
  const listen = (): void => {
    if (asked) return;
    asked = true;
    srv.once('error', (e: NodeJS.ErrnoException) => onFailed(listenFailure(s, host, s.port, e)));
    srv.listen({ host, port: s.port }, () => {
      listeningPort = (srv.address() as { port: number }).port;
      onListening(listeningPort);
    });
  };
  if (!deferred) listen();
  // A replacement takes its port in a gap where connections are refused: the code a listen
  // runs is run once before, on a port of the kernel's choosing.
  else {
    const warm = createServer();
    warm.once('error', () => undefined);
    warm.listen({ host, port: 0 }, () => warm.close());
  }
  return {
    get port() {
      return listeningPort;
    },
    take: () => filter.take(),
    listen,
    release(graceMs, onDone) {
      server.retire(graceMs, () => {
        // Requests still waiting for an upstream connection get their no-bid.
        filter.destroy();
        onDone();
      });
    },
    update: (next) => filter.update(next),
    close(onClosed) {
      // Requests under way get their answers (within their deadline; a connection takes no
      // request after them), then every connection closes.
      server.close(false);
      setTimeout(() => {
        server.close(true);
        filter.destroy();
        onClosed?.();
      }, filter.longestTimeoutMs + 50);
    },
  };
}
