// A client that pipelines lookups and never reads its answers (issue 59): the pre-bid port
// holds an answer once the connection has unsent ones, and closes the connection when the
// client sends again meanwhile, instead of buffering every answer in memory. A client that
// reads, however deep it pipelines, gets every answer.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { startTestServer } from '../helpers/server.ts';
import { getPipelined } from '../helpers/pipelined.ts';

const UA = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');

t.test('a pipelining client that never reads is cut off; readers are not', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = Number(new URL(srv.prebid).port);
  const path = (i: number) => `/api/v1/ivt/lookup?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.10.${i % 250}&ua=${UA}&uid=u${i}&sid=s.example&adt=1&dvt=2`;
  const request = (i: number) => `GET ${path(i)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

  // The never-reading client: writes batches of lookups as fast as its socket takes them.
  let written = 0;
  const sock: Socket = connect(port, '127.0.0.1');
  sock.pause();
  sock.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => sock.on('close', () => resolve(written)));
  sock.on('connect', function pump() {
    while (!sock.destroyed && written < 2_000_000) {
      const batch = Array.from({ length: 100 }, () => request(written++)).join('');
      if (!sock.write(batch)) return void sock.once('drain', pump);
    }
  });
  const outcome = await Promise.race([closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 30_000).unref())]);
  t.not(outcome, 'open', 'the server closed the connection of the client that never reads');
  t.ok(typeof outcome === 'number' && outcome < 2_000_000, `cut off after ${outcome} requests written, before the client ran out`);
  sock.destroy();

  // Meanwhile and after, others are served; a deep pipeliner that reads gets all its answers.
  const deep = Array.from({ length: 3000 }, (_, i) => path(i));
  const answers = await getPipelined(port, deep, { connections: 2, depth: 1500 });
  t.equal(answers.filter((a) => a.status === 200).length, deep.length, 'a client pipelining 1 500 deep and reading gets every answer');

  // Counted: the threads report each interval.
  let held = 0;
  for (let i = 0; i < 50 && held === 0; i++) {
    const text = await (await fetch(srv.metrics + '/metrics')).text();
    held = Number(/^ivtd_answers_held_unsent_total (\d+)/m.exec(text)?.[1] ?? 0);
    if (held === 0) await new Promise((r) => setTimeout(r, 200));
  }
  t.ok(held >= 1, `ivtd_answers_held_unsent_total counted the held answer (${held})`);
});

t.test('a client that writes a long pipeline and reads late: complete answers in order, then the close', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = Number(new URL(srv.prebid).port);
  const path = (i: number) => `/api/v1/ivt/lookup?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.11.${i % 250}&ua=${UA}&uid=v${i}&sid=s.example&adt=1&dvt=2`;
  // More pipelined lookups in one write than the sockets' buffers hold answers for, read
  // only 3 s later: the answers that fitted arrive whole and in order, then the connection
  // closes (RFC 9112 9.3.2: a client retries what a closed connection left unanswered).
  const n = 20_000;
  const sock = connect(port, '127.0.0.1');
  sock.pause();
  sock.on('error', () => undefined);
  await new Promise<void>((r) => sock.on('connect', () => r()));
  sock.write(Array.from({ length: n }, (_, i) => `GET ${path(i)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`).join(''));
  await new Promise((r) => setTimeout(r, 3000));
  let text = '';
  const closed = new Promise<void>((r) => sock.on('close', () => r()));
  sock.setEncoding('latin1');
  sock.on('data', (d: string) => (text += d));
  sock.resume();
  await Promise.race([closed, new Promise((r) => setTimeout(r, 30_000).unref())]);
  const answers = text.split('HTTP/1.1 ').slice(1);
  const uids = answers.map((a) => {
    const len = Number(/\r\ncontent-length: *(\d+)/i.exec(a)?.[1] ?? -1);
    const body = a.slice(a.indexOf('\r\n\r\n') + 4);
    return a.startsWith('200 OK') && body.length === len && JSON.parse(body) !== null;
  });
  t.ok(answers.length >= 100 && answers.length < n, `${answers.length} of ${n} answered before the close`);
  // The last may be the held one, whose head went into the socket's queue before the socket
  // was found full: the close cuts it, as any server's close under backpressure would.
  t.ok(uids.slice(0, -1).every(Boolean), 'every answer that arrived before the last is a whole 200 with its whole body', { found: uids.indexOf(false) });
  t.match(answers.at(-1), /^200 OK\r\n/, 'the last one is a 200, whole or cut at the close');
  t.ok(sock.destroyed || sock.readableEnded, 'then the server closed the connection');
  sock.destroy();
});

t.test('clients that pipeline, never read, then reset their connections do not end the process', async (t) => {
  // uWS ends the process when a request handler returns with its answer unfinished and no
  // abort handler attached; this pattern made that happen in about half of the runs.
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = Number(new URL(srv.prebid).port);
  const path = (i: number) => `/api/v1/ivt/lookup?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.12.${i % 250}&ua=${UA}&uid=w${i}&sid=s.example&adt=1&dvt=2`;
  for (let round = 0; round < 6; round++) {
    const socks = Array.from({ length: 4 }, () => {
      const sock = connect(port, '127.0.0.1');
      sock.pause();
      sock.on('error', () => undefined);
      let i = 0;
      sock.on('connect', function pump() {
        while (!sock.destroyed) {
          if (!sock.write(Array.from({ length: 50 }, () => `GET ${path(i++)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`).join(''))) return void sock.once('drain', pump);
        }
      });
      return sock;
    });
    await new Promise((r) => setTimeout(r, 700));
    for (const s of socks) s.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 300));
    const health = await fetch(srv.prebid + '/health-check').then((r) => r.status, () => 0);
    t.equal(health, 200, `round ${round}: still serving after the resets`);
  }
});
