// startWorker from a checkout: the role's TypeScript file runs in a worker thread
// (tsx registered inside the worker), loads uWebSockets.js and reads assets.
import t from 'tap';
import { once } from 'node:events';
import type { ProbeWorkerData, ProbeWorkerMessage } from '../../tools/probe-worker.ts';
import { startWorker } from '../../src/runtime/worker-entry.ts';
import { freePort } from '../helpers/ports.ts';


t.test('a probe worker serves /ping and stops on request', async (t) => {
  const port = await freePort();
  const data: ProbeWorkerData = { host: '127.0.0.1', port, index: 7 };
  const w = startWorker('probe', data);
  t.teardown(() => w.terminate());
  const [listening] = (await once(w, 'message')) as [ProbeWorkerMessage];
  t.same(listening, { type: 'listening', index: 7, port });

  const res = await fetch(`http://127.0.0.1:${port}/ping`);
  t.equal(res.status, 200);
  t.match(await res.json(), { pong: true, worker: 7, sea: false, mmdbBytes: Number });

  w.postMessage('stop');
  const [stopped] = (await once(w, 'message')) as [ProbeWorkerMessage];
  t.same(stopped, { type: 'stopped', index: 7 });
  await t.rejects(fetch(`http://127.0.0.1:${port}/ping`), 'listen socket closed');
  t.equal(await w.terminate(), 1, 'terminated');
});
