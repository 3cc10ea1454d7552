// Baseline for the lookup benchmark, as a process of its own: a bare uWebSockets.js
// handler answering every request with a fixed JSON body (argv[2]: its byte length,
// filled to the size of a real lookup response). Prints {"port":N}; exits on SIGTERM.
import uWS from 'uWebSockets.js';

const size = Number(process.argv[2] ?? 330);
const body = JSON.stringify({ pad: 'x'.repeat(Math.max(0, size - 10)) });
const app = uWS.App().any('/*', (res) => {
  res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(body);
});
let listen: uWS.us_listen_socket | null = null;
app.listen('127.0.0.1', 0, (ls) => {
  listen = ls || null;
  process.stdout.write(JSON.stringify({ port: ls ? uWS.us_socket_local_port(ls as unknown as uWS.us_socket) : 0 }) + '\n');
});
process.on('SIGTERM', () => {
  if (listen) uWS.us_listen_socket_close(listen);
  // Closes kept-alive sockets too (exists in v20.30, missing from its typings).
  (app as unknown as { close(): void }).close();
});
