// A local HTTP server (ephemeral port, loopback) standing in for the sites the data
// refresher fetches from. Routes are keyed by host + path, so one server can play many
// hosts when the client connects here for every host (the refresher's `connect` hook).
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface Route {
  status?: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Answers 304 to a matching If-None-Match. */
  etag?: string;
  /** Answers 304 when If-Modified-Since equals this. */
  lastModified?: string;
  /** Sends these bytes, announces `declaredLength`, then drops the connection. */
  truncateTo?: number;
  handler?: (req: http.IncomingMessage, res: http.ServerResponse) => void;
}

export interface Seen {
  host: string;
  path: string;
  headers: http.IncomingHttpHeaders;
}

export class FakeWeb {
  readonly routes = new Map<string, Route>();
  readonly seen: Seen[] = [];
  private server = http.createServer((req, res) => this.handle(req, res));
  port = 0;

  static async start(): Promise<FakeWeb> {
    const w = new FakeWeb();
    w.server.listen(0, '127.0.0.1');
    await once(w.server, 'listening');
    w.port = (w.server.address() as AddressInfo).port;
    return w;
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A path on 127.0.0.1, or `host/path` for a named host. */
  set(key: string, route: Route | string): void {
    this.routes.set(key, typeof route === 'string' ? { body: route } : route);
  }

  /** Connect hook for the refresher: every host is served here. */
  readonly connect = () => ({ host: '127.0.0.1', port: this.port });

  requestsTo(pathOrKey: string): Seen[] {
    return this.seen.filter((s) => s.path === pathOrKey || `${s.host}${s.path}` === pathOrKey);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    const path = req.url ?? '/';
    this.seen.push({ host, path, headers: req.headers });
    const r = this.routes.get(`${host}${path}`) ?? this.routes.get(path);
    if (!r) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    if (r.handler) return r.handler(req, res);
    const headers: Record<string, string> = { 'Content-Type': 'text/plain; charset=utf-8', ...r.headers };
    if (r.etag) headers.ETag = r.etag;
    if (r.lastModified) headers['Last-Modified'] = r.lastModified;
    if ((r.etag && req.headers['if-none-match'] === r.etag) || (r.lastModified && req.headers['if-modified-since'] === r.lastModified)) {
      res.writeHead(304, headers).end();
      return;
    }
    const body = typeof r.body === 'string' ? Buffer.from(r.body) : (r.body ?? Buffer.alloc(0));
    if (r.truncateTo !== undefined) {
      res.writeHead(r.status ?? 200, { ...headers, 'Content-Length': String(body.length) });
      res.write(body.subarray(0, r.truncateTo));
      setTimeout(() => res.socket?.destroy(), 10);
      return;
    }
    res.writeHead(r.status ?? 200, { ...headers, 'Content-Length': String(body.length) }).end(body);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
