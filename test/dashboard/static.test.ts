// The dashboard's HTTP side through a real listener: the build's files, cache headers, the
// CSP on every response, conditional and compressed responses, dashboard-config.json, and
// the "not built" answer.
import t from 'tap';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import { resolveConfig, type Config } from '../../src/base/config.ts';
import { buildDashboard } from '../../tools/build-dashboard.ts';
import { CONTENT_SECURITY_POLICY, dashboardUrls, mountDashboard } from '../../src/dashboard/static.ts';
import { listen, Router } from '../../src/http/router.ts';

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const dir = mkdtempSync(join(tmpdir(), 'ivtd-dash-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const built = await buildDashboard({ outDir: join(dir, 'dashboard') });
const config: Config = { ...resolveConfig({}, {}), host: '127.0.0.1' };

async function serve(assetsDir: string, cfg = config) {
  const router = new Router();
  router.get('/v1/ping', (ctx) => {
    ctx.res.end('pong');
  });
  mountDashboard(router, { assetsDir, config: cfg, ports: () => ({ prebid: 19898, api: 19899, reporting: 19900 }) });
  const l = await listen(router, '127.0.0.1', 0, 'test');
  t.teardown(() => l.close());
  return l.port;
}

t.test('the build', async (t) => {
  const names = built.files.map((f) => f.name);
  t.ok(names.includes('index.html'));
  t.match(names.join(' '), /app-[A-Z0-9]{8}\.js/);
  t.match(names.join(' '), /app-[A-Z0-9]{8}\.css/);
  const html = readFileSync(join(built.outDir, 'index.html'), 'utf8');
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  t.notMatch(html, /<style|style=/, 'no inline style');
  for (const f of readdirSync(built.outDir)) {
    const text = readFileSync(join(built.outDir, f), 'utf8');
    const origins = [...text.matchAll(/(?:https?:)?\/\/([a-z0-9-]+(?:\.[a-z0-9-]+)+)/gi)].map((m) => m[1]!).filter((h) => h !== 'www.w3.org');
    t.same(origins, [], `${f} names no other origin (no CDN, no web fonts)`);
  }
  const js = built.files.find((f) => f.name.endsWith('.js'))!;
  t.ok(js.bytes < 200 * 1024, `the script stays small (${js.bytes} bytes)`);
});

t.test('serving the built files', async (t) => {
  const port = await serve(built.outDir);
  const index = await get(port, '/');
  t.equal(index.status, 200);
  t.match(index.headers['content-type'], /^text\/html/);
  t.equal(index.headers['cache-control'], 'no-cache', 'index.html is revalidated every time');
  t.equal(index.headers['content-security-policy'], CONTENT_SECURITY_POLICY);
  for (const d of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'", "frame-ancestors 'none'"]) {
    t.ok(CONTENT_SECURITY_POLICY.includes(d), `CSP has ${d}`);
  }
  t.notMatch(CONTENT_SECURITY_POLICY, /unsafe-inline|unsafe-eval|\*/, 'nothing loosens the CSP');
  t.equal(index.headers['x-content-type-options'], 'nosniff');
  t.equal(index.headers['referrer-policy'], 'no-referrer');
  t.same(index.body, readFileSync(join(built.outDir, 'index.html')));
  t.same((await get(port, '/index.html')).body, index.body);

  const etag = String(index.headers.etag);
  const again = await get(port, '/', { 'If-None-Match': etag });
  t.equal(again.status, 304, 'unchanged index.html is not sent again');
  t.equal(again.body.length, 0);

  const jsName = /src="\/(app-[A-Z0-9]{8}\.js)"/.exec(index.body.toString())![1]!;
  const cssName = /href="\/(app-[A-Z0-9]{8}\.css)"/.exec(index.body.toString())![1]!;
  const js = await get(port, `/${jsName}`);
  t.equal(js.status, 200);
  t.match(js.headers['content-type'], /^text\/javascript/);
  t.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable', 'hashed files are cached for a year');
  t.equal(js.headers['content-security-policy'], CONTENT_SECURITY_POLICY);
  t.same(js.body, readFileSync(join(built.outDir, jsName)));
  const css = await get(port, `/${cssName}`, { 'Accept-Encoding': 'gzip, br' });
  t.equal(css.headers['content-encoding'], 'gzip');
  t.match(css.headers.vary, /Accept-Encoding/);
  t.same(gunzipSync(css.body), readFileSync(join(built.outDir, cssName)), 'gzip body is the file');
  t.ok(css.body.length < readFileSync(join(built.outDir, cssName)).length);

  const head = await get(port, `/${jsName}`, {}, 'HEAD');
  t.equal(head.status, 200);
  t.equal(head.body.length, 0);
  t.equal(Number(head.headers['content-length']), js.body.length);

  for (const bad of ['/nope.js', '/../package.json', '/%2e%2e/package.json', '/app-XXXXXXXX.js', '/.hidden']) {
    const r = await get(port, bad);
    t.equal(r.status, 404, `${bad} is not found`);
    t.match(JSON.parse(r.body.toString()), { error: 'not_found' });
  }
  const post = await get(port, '/', {}, 'POST');
  t.equal(post.status, 404, 'static files answer only GET/HEAD');
  t.equal((await get(port, '/v1/ping')).body.toString(), 'pong', 'routes still win over the fallback');
});

t.test('dashboard-config.json', async (t) => {
  const port = await serve(built.outDir);
  const r = await get(port, '/dashboard-config.json');
  t.equal(r.status, 200);
  t.equal(r.headers['cache-control'], 'no-store');
  t.same(JSON.parse(r.body.toString()), {
    prebid_url: 'http://127.0.0.1:19898',
    reporting_url: 'http://127.0.0.1:19900',
    api_url: 'http://127.0.0.1:19899',
  });
  // Bound to every interface: the host the browser used.
  const any = { ...config, host: '0.0.0.0' };
  const ports = { prebid: 1, api: 2, reporting: 3 };
  t.same(dashboardUrls(any, ports, 'ivtd.example:2'), { prebid_url: 'http://ivtd.example:1', reporting_url: 'http://ivtd.example:3', api_url: 'http://ivtd.example:2' });
  t.equal(dashboardUrls(any, ports, '[::1]:2').prebid_url, 'http://[::1]:1');
  t.equal(dashboardUrls(any, ports, 'evil"host/<x>').prebid_url, 'http://127.0.0.1:1', 'a junk Host header is not echoed');
  t.equal(dashboardUrls({ ...config, host: '::1' }, ports, undefined).api_url, 'http://[::1]:2');
});

t.test('not built yet', async (t) => {
  const empty = join(dir, 'empty');
  const port = await serve(empty);
  const r = await get(port, '/');
  t.equal(r.status, 503);
  t.match(JSON.parse(r.body.toString()).message, /npm run build:dashboard/, 'says how to build it');
  // A build that appears later is picked up without a restart.
  await buildDashboard({ outDir: empty });
  t.equal((await get(port, '/')).status, 200);
});
