// Worker role 'probe': one uWebSockets.js app per thread on the shared port, answering
// GET /ping. Proves addon loading and asset reads inside worker threads of the binary.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { isSea, readAsset } from '../src/runtime/assets.ts';

export interface ProbeWorkerData {
  host: string;
  port: number;
  index: number;
}

export type ProbeWorkerMessage =
  | { type: 'listening'; index: number; port: number }
  | { type: 'failed'; index: number; reason: string }
  | { type: 'stopped'; index: number };

const port = parentPort;
if (!port) throw new Error('probe-worker runs as a worker thread only');
const { host, port: wanted, index } = workerData as ProbeWorkerData;
const send = (m: ProbeWorkerMessage) => port.postMessage(m);

const mmdbBytes = readAsset('mmdb/country.mmdb').byteLength;
const body = JSON.stringify({ pong: true, worker: index, threadId, sea: isSea(), mmdbBytes });

let listening: uWS.us_listen_socket | null = null;
const app = uWS.App();
app
  .get('/ping', (res) => {
    res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
  })
  .any('/*', (res) => {
    res.cork(() => res.writeStatus('404 Not Found').end());
  })
  .listen(host, wanted, (socket) => {
    if (!socket) return send({ type: 'failed', index, reason: `cannot listen on ${host}:${wanted}` });
    listening = socket;
    send({ type: 'listening', index, port: uWS.us_socket_local_port(socket) });
  });

/** TemplatedApp.close() (force-closes all of the app's sockets) exists in v20.30 but is missing from its typings. */
function closeAll(a: uWS.TemplatedApp): void {
  (a as uWS.TemplatedApp & { close(): void }).close();
}

port.on('message', (m: unknown) => {
  if (m !== 'stop') return;
  // Exiting with any uWS socket open (listen socket or a keep-alive client) aborts the
  // process: close the listen socket, then every connection.
  if (listening) uWS.us_listen_socket_close(listening);
  listening = null;
  closeAll(app);
  send({ type: 'stopped', index });
});
