// Serves the built dashboard on the account API port: `/` (index.html, revalidated every
// time) and the content-hashed files (cached for a year), all under a strict CSP, plus
// GET /dashboard-config.json telling the page where this server's other ports are.
// Inside the single executable the files come from the embedded assets; in a checkout
// from data/generated/dashboard/ (built by tools/build-dashboard.ts).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Config } from '../base/config.ts';
import { HttpError } from '../base/errors.ts';
import { sendJson, type Ctx, type Router } from '../http/router.ts';
import { isSea, listAssets, readAsset, repoRoot } from '../runtime/assets.ts';

/** Asset key prefix of the built dashboard (see src/runtime/asset-table.ts). */
export const DASHBOARD_ASSET_PREFIX = 'data/generated/dashboard/';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every dashboard response. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  json: 'application/json; charset=utf-8',
  png: 'image/png',
  woff2: 'font/woff2',
};

/** Files whose names carry a content hash (tools/build-dashboard.ts: name-XXXXXXXX.ext) never change. */
const HASHED = /-[A-Z0-9]{8}\.[a-z0-9]+$/;
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

interface StaticFile {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  immutable: boolean;
}

export interface DashboardOptions {
  /** Folder of a build to serve instead of the default (tests). */
  assetsDir?: string;
  config: Config;
  /** The bound ports, read at request time (ephemeral ports are known only after listen). */
  ports: () => { prebid: number; api: number; reporting: number };
}

/** Reads the built files: from the given folder, the embedded assets (binary) or the checkout. */
export function loadDashboardFiles(assetsDir?: string): Map<string, StaticFile> {
  const raw = new Map<string, Buffer>();
  if (assetsDir === undefined && isSea()) {
    for (const key of listAssets(DASHBOARD_ASSET_PREFIX)) {
      const name = key.slice(DASHBOARD_ASSET_PREFIX.length);
      if (SAFE_NAME.test(name)) raw.set(name, Buffer.from(readAsset(key)));
    }
  } else {
    const dir = assetsDir ?? join(repoRoot(), DASHBOARD_ASSET_PREFIX);
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      // not built: the handler explains how to build
    }
    for (const name of names) if (SAFE_NAME.test(name)) raw.set(name, readFileSync(join(dir, name)));
  }
  const files = new Map<string, StaticFile>();
  for (const [name, body] of raw) {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    const type = TYPES[ext] ?? 'application/octet-stream';
    const compressible = /^(text\/|image\/svg|application\/json)/.test(type) && body.length > 512;
    files.set(name, {
      body,
      gzip: compressible ? gzipSync(body, { level: 9 }) : null,
      type,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: HASHED.test(name),
    });
  }
  return files;
}

/** Where the browser should send lookups, reports and API calls: the host it used to reach us, on each port. */
export function dashboardUrls(config: Config, ports: { prebid: number; api: number; reporting: number }, hostHeader: string | undefined): { prebid_url: string; reporting_url: string; api_url: string } {
  let host = config.host;
  if (host === '0.0.0.0' || host === '::' || host === '') {
    // Bound to every interface: the name the browser used is the one that reaches us.
    const fromHeader = hostOf(hostHeader);
    host = fromHeader ?? '127.0.0.1';
  }
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  // --tls-cert covers the account and reporting ports; pre-bid lookups stay plain HTTP.
  const secure = config.tlsCert !== undefined ? 'https' : 'http';
  return {
    prebid_url: `http://${h}:${ports.prebid}`,
    reporting_url: `${secure}://${h}:${ports.reporting}`,
    api_url: `${secure}://${h}:${ports.api}`,
  };
}

/** The host part of a Host header, if it is a plausible host name or address. */
function hostOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::\d+)?$/.exec(header.trim());
  return m ? m[1] : undefined;
}

/** Registers the dashboard on the account API router: `/dashboard-config.json` and the static fallback. */
export function mountDashboard(router: Router, opts: DashboardOptions): void {
  let files: Map<string, StaticFile> | null = null;
  const get = (): Map<string, StaticFile> => {
    // In a checkout, keep looking until a build appears (the server may start before it).
    if (!files || (files.size === 0 && !isSea())) files = loadDashboardFiles(opts.assetsDir);
    return files;
  };

  router.get('/dashboard-config.json', (ctx) => {
    sendJson(ctx.res, 200, dashboardUrls(opts.config, opts.ports(), ctx.req.headers.host), SECURITY_HEADERS);
  });

  router.otherwise((ctx) => serveStatic(ctx, get()));
}

function serveStatic(ctx: Ctx, files: Map<string, StaticFile>): void {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    throw new HttpError('not_found', `No such endpoint: ${ctx.method} ${ctx.path}.`);
  }
  const name = ctx.path === '/' || ctx.path === '/index.html' ? 'index.html' : ctx.path.slice(1);
  if (files.size === 0 && name === 'index.html') {
    throw new HttpError('unavailable', 'The dashboard is not built. Run: npm run build:dashboard');
  }
  const file = SAFE_NAME.test(name) ? files.get(name) : undefined;
  if (!file) throw new HttpError('not_found', `No such endpoint: ${ctx.path}.`);

  const { req, res } = ctx;
  const headers: Record<string, string> = {
    ...SECURITY_HEADERS,
    'Content-Type': file.type,
    'Cache-Control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    ETag: file.etag,
    Vary: 'Accept-Encoding',
  };
  if (req.headers['if-none-match'] === file.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  let body = file.body;
  if (file.gzip && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
    body = file.gzip;
    headers['Content-Encoding'] = 'gzip';
  }
  headers['Content-Length'] = String(body.length);
  res.writeHead(200, headers);
  res.end(ctx.method === 'HEAD' ? undefined : body);
}
