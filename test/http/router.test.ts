// The main-thread listeners' HTTP layer (src/http/router.ts) on a real socket: a JSON body
// must be UTF-8 JSON as sent (no content coding, no byte that is not UTF-8, no lone
// surrogate: each is a 422 saying which), and a request node:http cannot read gets the JSON
// error body every other refusal has, then the connection closes.
import t from 'tap';
import { gzipSync } from 'node:zlib';
import { illFormedAt, listen, readJsonObject, Router, sendJson } from '../../src/http/router.ts';
import { rawExchange } from '../helpers/raw-http.ts';

const router = new Router().post('/echo', async (ctx) => sendJson(ctx.res, 200, await readJsonObject(ctx.req)));
const l = await listen(router, '127.0.0.1', 0, 'test');
t.teardown(() => l.close());
const base = `http://127.0.0.1:${l.port}`;

async function post(body: string | Uint8Array, headers: Record<string, string> = {}) {
  const r = await fetch(`${base}/echo`, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

t.test('a JSON body: UTF-8 JSON as sent', async (t) => {
  t.same(await post('{"name":"é 😀 \\u00e9 \\ud83d\\ude00"}'), { status: 200, body: { name: 'é 😀 é 😀' } }, 'characters past ASCII, raw and escaped (a pair)');

  const bytes = new Uint8Array([...Buffer.from('{"name":"a'), 0xff, 0xfe, ...Buffer.from('b"}')]);
  const notUtf8 = await post(bytes);
  t.equal(notUtf8.status, 422, 'bytes that are not UTF-8');
  t.match(notUtf8.body, { error: 'unprocessable', message: /not valid UTF-8/ });

  for (const [text, where, field] of [
    ['{"name":"x\\ud800y"}', /^name holds a lone surrogate/, 'name'],
    ['{"labels":[{"lid":"a","source":"ok"},{"source":"\\udfff"}]}', /^labels\[1\]\.source holds a lone surrogate/, 'labels[1].source'],
    ['{"a":{"k\\ud83d":1}}', /^a key in a holds a lone surrogate/, 'a'],
    ['{"\\ud83d":1}', /^a key in the body holds a lone surrogate/, 'body'],
  ] as const) {
    const r = await post(text);
    t.equal(r.status, 422, `a lone surrogate: ${text}`);
    t.match(r.body, { error: 'unprocessable', message: where, field }, 'the message and the field say where');
  }

  const gz = await post(gzipSync('{"a":1}'), { 'content-encoding': 'gzip' });
  t.equal(gz.status, 422, 'a gzip body');
  t.match(gz.body, { message: /Content-Encoding gzip is not taken here/ });
  t.equal((await post('{"a":1}', { 'content-encoding': 'gzip' })).status, 422, 'plain JSON said to be gzip: not read as if it were plain');
  t.same(await post('{"a":1}', { 'content-encoding': 'identity' }), { status: 200, body: { a: 1 } }, 'identity is no coding');
});

t.test('a JSON body with a key twice, or nested past the limit: refused, saying where', async (t) => {
  const twice = await post('{"name":"a","demand_id":"d","name":"b"}');
  t.equal(twice.status, 422, 'a key twice (JSON.parse kept the last silently)');
  t.match(twice.body, { error: 'unprocessable', message: 'The request body is refused: duplicate key "name" at character 28.' });
  const nested = await post('{"labels":[{"source":"x","extra":{"a":{"b":[1,{"name":"a","name":"b"}]}}}]}');
  t.equal(nested.status, 422, 'a key twice deep inside');
  t.match(nested.body, { message: /duplicate key "name" at character \d+/ });
  t.same(await post('{"name":"a:b","note":"\\u003a","x":{"name":"a"}}'), { status: 200, body: { name: 'a:b', note: ':', x: { name: 'a' } } }, 'colons in strings, one name at two levels: no duplicate');

  // Before, a lone surrogate at the bottom of 5 000 arrays overflowed the stack of the walk
  // that looks for it: a 500, and the stack trace in the log.
  for (const inner of ['"\\ud800"', '"\\u0041"', '1']) {
    const deep = await post(`{"name":${'['.repeat(5000)}${inner}${']'.repeat(5000)}}`);
    t.equal(deep.status, 422, `5 000 arrays deep around ${inner}`);
    t.match(deep.body, { error: 'unprocessable', message: /^The request body is refused: objects and arrays nested deeper than 64 at character \d+\.$/ });
  }
  t.equal((await post(`{"a":${'['.repeat(63)}1${']'.repeat(63)}}`)).status, 200, '64 levels: taken');
});

t.test('illFormedAt names the first string or key that is not well-formed', async (t) => {
  t.equal(illFormedAt({ a: 'ok', b: ['x', { c: 'y' }] }, ''), null);
  t.equal(illFormedAt('\ud800', ''), 'the body');
  t.equal(illFormedAt({ b: ['x', { c: 'y\udc00' }] }, ''), 'b[1].c');
  t.equal(illFormedAt({ '\ud800': 1 }, ''), 'a key in the body');
});

t.test('a request node:http cannot read: a JSON error body, then the connection closes', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['an unknown method', 'FOO /echo HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 Bad Request\r\n/],
    ['a space in the target', 'GET /echo?a=b c HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 400 Bad Request\r\n/],
    ['a Content-Length that is no number', 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}', /^HTTP\/1\.1 400 Bad Request\r\n/],
    ['a broken chunk', 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', /^HTTP\/1\.1 400 Bad Request\r\n/],
    ['headers past the limit', `GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/],
  ];
  for (const [what, request, status] of cases) {
    const r = await rawExchange(l.port, request);
    t.match(r.text, status, `${what}: the status`);
    t.match(r.text, /\r\nContent-Type: application\/json; charset=utf-8\r\n/, `${what}: JSON`);
    t.match(r.text, /\r\nConnection: close\r\n/, `${what}: closes`);
    t.ok(r.closed, `${what}: closed`);
    const body = JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)) as { error: string; message: string };
    t.match(body, { error: /^(invalid_request|header_too_large)$/, message: /./ }, `${what}: ${body.message}`);
  }
  t.same(await post('{"still":"answering"}'), { status: 200, body: { still: 'answering' } }, 'the listener answers the next connection');
});

t.test('an unreadable request after pipelined ones: their answers first, in order, then the error', async (t) => {
  // A handler that answers later (as every route that reads the store does).
  const slow = new Router()
    .get('/slow', async (ctx) => {
      await new Promise((r) => setTimeout(r, 150));
      sendJson(ctx.res, 200, { answered: 'slow' });
    })
    .post('/echo', async (ctx) => sendJson(ctx.res, 200, await readJsonObject(ctx.req)));
  const s = await listen(slow, '127.0.0.1', 0, 'test');
  t.teardown(() => s.close());
  const garbage = 'FOO /slow HTTP/1.1\r\nHost: x\r\n\r\n';
  const answers = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));

  const one = await rawExchange(s.port, `GET /slow HTTP/1.1\r\nHost: x\r\n\r\n${garbage}`);
  // Before, the 400 was written at once and the connection closed: the GET's client read the
  // 400 as its own answer, and the GET's answer was lost.
  t.same(answers(one.text), [200, 400], 'the GET is answered, then the error');
  t.match(one.text, /^HTTP\/1\.1 200 OK\r\n[^]*\{"answered":"slow"\}HTTP\/1\.1 400 Bad Request\r\n[^]*Connection: close\r\n\r\n\{"error":"invalid_request","message":"[^"]+"\}$/, 'each whole, in order');
  t.ok(one.closed, 'then the connection closes');

  const post = '{"a":1}';
  const three = await rawExchange(s.port, `GET /slow HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${post.length}\r\n\r\n${post}${garbage}`);
  t.same(answers(three.text), [200, 200, 400], 'two pipelined requests, then an unreadable one: three answers in order');
  t.match(three.text, /\{"answered":"slow"\}[^]*\{"a":1\}[^]*"error":"invalid_request"/, 'the POST\'s own answer second');
  t.ok(three.closed, 'closed after the error');

  // The request that breaks is the one being answered (a broken chunk in its own body): the
  // error is its answer, as before, and nothing waits.
  const own = await rawExchange(s.port, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n');
  t.same(answers(own.text), [400], 'a broken chunk in the body being read: one answer, the error');
  t.ok(own.closed, 'closed');
});
