// One bounded HTTP GET for the data refresher (main thread only): a deadline, a size cap
// enforced while reading (compressed and decompressed), conditional headers, redirects
// followed only when asked, and failures as named reasons rather than stack traces.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { parseIp } from '../signals/ip-address.ts';
import { ipRangeName, isBogonRange } from '../signals/special-ranges.ts';
import { shownUrl } from './shown-url.ts';

export interface HttpGetOptions {
  url: string;
  userAgent: string;
  /** Largest body accepted, after decompression. */
  maxBytes: number;
  /** Whole exchange, redirects included (default 60 s). */
  timeoutMs?: number;
  accept?: string;
  /** Sent as If-None-Match / If-Modified-Since. */
  etag?: string | null;
  lastModified?: string | null;
  /** Extra request headers (e.g. Authorization); dropped when a redirect leaves the origin. */
  headers?: Record<string, string>;
  /** Redirects followed here; past that (or with 0) the 3xx comes back as `redirect`. */
  maxRedirects?: number;
  /** Where to connect for a URL instead of its own host and port (tests). */
  connect?: (url: URL) => { host: string; port: number } | null;
  /** Aborts the exchange (shutdown); it then fails as 'aborted'. */
  signal?: AbortSignal;
  /**
   * Connect only to public addresses (for hosts taken from traffic: a bid request must not
   * make ivtd fetch from loopback, private or link-local addresses). Redirects included.
   */
  publicOnly?: boolean;
}

interface Common {
  /** The URL that answered (after followed redirects). */
  url: string;
  etag: string | null;
  lastModified: string | null;
  /** Freshness the server declared (Cache-Control max-age or Expires), epoch ms, or null. */
  expiresAt: number | null;
}

export type HttpGetResult =
  | (Common & { kind: 'ok'; status: number; body: Buffer; contentType: string })
  | (Common & { kind: 'not-modified'; status: 304 })
  | { kind: 'redirect'; status: number; url: string; location: string }
  | { kind: 'status'; status: number; url: string };

export type HttpGetFailure = 'timeout' | 'too_large' | 'network' | 'bad_url' | 'truncated' | 'bad_encoding' | 'aborted' | 'blocked';

export class HttpGetError extends Error {
  constructor(
    readonly reason: HttpGetFailure,
    message: string,
  ) {
    super(message);
    this.name = 'HttpGetError';
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function header(h: http.IncomingHttpHeaders, name: string): string | null {
  const v = h[name];
  if (Array.isArray(v)) return v[0] ?? null;
  return typeof v === 'string' ? v : null;
}

/** Server-declared freshness: Cache-Control max-age wins over Expires (RFC 9111). */
export function freshnessOf(h: http.IncomingHttpHeaders, now: number): number | null {
  const cc = header(h, 'cache-control');
  if (cc) {
    const m = /(?:^|[,\s])max-age\s*=\s*"?(\d{1,10})"?/i.exec(cc.slice(0, 500));
    if (m) return now + Number(m[1]) * 1000;
  }
  const exp = header(h, 'expires');
  if (exp) {
    const t = Date.parse(exp);
    return Number.isNaN(t) ? now : t; // an invalid Expires means "already expired"
  }
  return null;
}

/** A network failure in words ("ENOTFOUND getaddrinfo ENOTFOUND host" said the code twice and nothing else). */
export function networkMessage(host: string, e: NodeJS.ErrnoException): string {
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `${host}: DNS lookup failed (${e.code}): no network, or no such host?`;
  if (e.code === 'ECONNREFUSED') return `${host}: connection refused: nothing listens there`;
  if (e.code === 'ENETUNREACH' || e.code === 'EHOSTUNREACH') return `${host}: network unreachable (${e.code}): no network?`;
  if (e.code === 'ECONNRESET') return `${host}: the connection was reset`;
  return `${host}: ${e.code ?? ''} ${e.message}`.trim();
}

function decoderFor(encoding: string | null): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null | 'unsupported' {
  switch ((encoding ?? '').trim().toLowerCase()) {
    case '':
    case 'identity':
      return null;
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return 'unsupported';
  }
}

/** True for an address a client on the public internet can have (not private, loopback, …). */
export function isPublicAddress(address: string): boolean {
  const ip = parseIp(address);
  if (ip === null) return false;
  const name = ipRangeName(ip);
  if (isBogonRange(name)) return false;
  if (ip.v === 4) return true;
  // An IPv6 address that carries an IPv4 one reaches it through a gateway (a DNS64/NAT64
  // network's translator, a 6to4 relay): judged by that IPv4 address, so a host naming
  // 64:ff9b::a00:1 does not reach 10.0.0.1. NAT64 outside the well-known /96 (RFC 8215's
  // local-use 64:ff9b:1::/48) reaches whatever the local translator does: never public.
  const w = ip.w;
  if (name === 'rfc6052') return w[1] === 0 && w[2] === 0 && !isBogonRange(ipRangeName({ v: 4, n: w[3]! }));
  if (name === '6to4') return !isBogonRange(ipRangeName({ v: 4, n: (((w[0]! & 0xffff) << 16) | (w[1]! >>> 16)) >>> 0 }));
  return true;
}

/** dns.lookup that drops non-public addresses, and fails when none is left. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 4);
    const ok = (addresses as dns.LookupAddress[]).filter((a) => isPublicAddress(a.address));
    if (ok.length === 0) {
      const e = Object.assign(new Error(`${hostname} resolves only to non-public addresses`), { code: 'EBLOCKED' });
      return callback(e, '', 4);
    }
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, ok);
    callback(null, ok[0]!.address, ok[0]!.family);
  });
};

function once(opts: HttpGetOptions, url: URL, deadline: number, headers: Record<string, string>): Promise<{ res: http.IncomingMessage; body: Buffer | null }> {
  return new Promise((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    const target = opts.connect?.(url) ?? null;
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      reject(new HttpGetError('timeout', `no answer within ${opts.timeoutMs ?? 60000} ms`));
      return;
    }
    let settled = false;
    const fail = (e: HttpGetError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(e);
    };
    const req = lib.request(
      {
        protocol: url.protocol,
        host: target?.host ?? url.hostname,
        port: target?.port ?? (url.port || undefined),
        servername: url.hostname,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { Host: url.host, ...headers },
        agent: false,
        ...(opts.publicOnly && !target ? { lookup: publicLookup } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          // Nothing of a non-200 body is needed: the connection is closed, not drained (a
          // 404 or a redirect with an endless body would otherwise be read for ever, past
          // the deadline and the size limit), and the status is the answer.
          settled = true;
          clearTimeout(timer);
          req.destroy();
          resolve({ res, body: null });
          return;
        }
        const declared = Number(header(res.headers, 'content-length') ?? NaN);
        if (declared > opts.maxBytes) {
          fail(new HttpGetError('too_large', `body of ${declared} bytes is over the ${opts.maxBytes}-byte limit`));
          return;
        }
        const decoder = decoderFor(header(res.headers, 'content-encoding'));
        if (decoder === 'unsupported') {
          fail(new HttpGetError('bad_encoding', `unsupported Content-Encoding "${header(res.headers, 'content-encoding')}"`));
          return;
        }
        let raw = 0;
        res.on('data', (c: Buffer) => {
          raw += c.length;
          // A compressed body cannot be larger than what it decompresses to, within reason.
          if (raw > opts.maxBytes) fail(new HttpGetError('too_large', `body is over the ${opts.maxBytes}-byte limit`));
        });
        res.on('aborted', () => fail(new HttpGetError('truncated', 'the connection closed before the whole body arrived')));
        res.on('error', (e) => fail(new HttpGetError('truncated', `body read failed: ${e.message}`)));
        const stream: Readable = decoder ? res.pipe(decoder) : res;
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (c: Buffer) => {
          size += c.length;
          if (size > opts.maxBytes) {
            fail(new HttpGetError('too_large', `body is over the ${opts.maxBytes}-byte limit after decompression`));
            return;
          }
          chunks.push(c);
        });
        if (decoder) decoder.on('error', (e) => fail(new HttpGetError('bad_encoding', `cannot decompress the body: ${e.message}`)));
        stream.on('end', () => {
          if (settled) return;
          if (!res.complete) {
            fail(new HttpGetError('truncated', 'the connection closed before the whole body arrived'));
            return;
          }
          settled = true;
          clearTimeout(timer);
          resolve({ res, body: Buffer.concat(chunks, size) });
        });
      },
    );
    const timer = setTimeout(() => fail(new HttpGetError('timeout', `no complete answer within ${opts.timeoutMs ?? 60000} ms`)), remaining);
    const onAbort = () => fail(new HttpGetError('aborted', 'stopped: ivtd is shutting down'));
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => opts.signal?.removeEventListener('abort', onAbort));
    req.on('error', (e: NodeJS.ErrnoException) =>
      fail(e.code === 'EBLOCKED' ? new HttpGetError('blocked', e.message) : new HttpGetError('network', networkMessage(url.host, e))),
    );
    req.end();
  });
}

/** Fetches `opts.url`. Throws HttpGetError for transport failures; any HTTP status is a result. */
export async function httpGet(opts: HttpGetOptions): Promise<HttpGetResult> {
  let url: URL;
  try {
    url = new URL(opts.url);
  } catch {
    // Messages end up in status and state.json: a URL in them never carries its password.
    throw new HttpGetError('bad_url', `"${shownUrl(opts.url).slice(0, 200)}" is not a URL`);
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const origin = url.origin;
  let redirectsLeft = opts.maxRedirects ?? 0;
  for (;;) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new HttpGetError('bad_url', `${url.protocol} URLs are not fetched`);
    if (opts.publicOnly && !opts.connect) {
      const literal = url.hostname.replace(/^\[|\]$/g, '');
      if (parseIp(literal) !== null && !isPublicAddress(literal)) throw new HttpGetError('blocked', `${url.hostname} is not a public address`);
    }
    const headers: Record<string, string> = {
      'User-Agent': opts.userAgent,
      Accept: opts.accept ?? '*/*',
      'Accept-Encoding': 'gzip, deflate, br',
      ...(url.origin === origin ? (opts.headers ?? {}) : {}),
    };
    if (opts.etag) headers['If-None-Match'] = opts.etag;
    if (opts.lastModified) headers['If-Modified-Since'] = opts.lastModified;
    const { res, body } = await once(opts, url, deadline, headers);
    const status = res.statusCode ?? 0;
    const common = (): Common => ({
      url: url.href,
      etag: header(res.headers, 'etag'),
      lastModified: header(res.headers, 'last-modified'),
      expiresAt: freshnessOf(res.headers, Date.now()),
    });
    if (status === 200 && body) {
      return { kind: 'ok', status, body, contentType: header(res.headers, 'content-type') ?? '', ...common() };
    }
    if (status === 304) return { kind: 'not-modified', status, ...common() };
    if (REDIRECTS.has(status)) {
      const loc = header(res.headers, 'location');
      if (!loc) return { kind: 'status', status, url: url.href };
      let next: URL;
      try {
        next = new URL(loc, url);
      } catch {
        throw new HttpGetError('bad_url', `redirect to "${shownUrl(loc).slice(0, 200)}" is not a URL`);
      }
      if (redirectsLeft <= 0) return { kind: 'redirect', status, url: url.href, location: next.href };
      redirectsLeft--;
      url = next;
      continue;
    }
    return { kind: 'status', status, url: url.href };
  }
}
