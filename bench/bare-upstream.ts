// The filter benchmark's upstream, as a process of its own: a bare uWebSockets.js bid
// endpoint that reads each POST body whole and answers a fixed bid response (argv[2]: its
// byte length). Prints {"port":N}; exits on SIGTERM.
import uWS from 'uWebSockets.js';

const size = Number(process.argv[2] ?? 120);
const body = JSON.stringify({ id: '1', seatbid: [{ bid: [{ id: 'b', impid: '1', price: 1, adm: 'x'.repeat(Math.max(0, size - 70)) }] }] });
const app = uWS.App().any('/*', (res) => {
  let gone = false;
  res.onAborted(() => (gone = true));
  res.onData((_chunk, last) => {
    if (last && !gone) res.cork(() => res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(body));
  });
});
let listen: uWS.us_listen_socket | null = null;
app.listen('127.0.0.1', 0, (ls) => {
  listen = ls || null;
  process.stdout.write(JSON.stringify({ port: ls ? uWS.us_socket_local_port(ls as unknown as uWS.us_socket) : 0 }) + '\n');
});
process.on('SIGTERM', () => {
  if (listen) uWS.us_listen_socket_close(listen);
  (app as unknown as { close(): void }).close();
});
