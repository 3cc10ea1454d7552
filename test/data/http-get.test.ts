import t from 'tap';
import http from 'node:http';
import { once } from 'node:events';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { HttpGetError, freshnessOf, httpGet, isPublicAddress } from '../../src/data/http-get.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

async function serve(t: { teardown(fn: () => void): void }, handler: Handler): Promise<string> {
  const server = http.createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const UA = 'ivtd-test/1.0';

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof HttpGetError) return e.reason;
    throw e;
  }
  return 'no error';
}

t.test('200, conditional headers and 304', async (t) => {
  const seen: http.IncomingHttpHeaders[] = [];
  const base = await serve(t, (req, res) => {
    seen.push(req.headers);
    if (req.headers['if-none-match'] === '"v1"') {
      res.writeHead(304, { ETag: '"v1"' }).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain', ETag: '"v1"', 'Last-Modified': 'Tue, 01 Oct 2024 00:00:00 GMT', 'Cache-Control': 'max-age=3600' });
    res.end('hello');
  });
  const r = await httpGet({ url: `${base}/x`, userAgent: UA, maxBytes: 100 });
  t.equal(r.kind, 'ok');
  if (r.kind === 'ok') {
    t.equal(r.body.toString(), 'hello');
    t.equal(r.etag, '"v1"');
    t.equal(r.lastModified, 'Tue, 01 Oct 2024 00:00:00 GMT');
    t.ok(r.expiresAt! > Date.now() + 3500_000);
  }
  t.equal(seen[0]!['user-agent'], UA);
  const again = await httpGet({ url: `${base}/x`, userAgent: UA, maxBytes: 100, etag: '"v1"', lastModified: 'Tue, 01 Oct 2024 00:00:00 GMT' });
  t.equal(again.kind, 'not-modified');
  t.equal(seen[1]!['if-modified-since'], 'Tue, 01 Oct 2024 00:00:00 GMT');
});

t.test('size limits: declared, streamed and decompressed', async (t) => {
  const big = Buffer.alloc(5000, 'a');
  const bomb = zlib.gzipSync(Buffer.alloc(10_000_000));
  const base = await serve(t, (req, res) => {
    if (req.url === '/declared') res.writeHead(200, { 'Content-Length': big.length }).end(big);
    else if (req.url === '/chunked') {
      res.writeHead(200);
      for (let i = 0; i < 10; i++) res.write(big.subarray(0, 500));
      res.end();
    } else if (req.url === '/bomb') res.writeHead(200, { 'Content-Encoding': 'gzip' }).end(bomb);
    else if (req.url === '/gzip') res.writeHead(200, { 'Content-Encoding': 'gzip' }).end(zlib.gzipSync('compressed fine'));
    else if (req.url === '/weird') res.writeHead(200, { 'Content-Encoding': 'zstd-ish' }).end('x');
    else if (req.url === '/badgzip') res.writeHead(200, { 'Content-Encoding': 'gzip' }).end('not gzip at all');
  });
  t.equal(await failure(httpGet({ url: `${base}/declared`, userAgent: UA, maxBytes: 1000 })), 'too_large');
  t.equal(await failure(httpGet({ url: `${base}/chunked`, userAgent: UA, maxBytes: 1000 })), 'too_large');
  t.equal(await failure(httpGet({ url: `${base}/bomb`, userAgent: UA, maxBytes: 1_000_000 })), 'too_large', 'a gzip bomb stops at the limit');
  const ok = await httpGet({ url: `${base}/gzip`, userAgent: UA, maxBytes: 1000 });
  t.equal(ok.kind === 'ok' && ok.body.toString(), 'compressed fine');
  t.equal(await failure(httpGet({ url: `${base}/weird`, userAgent: UA, maxBytes: 1000 })), 'bad_encoding');
  t.equal(await failure(httpGet({ url: `${base}/badgzip`, userAgent: UA, maxBytes: 1000 })), 'bad_encoding');
});

t.test('truncated bodies, timeouts, refused connections', async (t) => {
  const base = await serve(t, (req, res) => {
    if (req.url === '/truncated') {
      res.writeHead(200, { 'Content-Length': 1000 });
      res.write('only part of it');
      setTimeout(() => res.socket?.destroy(), 20);
    } else if (req.url === '/chunk-cut') {
      res.writeHead(200);
      res.write('part');
      setTimeout(() => res.socket?.destroy(), 20);
    }
    // '/hang' never answers
  });
  t.equal(await failure(httpGet({ url: `${base}/truncated`, userAgent: UA, maxBytes: 5000 })), 'truncated');
  t.equal(await failure(httpGet({ url: `${base}/chunk-cut`, userAgent: UA, maxBytes: 5000 })), 'truncated');
  const t0 = Date.now();
  t.equal(await failure(httpGet({ url: `${base}/hang`, userAgent: UA, maxBytes: 5000, timeoutMs: 300 })), 'timeout');
  t.ok(Date.now() - t0 < 3000, 'the deadline holds');
  t.equal(await failure(httpGet({ url: `http://127.0.0.1:1/x`, userAgent: UA, maxBytes: 10 })), 'network');
  t.equal(await failure(httpGet({ url: 'ftp://127.0.0.1/x', userAgent: UA, maxBytes: 10 })), 'bad_url');
  t.equal(await failure(httpGet({ url: 'not a url', userAgent: UA, maxBytes: 10 })), 'bad_url');
});

t.test('a status other than 200 with an endless body: answered at once, and its connection closed, not drained', async (t) => {
  // A hostile host answers 404 (or a redirect) and keeps sending: that body was read for ever,
  // past the deadline and the size limit (`ivtd data update` never exited).
  const sent = new Map<string, number>();
  const closed = new Map<string, Promise<void>>();
  const base = await serve(t, (req, res) => {
    const path = req.url ?? '';
    if (path === '/ok') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('fine');
    res.writeHead(path === '/moved' ? 302 : 404, path === '/moved' ? { Location: '/ok' } : {});
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    sent.set(path, 0);
    closed.set(path, new Promise((r) => res.on('close', () => r())));
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) sent.set(path, sent.get(path)! + chunk.length);
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  });
  const t0 = Date.now();
  const missing = await httpGet({ url: `${base}/missing`, userAgent: UA, maxBytes: 1 << 20, timeoutMs: 5000 });
  t.equal(missing.status, 404, 'the status is the answer');
  const moved = await httpGet({ url: `${base}/moved`, userAgent: UA, maxBytes: 1 << 20, timeoutMs: 5000, maxRedirects: 2 });
  t.equal(moved.kind === 'ok' ? moved.body.toString() : moved.kind, 'fine', 'the redirect followed');
  t.ok(Date.now() - t0 < 2000, 'both at once');
  await Promise.all([closed.get('/missing'), closed.get('/moved')]);
  t.pass('the server saw both connections closed');
  for (const path of ['/missing', '/moved']) t.ok(sent.get(path)! < 64 << 20, `${path}: ${sent.get(path)} bytes sent before the close, not an endless stream`);
});

t.test('redirects: followed when asked, auth kept only on the same origin, connect hook', async (t) => {
  const auth: Array<string | undefined> = [];
  const other = await serve(t, (req, res) => {
    auth.push(req.headers.authorization);
    res.writeHead(200).end(`other:${req.headers.host}`);
  });
  const base = await serve(t, (req, res) => {
    auth.push(req.headers.authorization);
    if (req.url === '/a') res.writeHead(301, { Location: '/b' }).end();
    else if (req.url === '/b') res.writeHead(302, { Location: `${other}/c` }).end();
    else if (req.url === '/loop') res.writeHead(307, { Location: '/loop' }).end();
    else if (req.url === '/nolocation') res.writeHead(302).end();
    else if (req.url === '/missing') res.writeHead(404).end('nope');
    else res.writeHead(200).end(`host:${req.headers.host}`);
  });
  const r = await httpGet({ url: `${base}/a`, userAgent: UA, maxBytes: 100, maxRedirects: 3, headers: { Authorization: 'Basic x' } });
  t.equal(r.kind === 'ok' && r.body.toString(), `other:${new URL(other).host}`);
  t.same(auth, ['Basic x', 'Basic x', undefined], 'Authorization is not sent to another origin');
  const manual = await httpGet({ url: `${base}/a`, userAgent: UA, maxBytes: 100 });
  t.same(manual, { kind: 'redirect', status: 301, url: `${base}/a`, location: `${base}/b` });
  const loop = await httpGet({ url: `${base}/loop`, userAgent: UA, maxBytes: 100, maxRedirects: 5 });
  t.equal(loop.kind, 'redirect', 'a redirect loop ends as a redirect result');
  t.same(await httpGet({ url: `${base}/nolocation`, userAgent: UA, maxBytes: 100, maxRedirects: 5 }), { kind: 'status', status: 302, url: `${base}/nolocation` });
  t.same(await httpGet({ url: `${base}/missing`, userAgent: UA, maxBytes: 100 }), { kind: 'status', status: 404, url: `${base}/missing` });
  const port = Number(new URL(base).port);
  const hooked = await httpGet({ url: 'http://pub.example/ads.txt', userAgent: UA, maxBytes: 100, connect: () => ({ host: '127.0.0.1', port }) });
  t.equal(hooked.kind === 'ok' && hooked.body.toString(), 'host:pub.example', 'Host header names the original host');
});

t.test('freshness headers', async (t) => {
  const now = 1_000_000;
  t.equal(freshnessOf({ 'cache-control': 'public, max-age=60' }, now), now + 60_000);
  t.equal(freshnessOf({ 'cache-control': 'no-cache', expires: 'Thu, 01 Jan 1970 00:20:00 GMT' }, now), 1_200_000);
  t.equal(freshnessOf({ expires: 'garbage' }, now), now);
  t.equal(freshnessOf({}, now), null);
});

t.test('publicOnly: no loopback, private or link-local address, also after a redirect', async (t) => {
  const base = await serve(t, (req, res) => {
    res.writeHead(200).end('internal data');
  });
  const port = new URL(base).port;
  t.equal(await failure(httpGet({ url: `${base}/x`, userAgent: UA, maxBytes: 100, publicOnly: true })), 'blocked', 'loopback literal');
  t.equal(await failure(httpGet({ url: `http://localhost:${port}/x`, userAgent: UA, maxBytes: 100, publicOnly: true })), 'blocked', 'a name resolving to loopback');
  t.equal(await failure(httpGet({ url: 'http://[fe80::1]/x', userAgent: UA, maxBytes: 100, publicOnly: true })), 'blocked', 'link-local IPv6');
  t.equal(await failure(httpGet({ url: 'http://169.254.169.254/latest/meta-data/', userAgent: UA, maxBytes: 100, publicOnly: true })), 'blocked', 'cloud metadata address');
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address a gateway reaches: judged by it.
  for (const a of ['127.0.0.1', '10.1.2.3', '192.168.0.1', '172.16.5.5', '100.64.0.1', '::1', 'fe80::1', 'fc00::1', '0.0.0.0', '::ffff:10.0.0.1',
    '64:ff9b::a00:1', '64:ff9b::7f00:1', '64:ff9b:1::a00:1', '2002:7f00:1::', '2002:a9fe:a9fe::1']) {
    t.notOk(isPublicAddress(a), `${a} is not public`);
  }
  for (const a of ['8.8.8.8', '2001:4860:4860::8888', '81.2.69.142', '64:ff9b::808:808', '2002:808:808::1']) t.ok(isPublicAddress(a), `${a} is public`);
  const viaHook = await httpGet({ url: `http://127.0.0.1:${port}/x`, userAgent: UA, maxBytes: 100 });
  t.equal(viaHook.kind, 'ok', 'without publicOnly loopback is allowed (operator-named sources)');
});

t.test('a URL that cannot be fetched is named without its password', async (t) => {
  const base = await serve(t, (_req, res) => res.writeHead(302, { Location: 'http://u:s3cretpw@[bad/x' }).end());
  const message = async (p: Promise<unknown>) => p.then(() => 'no error', (e: Error) => e.message);
  t.equal(await message(httpGet({ url: `${base}/r`, userAgent: UA, maxBytes: 10, maxRedirects: 1 })), 'redirect to "http://[bad/x" is not a URL');
  t.equal(await message(httpGet({ url: 'http://u:s3cretpw@[bad/x', userAgent: UA, maxBytes: 10 })), '"http://[bad/x" is not a URL');
});

t.test('network failures in words: a DNS failure says so once, not "ENOTFOUND getaddrinfo ENOTFOUND host"', async (t) => {
  // `.invalid` never resolves (RFC 2606), with a network or without one.
  const dns = await httpGet({ url: 'http://no-such-host.invalid/x', userAgent: UA, maxBytes: 10, timeoutMs: 20_000 }).then(
    () => null,
    (e: HttpGetError) => e,
  );
  t.equal(dns?.reason, 'network');
  t.match(dns?.message, /^no-such-host\.invalid: DNS lookup failed \((ENOTFOUND|EAI_AGAIN)\): no network, or no such host\?$/);
  const refused = await httpGet({ url: 'http://127.0.0.1:1/x', userAgent: UA, maxBytes: 10 }).then(
    () => null,
    (e: HttpGetError) => e,
  );
  t.match(refused?.message, /^127\.0\.0\.1:1: connection refused/);
});
