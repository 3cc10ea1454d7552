// The filter's client-side HTTP/1.1 server (src/prebid/filter/client-http.ts), on raw sockets:
// pipelined requests answered in order whatever order their answers are ready in, bodies by
// length or chunked and split anywhere, the refusals (400, 413, 431) in their place and the
// connection closed after them, Connection: close and HTTP/1.0, 100-continue, HEAD and 204
// answers without a body, a client that leaves, the bytes held counted (and given back), and a
// listener that retires its connections.
import t from 'tap';
import { connect, type AddressInfo } from 'node:net';
import { createClientServer, type ClientRequest, type ClientResponse } from '../../src/prebid/filter/client-http.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { HeldBytes } from '../../src/prebid/filter/held-bytes.ts';

interface Seen {
  req: ClientRequest;
  body: string;
}

const seen: Seen[] = [];
let tooLarge = 0;
let left = 0;
const srv = createClientServer({
  maxBodyBytes: 100, maxHeadBytes: 300, idleMs: 5000, requestMs: 300, maxInFlight: 2, tooLargeBody: '{"error":"payload_too_large"}',
  onTooLarge: () => void tooLarge++,
  onRequest(req: ClientRequest, body: Buffer, res: ClientResponse) {
    seen.push({ req, body: body.toString() });
    const q = new URL(req.url, 'http://x').searchParams;
    if (q.has('hang')) return res.onClose(() => void left++);
    const answer = () => res.end(Number(q.get('status') ?? 200), 'OK', ['X-Url', req.url], req.method + ' ' + req.url + ' ' + body.toString() + '|');
    const delay = Number(q.get('delay') ?? 0);
    if (delay > 0) setTimeout(answer, delay);
    else answer();
  },
});
let port = 0;
t.before(() => new Promise<void>((ok) => srv.server.listen(0, '127.0.0.1', () => ((port = (srv.server.address() as AddressInfo).port), ok()))));
t.teardown(() => srv.close(true));

const post = (path: string, body: string, extra = '') => `POST ${path} HTTP/1.1\r\nHost: x\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);

t.test('pipelined requests: answered in order, the slow first one too', async (t) => {
  seen.length = 0;
  // Four at once with maxInFlight 2: the connection is read further as answers go.
  const ex = await rawExchange(port, post('/a?delay=60', 'one') + post('/b', 'two') + post('/c?delay=20', 'three') + 'GET /d HTTP/1.1\r\nHost: x\r\n\r\n', { until: /GET \/d \|/, waitMs: 3000 });
  const bodies = [...ex.text.matchAll(/\r\n\r\n([^|]*)\|/g)].map((m) => m[1]);
  t.same(bodies, ['POST /a?delay=60 one', 'POST /b two', 'POST /c?delay=20 three', 'GET /d '], 'four answers in request order');
  t.equal(ex.closed, false, 'kept alive');
  t.same(seen.map((s) => s.req.method + ' ' + s.req.url), ['POST /a?delay=60', 'POST /b', 'POST /c?delay=20', 'GET /d']);
  t.match(ex.text, /Content-Length: 21\r\n/, 'a length added to an answer without one');
});

t.test('bodies: by length or chunked, split at every byte', async (t) => {
  seen.length = 0;
  const chunked = 'POST /ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\nX-Trailer: 1\r\n\r\n';
  const all = chunked + post('/len', 'hello');
  const answers = await new Promise<string>((resolve) => {
    const sock = connect(port, '127.0.0.1', async () => {
      for (let i = 0; i < all.length; i++) {
        sock.write(all[i]!);
        await new Promise((r) => setImmediate(r));
      }
    });
    let text = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      text += d;
      if (text.includes('/len hello')) {
        sock.destroy();
        resolve(text);
      }
    });
  });
  t.same(seen.map((s) => s.body), ['abcdefg', 'hello'], 'bodies whole, trailers read past');
  t.same(seen[0]!.req.headers['transfer-encoding'], 'chunked');
  t.same(statuses(answers), ['200', '200']);
});

t.test('refusals: in their place, then the connection closes', async (t) => {
  tooLarge = 0;
  const big = await rawExchange(port, post('/ok', 'x') + post('/big', 'y'.repeat(101)) + post('/never', 'z'));
  t.same(statuses(big.text), ['200', '413'], 'the one before answered, then 413');
  t.match(big.text, /payload_too_large/);
  t.equal(tooLarge, 1, 'counted');
  t.equal(big.closed, true, 'closed: the request after it never read');
  t.notMatch(big.text, /never/);
  const bigChunked = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n' + 'y'.repeat(101) + '\r\n0\r\n\r\n');
  t.same(statuses(bigChunked.text), ['413'], 'a chunked body over the limit');
  const both = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
  t.same(statuses(both.text), ['400'], 'Content-Length and Transfer-Encoding both: refused');
  t.equal(both.closed, true);
  const twoLengths = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd');
  t.same(statuses(twoLengths.text), ['400'], 'two lengths that differ');
  const garbage = await rawExchange(port, 'HELLO THERE\r\n\r\n');
  t.same(statuses(garbage.text), ['400'], 'not a request line');
  const folded = await rawExchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n continued\r\n\r\n');
  t.same(statuses(folded.text), ['400'], 'a folded header line');
  for (const bare of ['\n', '\r']) {
    const split = await rawExchange(port, `GET / HTTP/1.1\r\nHost: x\r\nX-A: 1${bare}Smuggled: yes\r\n\r\n`);
    t.same(statuses(split.text), ['400'], `a bare ${JSON.stringify(bare)} in a header value (it would split the request sent on)`);
  }
  const badChunk = await rawExchange(port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n');
  t.same(statuses(badChunk.text), ['400'], 'a chunk size that is no number');
  const longHead = await rawExchange(port, `GET / HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(400)}\r\n\r\n`);
  t.same(statuses(longHead.text), ['431'], 'a head over the limit');
  const endless = await rawExchange(port, `GET / HTTP/1.1\r\nX-Long: ${'a'.repeat(400)}`);
  t.same(statuses(endless.text), ['431'], 'a head over the limit before its end');
});

t.test('Connection: close and HTTP/1.0 end the connection after their answer', async (t) => {
  const close = await rawExchange(port, 'GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /after HTTP/1.1\r\n\r\n');
  t.same(statuses(close.text), ['200']);
  t.match(close.text, /Connection: close\r\n/);
  t.equal(close.closed, true);
  const old = await rawExchange(port, 'GET /old HTTP/1.0\r\n\r\n');
  t.same(statuses(old.text), ['200']);
  t.equal(old.closed, true, 'HTTP/1.0 without keep-alive: closed');
});

t.test('100-continue, HEAD and 204', async (t) => {
  const cont = await new Promise<string>((resolve) => {
    const sock = connect(port, '127.0.0.1', () => sock.write('POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n'));
    let text = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      text += d;
      if (text === 'HTTP/1.1 100 Continue\r\n\r\n') sock.write('hi');
      if (text.includes('POST /e hi')) {
        sock.destroy();
        resolve(text);
      }
    });
  });
  t.same(statuses(cont), ['100', '200'], 'told to go on, then answered');
  const head = await rawExchange(port, 'HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /g HTTP/1.1\r\nHost: x\r\n\r\n', { until: /GET \/g \|/ });
  t.same(statuses(head.text), ['200', '200']);
  t.match(head.text, /X-Url: \/h\r\n\r\nHTTP\/1\.1 200/, 'HEAD: no body, no length');
  const nobody = await rawExchange(port, 'GET /n?status=204 HTTP/1.1\r\nHost: x\r\n\r\n', { until: /\r\n\r\n/ });
  t.notMatch(nobody.text, /Content-Length/, '204: no length');
});

t.test('a slow client: a request not whole in requestMs closes its connection', async (t) => {
  const started = Date.now();
  const closed = await new Promise<number>((resolve) => {
    const sock = connect(port, '127.0.0.1', () => sock.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab'));
    // A byte every 100 ms: activity, but the request is never whole in time.
    const drip = setInterval(() => sock.writable && sock.write('c'), 100);
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearInterval(drip);
      resolve(Date.now() - started);
    });
  });
  t.ok(closed >= 250 && closed < 2000, `closed after ${closed} ms`);
});

t.test('a client that leaves: the answer under way is told', async (t) => {
  left = 0;
  await rawExchange(port, post('/x?hang=1', 'q'), { waitMs: 100 });
  await new Promise((r) => setTimeout(r, 50));
  t.equal(left, 1, 'onClose ran');
});

t.test('idle connections: closed after idleMs of silence, never while an answer is under way', async (t) => {
  const held: ClientResponse[] = [];
  const idle = createClientServer({
    maxBodyBytes: 100, maxHeadBytes: 300, idleMs: 200, requestMs: 5000, maxInFlight: 2, tooLargeBody: '{}',
    onTooLarge: () => undefined,
    onRequest(req: ClientRequest, _body: Buffer, res: ClientResponse) {
      if (req.url === '/hold') held.push(res);
      else res.end(200, 'OK', [], 'ok');
    },
  });
  await new Promise<void>((ok) => idle.server.listen(0, '127.0.0.1', () => ok()));
  t.teardown(() => idle.close(true));
  const idlePort = (idle.server.address() as AddressInfo).port;
  /** Sends `req`, then resolves with when the connection closed (ms after the send) and what came back. */
  const closeAfter = (req: string, limitMs: number) => new Promise<{ ms: number; text: string }>((resolve) => {
    let text = '';
    const started = Date.now();
    const sock = connect(idlePort, '127.0.0.1', () => sock.write(req));
    sock.on('data', (d) => (text += d.toString()));
    sock.on('error', () => undefined);
    const limit = setTimeout(() => sock.destroy(), limitMs);
    sock.on('close', () => {
      clearTimeout(limit);
      resolve({ ms: Date.now() - started, text });
    });
  });
  const answered = await closeAfter('GET /a HTTP/1.1\r\nHost: x\r\n\r\n', 3000);
  t.match(answered.text, /200 OK/);
  t.ok(answered.ms >= 190 && answered.ms < 1500, `an answered kept-alive connection closed after ${answered.ms} ms of silence`);
  // An answer held for 600 ms (three idle periods): the connection stays until it has gone.
  setTimeout(() => held[0]?.end(200, 'OK', [], 'late'), 600);
  const holding = await closeAfter('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n', 3000);
  t.match(holding.text, /late$/, 'the held answer arrived');
  t.ok(holding.ms >= 600 + 190, `closed ${holding.ms} ms after the request, idleMs after its answer`);
});

t.test('held bytes: counted while read, under way and unsent; a client that does not read is read no further; all given back', async (t) => {
  const ledger = new HeldBytes(1 << 20);
  const big = Buffer.alloc(256 << 10, 0x62);
  let requests = 0;
  const hold: ClientResponse[] = [];
  const s2 = createClientServer({
    maxBodyBytes: 4096, maxHeadBytes: 1024, idleMs: 60_000, requestMs: 5000, maxInFlight: 64, tooLargeBody: '{}', held: ledger,
    onTooLarge: () => undefined,
    onRequest(req: ClientRequest, _body: Buffer, res: ClientResponse) {
      requests++;
      if (req.url === '/hold') hold.push(res);
      else res.end(200, 'OK', [], big);
    },
  });
  await new Promise<void>((ok) => s2.server.listen(0, '127.0.0.1', () => ok()));
  t.teardown(() => s2.close(true));
  const p2 = (s2.server.address() as AddressInfo).port;
  const open = () => new Promise<ReturnType<typeof connect>>((ok) => {
    const sock = connect(p2, '127.0.0.1', () => ok(sock));
    sock.on('error', () => undefined);
  });
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

  // A request under way: its bytes are held until its answer is built, then the answer's until written.
  const a = await open();
  const req = 'POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n' + 'x'.repeat(100);
  a.write(req);
  await wait(100);
  t.equal(ledger.held, req.length, 'the request under way: its bytes');
  a.write('POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nxx');
  await wait(100);
  t.equal(ledger.held, req.length + 'POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nxx'.length, 'and the half-read one');
  a.destroy();
  await wait(100);
  t.equal(ledger.held, 0, 'the client left: nothing held');

  // A client that pipelines 200 requests for 256 KB answers and never reads them.
  requests = 0;
  const b = await open();
  b.pause();
  let pipelined = '';
  for (let i = 0; i < 200; i++) pipelined += 'GET /big HTTP/1.1\r\nHost: x\r\n\r\n';
  b.write(pipelined);
  await wait(500);
  t.ok(requests < 200, `read no further once its answers were not read (${requests} of 200 taken)`);
  t.ok(ledger.held <= 64 * (big.byteLength + 100), `held ${(ledger.held / 1048576).toFixed(1)} MB`);
  // It reads: every answer comes, and nothing stays held.
  let got = 0;
  b.on('data', (d: Buffer) => (got += d.byteLength));
  b.resume();
  for (let i = 0; i < 200 && got < 200 * big.byteLength; i++) await wait(50);
  t.equal(requests, 200, 'every request taken once the client read');
  t.ok(got >= 200 * big.byteLength, 'and every answer arrived');
  t.equal(ledger.held, 0, 'nothing held once all is written');
  b.destroy();

  // At the cap: a connection stops reading until there is room.
  const c = await open();
  ledger.add(1 << 20); // (something else holds the whole cap)
  c.write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
  await wait(100);
  const before = requests;
  c.write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
  await wait(100);
  t.equal(requests, before, 'at the cap: not read');
  ledger.release(1 << 20);
  await wait(100);
  t.equal(requests, before + 1, 'room again: read');
  for (const r of hold.splice(0)) r.end(204, 'No Content', []);
  c.destroy();
  await wait(100);
  t.equal(ledger.held, 0, 'all given back');
});

t.test('retire: the listener lets go; each connection is closed after its next answer, a silent one after the grace', async (t) => {
  const own = createClientServer({
    maxBodyBytes: 100, maxHeadBytes: 300, idleMs: 30_000, requestMs: 3000, maxInFlight: 4, tooLargeBody: '{}',
    onTooLarge: () => undefined,
    onRequest(req: ClientRequest, _body: Buffer, res: ClientResponse) {
      const delay = Number(new URL(req.url, 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => res.end(200, 'OK', [], 'ok ' + req.url), delay);
    },
  });
  await new Promise<void>((ok) => own.server.listen(0, '127.0.0.1', () => ok()));
  t.teardown(() => own.close(true));
  const p = (own.server.address() as AddressInfo).port;
  /** A kept-alive connection: what came back, and whether it closed. */
  const client = async (first: string) => {
    const c = { text: '', closed: false, sock: connect(p, '127.0.0.1') };
    c.sock.on('data', (d) => (c.text += d.toString()));
    c.sock.on('error', () => undefined);
    c.sock.on('close', () => (c.closed = true));
    await new Promise<void>((ok) => c.sock.once('connect', () => ok()));
    c.sock.write(first);
    return c;
  };
  const wait = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 300 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
    t.ok(ok(), what);
  };
  const busy = await client('GET /busy?delay=150 HTTP/1.1\r\nHost: x\r\n\r\n');
  const again = await client('GET /one HTTP/1.1\r\nHost: x\r\n\r\n');
  const silent = await client('GET /one HTTP/1.1\r\nHost: x\r\n\r\n');
  await wait('the idle ones answered', () => again.text.includes('ok /one') && silent.text.includes('ok /one'));
  t.equal(own.connections, 3);
  let done = false;
  const t0 = Date.now();
  own.retire(400, () => (done = true));
  const refused = await new Promise<string>((r) => connect(p, '127.0.0.1').once('connect', () => r('connected')).once('error', (e: NodeJS.ErrnoException) => r(e.code ?? '')));
  t.equal(refused, 'ECONNREFUSED', 'it stopped listening at once');
  again.sock.write('GET /two HTTP/1.1\r\nHost: x\r\n\r\n');
  await wait('a kept-alive connection: its next request answered, then closed', () => again.closed);
  t.match(again.text, /ok \/one[\s\S]*HTTP\/1\.1 200 OK\r\n[^]*Connection: close\r\n\r\nok \/two$/, '…with Connection: close');
  await wait('the request under way: answered, then closed', () => busy.closed);
  t.match(busy.text, /Connection: close\r\n\r\nok \/busy\?delay=150$/, '…with Connection: close');
  t.notOk(silent.closed, 'a silent one kept for the grace');
  await wait('then closed', () => silent.closed && done);
  t.ok(Date.now() - t0 >= 390, `after the grace (${Date.now() - t0} ms)`);
  t.equal((silent.text.match(/HTTP\/1\.1/g) ?? []).length, 1, 'with no second answer');
  t.equal(own.connections, 0, 'every connection closed, then onDone');
});
