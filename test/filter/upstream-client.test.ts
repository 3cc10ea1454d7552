// The filter's upstream client reads an answer whole, whatever its framing: Content-Length,
// chunked (with extensions and trailers), to the close, none (HEAD, 204, 304), after interim
// 1xx answers; a garbled one is an error, never half an answer. A pool's bound changed, and a
// pool retired, as a reload does.
import t from 'tap';
import { parseAnswer, UpstreamPool, type UpstreamAnswer } from '../../src/prebid/filter/upstream-client.ts';
import { until } from '../helpers/until.ts';
import { startUpstream } from './upstream.ts';

const b = (s: string) => Buffer.from(s, 'latin1');
const body = (r: ReturnType<typeof parseAnswer>) => (r === null || r instanceof Error ? r : r.answer.body.toString('latin1'));

t.test('framings', async (t) => {
  t.equal(body(parseAnswer(b('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello'), false, false)), 'hello');
  t.equal(parseAnswer(b('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel'), false, false), null, 'not whole yet');
  t.equal(parseAnswer(b('HTTP/1.1 200 OK\r\nContent-Len'), false, false), null, 'head not whole yet');
  const chunked = 'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n';
  t.equal(parseAnswer(b(chunked), false, false), null, 'chunked: the last chunk without its empty line');
  const whole = parseAnswer(b(chunked + '\r\n'), false, false);
  t.equal(body(whole), 'hello world');
  t.match(whole, { answer: { status: 201, reason: 'Created', rawHeaders: ['Transfer-Encoding', 'chunked', 'X-A', '1'], hadLength: false }, close: false });
  t.equal(parseAnswer(b(chunked + 'Trailer-X: y\r\n'), false, false), null, 'trailers not ended');
  t.equal(body(parseAnswer(b(chunked + 'Trailer-X: y\r\n\r\n'), false, false)), 'hello world', 'trailers read past');
  t.equal(parseAnswer(b('HTTP/1.1 200 OK\r\n\r\nto the close'), false, false), null, 'no length: not until the close');
  t.match(parseAnswer(b('HTTP/1.1 200 OK\r\n\r\nto the close'), false, true), { answer: { body: b('to the close') }, close: true });
  t.equal(body(parseAnswer(b('HTTP/1.1 204 No Content\r\n\r\n'), false, false)), '', '204: no body');
  t.equal(body(parseAnswer(b('HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n'), true, false)), '', 'HEAD: no body whatever the length');
  t.equal(body(parseAnswer(b('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'), false, false)), 'ok', 'an interim answer skipped');
  t.match(parseAnswer(b('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'), false, false), { close: true });
});

t.test('garbled answers are errors', async (t) => {
  t.type(parseAnswer(b('SMTP ready\r\n\r\n'), false, false), Error);
  t.type(parseAnswer(b('HTTP/1.1 200 OK\r\nno colon\r\n\r\n'), false, false), Error);
  t.type(parseAnswer(b('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok'), false, false), Error, 'two lengths that differ');
  t.type(parseAnswer(b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'), false, false), Error, 'a chunk size that is no number');
  t.type(parseAnswer(b('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel'), false, true), Error, 'cut short by the close');
});

// A reload's changes to a pool (src/prebid/filter/proxy.ts update): a new bound, and a pool
// retired for another upstream.
const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
function ask(pool: UpstreamPool, path: string): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => pool.request(request(path), Buffer.alloc(0), false, (err, a) => (err || !a ? reject(err ?? new Error('no answer')) : resolve(a))));
}

t.test('a raised bound lets queued requests go at once; a lowered one closes connections as their answers end', async (t) => {
  const up = await startUpstream();
  t.teardown(() => up.close());
  const pool = new UpstreamPool('127.0.0.1', up.port, 1, 1 << 20);
  t.teardown(() => pool.destroy());
  const waits = () => up.received.filter((r) => r.url.includes('wait')).length;
  const a = ask(pool, '/?behave=wait400');
  const b = ask(pool, '/?behave=wait400');
  await until('the first at the upstream', async () => waits() === 1, 2000);
  t.equal(waits(), 1, 'one connection: the second waits');
  pool.setMaxSockets(2);
  await until('the second goes without waiting for the first', async () => waits() === 2, 300);
  await Promise.all([a, b]);
  t.equal(await up.connections(), 2, 'two kept alive');
  pool.setMaxSockets(1);
  await ask(pool, '/');
  await ask(pool, '/');
  await until('one connection left', async () => (await up.connections()) === 1, 2000);
});

t.test('a retired pool: idle connections close at once, busy ones once their answers end', async (t) => {
  const up = await startUpstream();
  t.teardown(() => up.close());
  const pool = new UpstreamPool('127.0.0.1', up.port, 4, 1 << 20);
  await Promise.all([ask(pool, '/'), ask(pool, '/')]);
  t.equal(await up.connections(), 2);
  const busy = ask(pool, '/?behave=wait300');
  await until('at the upstream', async () => up.received.some((r) => r.url.includes('wait300')), 2000);
  pool.retire();
  await until('the idle one closed', async () => (await up.connections()) === 1, 2000);
  t.equal((await busy).status, 200, 'the busy one answered');
  await until('then closed', async () => (await up.connections()) === 0, 2000);
});
