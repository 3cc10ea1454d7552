// Why the filter's client side is not uWebSockets.js (src/prebid/filter/client-http.ts): a
// uWS v20.30 app that answers after its handler returned (as the filter must: the upstream
// answers later), with onAborted and cork, and optionally res.pause() until it answers; raw
// clients pipeline a second request, in the same write or 5 ms later. Prints what each got.
//   node --import tsx bench/uws-pipelining.ts [pause]
// Seen here (2026-12-06): without pause, both connections closed with no answer at all (uWS
// closes a connection whose next request it parses while an answer is held, before the app
// sees that request); with pause, the one sent later is answered, the same-write one is not.
import uWS from 'uWebSockets.js';
import { connect } from 'node:net';

const PAUSE = process.argv[2] === 'pause';
let n = 0;
const app = uWS.App().any('/*', (res, req) => {
  const me = ++n;
  const url = req.getUrl();
  let gone = false;
  res.onAborted(() => (gone = true));
  if (PAUSE) res.pause();
  res.onData((_c, last) => {
    if (!last) return;
    setTimeout(() => {
      if (gone) return;
      res.cork(() => {
        if (PAUSE) res.resume();
        res.writeStatus('200 OK').end(`answer ${me} ${url}`);
      });
    }, 20);
  });
});

const request = (p: string) => `POST ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`;

function exchange(port: number, gapMs: number): Promise<{ answers: number; closed: boolean }> {
  return new Promise((done) => {
    const s = connect(port, '127.0.0.1');
    let got = '';
    let closed = false;
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('close', () => (closed = true));
    s.on('connect', () => {
      if (gapMs < 0) s.write(request('/a') + request('/b'));
      else {
        s.write(request('/a'));
        setTimeout(() => s.write(request('/b')), gapMs);
      }
    });
    setTimeout(() => {
      s.destroy();
      done({ answers: (got.match(/HTTP\/1\.1 200/g) ?? []).length, closed });
    }, 300);
  });
}

app.listen('127.0.0.1', 0, async (ls) => {
  const port = uWS.us_socket_local_port(ls as unknown as uWS.us_socket);
  const out = { pause: PAUSE, sameWrite: await exchange(port, -1), fiveMsLater: await exchange(port, 5) };
  console.log(JSON.stringify(out));
  uWS.us_listen_socket_close(ls as uWS.us_listen_socket);
  process.exit(0);
});
