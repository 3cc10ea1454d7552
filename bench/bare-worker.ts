// Baseline for the lookup benchmark: a bare uWebSockets.js handler on its own thread that
// answers every request with a fixed JSON body of the same size as a lookup response.
// On 'stop' it closes its listen socket and lets the thread end by itself (terminating a
// thread that holds uWS sockets aborts the process).
import uWS from 'uWebSockets.js';
import { parentPort, workerData } from 'node:worker_threads';

const { body } = workerData as { body: string };
let listen: uWS.us_listen_socket | null = null;
uWS.App()
  .any('/*', (res) => {
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(body);
  })
  .listen('127.0.0.1', 0, (ls) => {
    listen = ls || null;
    parentPort!.postMessage({ port: ls ? uWS.us_socket_local_port(ls as unknown as uWS.us_socket) : 0 });
  });
parentPort!.on('message', (m: string) => {
  if (m === 'stop' && listen) {
    uWS.us_listen_socket_close(listen);
    parentPort!.unref();
  }
});
