// A body well over the OpenRTB limit (64 KiB) was answered 413 and the connection closed at
// once, while the client was still sending: the kernel reset the connection and a client
// sending 0.6–1 MB never read the 413. The rest of the body is read and dropped (up to a
// bound) before the 413 and the close, as nginx's lingering close does (RFC 9112 §9.6).
import t from 'tap';
import { request } from 'node:http';
import { connect } from 'node:net';
import { startTestServer } from '../helpers/server.ts';
import { ORTB_MAX_BODY_BYTES } from '../../src/prebid/ortb/body.ts';

interface Outcome { status: number; body: string; error: string }

function post(port: number, path: string, body: Buffer, chunked: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (!chunked) headers['content-length'] = String(body.length);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, error: '' }));
      res.on('error', (e) => resolve({ status: res.statusCode ?? 0, body: text, error: e.message }));
    });
    req.on('error', (e) => resolve({ status: 0, body: '', error: e.message }));
    // Sent in 16 KiB writes, as a client streaming its body does.
    for (let i = 0; i < body.length; i += 16384) req.write(body.subarray(i, i + 16384));
    req.end();
  });
}

/**
 * Sends the whole request before reading a byte of the answer, as curl and many clients do:
 * what the server sent sits unread in the socket, and a reset discards it.
 */
function sendAllThenRead(port: number, head: string, body: Buffer, chunked: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.pause();
    let text = '';
    let error = '';
    const finish = () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4), error });
    };
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => (text += d));
    sock.on('error', (e) => (error = e.message));
    sock.on('close', finish);
    const parts: Buffer[] = [Buffer.from(head + (chunked ? 'Transfer-Encoding: chunked\r\n\r\n' : `Content-Length: ${body.length}\r\n\r\n`))];
    for (let i = 0; i < body.length; i += 16384) {
      const piece = body.subarray(i, i + 16384);
      parts.push(chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
    }
    if (chunked) parts.push(Buffer.from('0\r\n\r\n'));
    let i = 0;
    const next = (): void => {
      while (i < parts.length) {
        if (!sock.write(parts[i++]!)) {
          sock.once('drain', next);
          return;
        }
      }
      // All sent: now read (and give up after 5 s).
      sock.resume();
      setTimeout(() => sock.destroy(), 5000).unref();
    };
    sock.once('connect', next);
    // A write into a reset connection fails: read what came, if anything.
    sock.on('error', () => sock.resume());
  });
}

t.test('bodies of 0.1–1 MB to POST /api/v1/ivt/ortb: every client reads its 413', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const path = `/api/v1/ivt/ortb?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&node=n`;
  for (const bytes of [ORTB_MAX_BODY_BYTES + 1, 100_000, 600_000, 1_000_000]) {
    const body = Buffer.from(JSON.stringify({ id: 'x', pad: 'a'.repeat(bytes) }));
    for (const chunked of [false, true]) {
      for (let round = 0; round < 4; round++) {
        const r = await post(srv.server.ports.prebid, path, body, chunked);
        if (r.status !== 413 || !/payload_too_large/.test(r.body)) {
          t.fail(`${body.length} bytes${chunked ? ' chunked' : ''}, round ${round}: ${r.status} ${r.body} ${r.error}`);
          return;
        }
      }
      t.pass(`${body.length} bytes${chunked ? ' chunked' : ' with its Content-Length'}: 413 read, 4 of 4`);
    }
  }
  // A client that reads only once its body is sent.
  const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n`;
  for (const bytes of [100_000, 600_000, 1_000_000]) {
    const body = Buffer.from(JSON.stringify({ id: 'x', pad: 'a'.repeat(bytes) }));
    for (const chunked of [false, true]) {
      for (let round = 0; round < 4; round++) {
        const r = await sendAllThenRead(srv.server.ports.prebid, head, body, chunked);
        if (r.status !== 413 || !/payload_too_large/.test(r.body)) {
          t.fail(`send-then-read, ${body.length} bytes${chunked ? ' chunked' : ''}, round ${round}: ${r.status} ${JSON.stringify(r.body.slice(0, 200))} ${r.error}`);
          return;
        }
      }
      t.pass(`send-then-read, ${body.length} bytes${chunked ? ' chunked' : ' with its Content-Length'}: 413 read, 4 of 4`);
    }
  }
  // The port still answers (the thread dropped the bodies, nothing else).
  const ok = await fetch(`${srv.prebid}/health-check`);
  t.equal(ok.status, 200);
});
