// Spec 4.4 rule 1: the request line plus headers may be 8 KB; one byte more is 413. Sizes
// are counted as sent on the wire, with raw sockets so nothing is added by a client.
import t from 'tap';
import { connect } from 'node:net';
import { MAX_REQUEST_BYTES } from '../../src/prebid/worker.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { startTestServer } from '../helpers/server.ts';

function raw(port: number, request: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(request));
    let buf = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => {
      buf += d;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(buf);
      if (m) {
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.on('error', reject);
  });
}

t.test('8192 bytes are served, 8193 are refused with 413', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.prebid;
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const path = `/api/v1/ivt/lookup?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&pub=p&node=n&ip=73.162.10.20&ua=${ua}&uid=u&sid=s.example&adt=1&dvt=2`;
  const sized = (total: number, withQuery = true) => {
    const target = withQuery ? path : '/health-check';
    const head = `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: `;
    const tail = '\r\n\r\n';
    const req = head + 'p'.repeat(total - head.length - tail.length) + tail;
    t.equal(Buffer.byteLength(req), total);
    return req;
  };
  t.equal(await raw(port, sized(MAX_REQUEST_BYTES)), 200, 'exactly 8192 bytes: answered');
  t.equal(await raw(port, sized(MAX_REQUEST_BYTES + 1)), 413, '8193 bytes: too large');
  t.equal(await raw(port, sized(MAX_REQUEST_BYTES, false)), 200, 'without a query string too');
  t.equal(await raw(port, sized(MAX_REQUEST_BYTES + 1, false)), 413);
});

// Each route counts its own request line (the OpenRTB POST and the beacon's GET know their
// method without asking uWS): the boundary holds on every one, and on a route's other methods.
t.test('the boundary is the same on the OpenRTB POST, the beacon and a refused method', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.prebid;
  const sized = (method: string, target: string, total: number, extra = '') => {
    const head = `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}X-Pad: `;
    const tail = '\r\n\r\n';
    const req = head + 'p'.repeat(total - head.length - tail.length) + tail;
    t.equal(Buffer.byteLength(req), total);
    return req;
  };
  const ortb = `/api/v1/ivt/ortb?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&node=n`;
  const noBody = 'Content-Type: application/json\r\nContent-Length: 0\r\n';
  const atLimit = await raw(port, sized('POST', ortb, MAX_REQUEST_BYTES, noBody));
  t.not(atLimit, 413, `POST of exactly 8192 bytes: judged on its body (${atLimit})`);
  t.equal(await raw(port, sized('POST', ortb, MAX_REQUEST_BYTES + 1, noBody)), 413, 'POST of 8193 bytes: too large');
  for (const [method, target] of [['GET', '/api/v1/ivt/imp?lid=x'], ['PUT', '/api/v1/ivt/lookup?x=1'], ['DELETE', '/api/v1/ivt/ortb']] as const) {
    t.not(await raw(port, sized(method, target, MAX_REQUEST_BYTES)), 413, `${method} ${target.split('?')[0]} of 8192 bytes: not 413`);
    t.equal(await raw(port, sized(method, target, MAX_REQUEST_BYTES + 1)), 413, `${method} ${target.split('?')[0]} of 8193 bytes: 413`);
  }
});

// uWebSockets.js's parser holds at most 48 header lines: past them it never finds the request's
// end, waits for more and lets its idle timeout (~10 s) close the connection, before any
// handler runs (docs/lookup.md says so). This pins the documented figure to the library.
t.test('48 header lines are answered; 49 are left unanswered', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.prebid;
  const withLines = (n: number) => {
    let h = 'Host: 127.0.0.1\r\n';
    for (let i = 1; i < n; i++) h += `X-H${i}: v\r\n`;
    return `GET /health-check HTTP/1.1\r\n${h}\r\n`;
  };
  t.equal(await raw(port, withLines(48)), 200, '48 lines: answered');
  const heard = (await rawExchange(port, withLines(49), { waitMs: 2000 })).text;
  t.equal(heard, '', '49 lines: nothing answered within 2 s');
});

t.test('a HEAD too large gets its 413 without a body, and the connection stays in step', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const port = srv.server.ports.prebid;
  // An answer to HEAD carries no body (RFC 9110 9.3.2): a body sent anyway is read by the
  // client as the start of the next answer. Every path's size check answers HEAD so.
  for (const target of ['/health-check', '/api/v1/ivt/lookup?x=1', '/api/v1/ivt/ortb', '/nowhere']) {
    const big = `HEAD ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${'p'.repeat(MAX_REQUEST_BYTES)}\r\n\r\n`;
    const next = 'GET /health-check HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const { text } = await rawExchange(port, big + next, { waitMs: 3000, until: /HTTP\/1\.1 200 OK\r\n[\s\S]*?\r\n\r\n$/ });
    const first = text.indexOf('\r\n\r\n') + 4;
    t.match(text, /^HTTP\/1\.1 413 /, `HEAD ${target}: 413`);
    t.match(text.slice(first), /^HTTP\/1\.1 200 OK\r\n/, `HEAD ${target}: no body after its head; the next answer follows at once`);
  }
});
