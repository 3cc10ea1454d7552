// startWorker from a checkout: the role's TypeScript file runs in a worker thread
// (tsx registered inside the worker), loads uWebSockets.js and reads assets.
import t from 'tap';
import { once } from 'node:events';
import { readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProbeWorkerData, ProbeWorkerMessage } from '../../tools/probe-worker.ts';
import { startWorker } from '../../src/runtime/worker-entry.ts';
import { freshWorkerBundle } from '../../src/runtime/worker-bundle.ts';
import { buildWorkerBundle, buildWorkerBundles, staleWorkerBundles } from '../../tools/build-workers.ts';
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

t.test('a checkout bundle of the lookup thread is used only while its sources are unchanged', async (t) => {
  // A stand-in checkout: the lookup role's entry and one module it imports.
  const root = t.testdir({
    'package.json': JSON.stringify({ name: 'ivtd' }),
    src: { prebid: { 'worker-main.ts': "import { n } from './dep.ts';\nexport const answer: number = n + 1;\n", 'dep.ts': 'export const n = 41;\n' } },
  });
  const old = new Date(Date.now() - 60_000);
  for (const f of ['src/prebid/worker-main.ts', 'src/prebid/dep.ts']) utimesSync(join(root, f), old, old);
  t.equal(freshWorkerBundle('lookup', root), null, 'none built yet');
  t.same(staleWorkerBundles(root), ['lookup']);
  t.ok(await buildWorkerBundle('lookup', root), 'built');
  const code = freshWorkerBundle('lookup', root);
  t.equal(code, join(root, 'data/generated/workers/lookup.mjs'), 'fresh after the build');
  t.match(readFileSync(code!, 'utf8'), /41/, 'the imported module is in the bundle');
  t.same(Object.keys((JSON.parse(readFileSync(join(root, 'data/generated/workers/lookup.json'), 'utf8')) as { inputs: object }).inputs).sort(), ['src/prebid/dep.ts', 'src/prebid/worker-main.ts'], 'its manifest lists both sources');
  t.same(staleWorkerBundles(root), []);
  t.equal(freshWorkerBundle('probe', root), null, 'the probe always starts through tsx');

  // An edit that keeps the size still makes it stale (the mtime moved), and so does a removal.
  writeFileSync(join(root, 'src/prebid/dep.ts'), 'export const n = 42;\n');
  t.equal(freshWorkerBundle('lookup', root), null, 'a source edited since: stale');
  utimesSync(join(root, 'src/prebid/dep.ts'), old, old);
  t.ok(await buildWorkerBundle('lookup', root), 'built again');
  t.not(freshWorkerBundle('lookup', root), null);
  rmSync(join(root, 'src/prebid/dep.ts'));
  t.equal(freshWorkerBundle('lookup', root), null, 'a source gone: stale');
  writeFileSync(join(root, 'src/prebid/dep.ts'), 'export const n = 40;\n');
  const older = new Date(old.getTime() - 3_600_000);
  utimesSync(join(root, 'src/prebid/dep.ts'), older, older);
  t.equal(freshWorkerBundle('lookup', root), null, 'back, same size, an older mtime: still stale');

  // A source written while the bundle is built: no manifest vouches for that build.
  writeFileSync(join(root, 'src/prebid/dep.ts'), 'export const n = 43;\n');
  t.equal(await buildWorkerBundle('lookup', root), false, 'a source newer than the build start: not vouched for');
  t.equal(freshWorkerBundle('lookup', root), null);
});

t.test('in this checkout, once generated, lookup threads start from the fresh bundle', async (t) => {
  await buildWorkerBundles();
  const code = freshWorkerBundle('lookup');
  t.not(code, null, 'tools/build-workers.ts left a bundle matching the sources');
  // Started without its data, the thread's own code fails at once: it ran (from the bundle,
  // which startWorker takes whenever freshWorkerBundle names one).
  const w = startWorker('lookup', {});
  const [err] = (await once(w, 'error')) as [Error];
  t.match(err.stack, /runLookupWorker/, `the lookup code ran: ${err.message.slice(0, 80)}`);
  await w.terminate();
});
