// The small HTTP layer of the main-thread listeners (account API + dashboard, reporting).
// node:http, exact-path and `:param` routes, bounded JSON/form bodies, and one place that
// turns HttpError (or any thrown error) into the JSON error body.
import { isUtf8 } from 'node:buffer';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorJson, FieldError, HttpError, ListenError, listenHint, STATUS_TEXT, type ErrorAnswer } from '../base/errors.ts';
import { log } from '../base/log.ts';
import type { TlsCredentials } from './tls.ts';
import { DOCUMENT_LIMITS, jsonFault, type JsonValue } from '../base/bounded-json.ts';

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  query: URLSearchParams;
  params: Record<string, string>;
  /** Client address (socket peer). */
  ip: string;
}

export type Handler = (ctx: Ctx) => Promise<void> | void;

interface Route {
  method: string;
  parts: string[];
  handler: Handler;
}

export const DEFAULT_BODY_LIMIT = 64 * 1024;

export class Router {
  private routes: Route[] = [];
  private fallback: Handler | null = null;
  private guards: Array<{ parts: string[]; check: Handler }> = [];

  on(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method: method.toUpperCase(), parts: pattern.split('/').filter(Boolean), handler });
    return this;
  }
  get(p: string, h: Handler): this { return this.on('GET', p, h); }
  post(p: string, h: Handler): this { return this.on('POST', p, h); }
  patch(p: string, h: Handler): this { return this.on('PATCH', p, h); }
  delete(p: string, h: Handler): this { return this.on('DELETE', p, h); }
  /**
   * Runs `check` before routing on `prefix` and every path under it, matched by segments
   * like routes; whatever it throws is the response (e.g. one auth rule for a whole family
   * of paths, including paths no route matches).
   */
  guard(prefix: string, check: Handler): this {
    this.guards.push({ parts: prefix.split('/').filter(Boolean), check });
    return this;
  }

  private guarded(path: string): Handler[] {
    if (this.guards.length === 0) return [];
    const segs = path.split('/').filter(Boolean);
    return this.guards.filter((g) => g.parts.length <= segs.length && g.parts.every((p, i) => p === segs[i])).map((g) => g.check);
  }

  /** Handler for requests no route matches (e.g. static files); default is a JSON 404. */
  otherwise(h: Handler): this {
    this.fallback = h;
    return this;
  }

  private match(method: string, path: string): { route: Route | null; params: Record<string, string>; allowed: string[] } {
    const segs = path.split('/').filter(Boolean);
    // The methods of the routes whose path matches: the 405's Allow (RFC 9110: a 405 must name them).
    const allowed: string[] = [];
    for (const r of this.routes) {
      if (r.parts.length !== segs.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < segs.length; i++) {
        const p = r.parts[i]!;
        if (p.startsWith(':')) {
          try {
            params[p.slice(1)] = decodeURIComponent(segs[i]!);
          } catch {
            ok = false;
            break;
          }
        } else if (p !== segs[i]) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { route: r, params, allowed };
      if (!allowed.includes(r.method)) allowed.push(r.method);
      if (r.method === 'GET' && !allowed.includes('HEAD')) allowed.push('HEAD');
    }
    return { route: null, params: {}, allowed };
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendError(res, new HttpError('invalid_request', 'The request URL cannot be parsed.'));
      return;
    }
    const { route, params, allowed } = this.match(method, url.pathname);
    const ctx: Ctx = { req, res, method, path: url.pathname, query: url.searchParams, params, ip: req.socket.remoteAddress ?? '' };
    try {
      for (const check of this.guarded(url.pathname)) await check(ctx);
      if (route) await route.handler(ctx);
      else if (allowed.length > 0) throw new HttpError('method_not_allowed', `${method} is not allowed on ${url.pathname}; allowed: ${allowed.join(', ')}.`, undefined, { Allow: allowed.join(', ') });
      else if (this.fallback) await this.fallback(ctx);
      else throw new HttpError('not_found', `No such endpoint: ${url.pathname}.`);
    } catch (e) {
      if (!(e instanceof HttpError)) log.error({ err: (e as Error).message, stack: (e as Error).stack, path: url.pathname }, 'request failed');
      if (!res.headersSent) sendError(res, e);
      else res.destroy();
    }
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendError(res: ServerResponse, e: unknown): void {
  const err = e instanceof HttpError ? e : new HttpError('internal', 'Internal error; the server log has the details.');
  sendJson(res, err.status, err.body(), err.headers ?? {});
}

/** Reads the whole body up to `limit` bytes; 413 past it (the rest is not buffered). */
export function readBody(req: IncomingMessage, limit = DEFAULT_BODY_LIMIT): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) {
    req.resume();
    return Promise.reject(new HttpError('payload_too_large', `Request body is larger than ${limit} bytes.`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        reject(new HttpError('payload_too_large', `Request body is larger than ${limit} bytes.`));
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (!failed) reject(new HttpError('invalid_request', `Could not read the request body: ${e.message}`));
    });
  });
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** A JSON object body; `status` (default 422) when the type or the JSON is wrong. */
export async function readJsonObject(req: IncomingMessage, opts: { limit?: number; status?: number } = {}): Promise<Record<string, unknown>> {
  const status = opts.status ?? 422;
  if (mediaType(req) !== 'application/json') {
    throw new HttpError('unprocessable', 'Send the body as application/json.', status);
  }
  // A body this reads as JSON must be the JSON itself: a compressed one would only be
  // "not valid JSON" (read as is, and the coding ignored, a client's mistake went unnoticed).
  const coding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (coding !== '' && coding !== 'identity') {
    throw new HttpError('unprocessable', `Content-Encoding ${coding.length > 40 ? coding.slice(0, 40) + '…' : coding} is not taken here: send the JSON as is.`, status);
  }
  const buf = await readBody(req, opts.limit);
  // Bytes that are not UTF-8 would be stored as U+FFFD, silently changed: refused instead.
  if (!isUtf8(buf)) throw new HttpError('unprocessable', 'The request body is not valid UTF-8.', status);
  const text = buf.toString('utf8');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new HttpError('unprocessable', 'The request body is not valid JSON.', status);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError('unprocessable', 'The request body must be a JSON object.', status);
  // JSON.parse keeps the last of two equal keys silently, and builds any nesting (which the
  // walks below and after would overflow the stack on): both are refused, saying where.
  const fault = jsonFault(text, v as JsonValue, DOCUMENT_LIMITS);
  if (fault !== null) throw new HttpError('unprocessable', `The request body is refused: ${fault}.`, status);
  // Only a \u escape makes a lone surrogate (half of a pair), which no store or page keeps as sent.
  const bad = text.includes('\\') ? illFormed(v, '') : null;
  if (bad !== null) {
    throw new FieldError(bad.path || 'body', `${describe(bad)} holds a lone surrogate (a \\uD800-\\uDFFF escape without its other half): send valid Unicode text.`, status);
  }
  return v as Record<string, unknown>;
}

/** The first string, or key (in the object at `path`), of a parsed JSON value that is not well-formed Unicode; `path` '' is the body itself. */
function illFormed(v: unknown, path: string): { path: string; key: boolean } | null {
  if (typeof v === 'string') return v.isWellFormed() ? null : { path, key: false };
  if (typeof v !== 'object' || v === null) return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const at = illFormed(v[i], `${path}[${i}]`);
      if (at !== null) return at;
    }
    return null;
  }
  for (const [k, x] of Object.entries(v)) {
    if (!k.isWellFormed()) return { path, key: true };
    const at = illFormed(x, path ? `${path}.${k}` : k);
    if (at !== null) return at;
  }
  return null;
}

function describe(at: { path: string; key: boolean }): string {
  const where = at.path || 'the body';
  return at.key ? `a key in ${where}` : where;
}

/** Where the first string or key of a parsed JSON value that is not well-formed Unicode is (`labels[0].source`, `the body` at the top, `a key in …`), or null. */
export function illFormedAt(v: unknown, path: string): string | null {
  const at = illFormed(v, path);
  return at === null ? null : describe(at);
}

/** An application/x-www-form-urlencoded body; 422 when the type is wrong. */
export async function readForm(req: IncomingMessage, limit?: number): Promise<URLSearchParams> {
  if (mediaType(req) !== 'application/x-www-form-urlencoded') {
    throw new HttpError('unprocessable', 'Send the body as application/x-www-form-urlencoded.');
  }
  const buf = await readBody(req, limit);
  return new URLSearchParams(buf.toString('utf8'));
}

/** Largest request head (request line and headers) the listeners read. */
const MAX_HEADER_BYTES = 16 * 1024;

/** How long an unreadable request's answer waits for the answers owed before it (a handler that never ends). */
const OWED_ANSWER_WAIT_MS = 30_000;

/**
 * A request node:http could not read (an unknown method, a space or a raw byte in the target,
 * a broken Content-Length or chunk, headers past maxHeaderSize, too slow): the JSON error
 * body every other refusal has (node's own answer has no body), then the connection closes.
 * When requests read whole before it on the same connection (pipelined) are still being
 * answered, their answers go first: written at once, the error took the place of the first
 * one's, so the client read "400" for a request that was carried out. As node does, nothing
 * is written once the answer of the request that broke has begun.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  if (inFlight && inFlight.req.complete) {
    // An answer still owns the socket: its 'close' comes once node has let go of it (and
    // handed the socket to the next answer owed, if any), or when the connection drops.
    const timer = setTimeout(() => socket.destroy(), OWED_ANSWER_WAIT_MS).unref();
    inFlight.once('close', () => {
      clearTimeout(timer);
      answerClientError(err, socket);
    });
    return;
  }
  if (inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const e: ErrorAnswer =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? { status: 431, code: 'header_too_large', message: `The request headers are over ${MAX_HEADER_BYTES / 1024} KB.` }
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? { status: 408, code: 'request_timeout', message: 'The request did not arrive in time: send it again.' }
        : { status: 400, code: 'invalid_request', message: `The request is not valid HTTP/1.1 (${err.code ?? 'unreadable'}): check its method, its target (percent-encode spaces and bytes past ASCII), its headers and its body's length.` };
  const body = errorJson(e);
  socket.end(`HTTP/1.1 ${STATUS_TEXT[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

export interface Listener {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/**
 * Listens with the router (HTTPS when `tls` is given: its pair, updated by its use());
 * close() stops accepting, lets in-flight requests end, then closes idle sockets.
 */
export function listen(router: Router, host: string, port: number, name: string, tls?: TlsCredentials | null): Promise<Listener> {
  // Headers within 10 s, the whole request within 30 s (checked each second: Node's default
  // check every 30 s let a slow client hold a connection up to a minute; docs/reliability.md).
  const options = { requestTimeout: 30_000, headersTimeout: 10_000, connectionsCheckingInterval: 1000, maxHeaderSize: MAX_HEADER_BYTES };
  const handler = (req: IncomingMessage, res: ServerResponse) => void router.handle(req, res);
  let server: Server;
  if (tls) {
    // A handshake that does not finish within the headers' time is dropped too.
    const https = createHttpsServer({ ...options, ...tls.serverOptions(), handshakeTimeout: 10_000 }, handler);
    tls.track(https);
    // node:https's Server is node:http's with TLS underneath: the same request API.
    server = https as unknown as Server;
  } else server = createServer(options, handler);
  server.keepAliveTimeout = 5000;
  server.on('clientError', answerClientError);
  return new Promise((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new ListenError(`${name}: cannot listen on ${host}:${port}: ${e.message}${listenHint(e.code)}`)));
    server.listen(port, host, () => {
      const bound = (server.address() as AddressInfo).port;
      resolve({
        server,
        port: bound,
        close: () =>
          new Promise<void>((r) => {
            server.close(() => r());
            server.closeIdleConnections();
            setTimeout(() => server.closeAllConnections(), 3000).unref();
          }),
      });
    });
  });
}
