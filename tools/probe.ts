// Probe entry for the single-binary pipeline (test/runtime/sea.test.ts): N worker threads
// serve GET /ping with uWebSockets.js on one port while the main thread queries DuckDB
// in memory and in a file. Prints one JSON line per event; exits 0 on SIGTERM.
//   ./dist/probe/ivtd-probe --port 0 --threads 2 --data-dir /tmp/x
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { DuckDBInstance } from '@duckdb/node-api';
import { isSea, listAssets } from '../src/runtime/assets.ts';
import type { ProbeWorkerData, ProbeWorkerMessage } from './probe-worker.ts';
import { startWorker } from '../src/runtime/worker-entry.ts';

const print = (event: string, fields: object) => process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    threads: { type: 'string', default: '2' },
    'data-dir': { type: 'string', default: join(tmpdir(), `ivtd-probe-${process.pid}`) },
  },
});

function nextMessage(w: Worker, type: ProbeWorkerMessage['type'] | 'failed'): Promise<ProbeWorkerMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: ProbeWorkerMessage) => {
      if (m.type !== type && m.type !== 'failed') return;
      w.off('message', onMessage);
      if (m.type === 'failed') reject(new Error(m.reason));
      else resolve(m);
    };
    w.on('message', onMessage);
    w.once('error', reject);
  });
}

/** A port free right now: uSockets shares a port across threads only when it is given explicitly. */
async function freePort(host: string): Promise<number> {
  const server = createServer().listen(0, host);
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port from the OS');
  return address.port;
}

const workers: Worker[] = [];

async function startWorkers(host: string, port: number, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const data: ProbeWorkerData = { host, port, index };
    const w = startWorker('probe', data);
    workers.push(w);
    await nextMessage(w, 'listening');
    print('worker', { index, port, threadId: w.threadId });
  }
}

/** Listen sockets closed and workers gone before the process ends: exiting with uWS sockets open aborts. */
async function stopWorkers(): Promise<void> {
  await Promise.all(workers.map((w) => (w.postMessage('stop'), nextMessage(w, 'stopped'))));
  await Promise.all(workers.map((w) => w.terminate()));
}

const instances: DuckDBInstance[] = [];

async function queryDuckdb(dataDir: string): Promise<object> {
  const memory = await DuckDBInstance.create(':memory:');
  instances.push(memory);
  const mc = await memory.connect();
  const [m] = (await mc.runAndReadAll(`SELECT 6 * 7 AS answer, version() AS version`)).getRowObjectsJS();
  mc.closeSync();

  mkdirSync(dataDir, { recursive: true });
  const file = await DuckDBInstance.create(join(dataDir, 'probe.duckdb'));
  instances.push(file);
  const fc = await file.connect();
  await fc.run(`CREATE TABLE IF NOT EXISTS hits (n INTEGER)`);
  await fc.run(`INSERT INTO hits VALUES (1), (2), (3)`);
  const [f] = (await fc.runAndReadAll(`SELECT count(*)::INTEGER AS rows, sum(n)::INTEGER AS total FROM hits`)).getRowObjectsJS();
  fc.closeSync();
  return { memory: m, file: f };
}

async function main(): Promise<void> {
  const threads = Number(values.threads);
  const port = Number(values.port) || (await freePort(values.host));
  await startWorkers(values.host, port, threads);
  print('duckdb', await queryDuckdb(values['data-dir']));
  print('ready', { port, threads, sea: isSea(), assets: listAssets('').length, startupMs: Math.round(performance.now()) });
}

async function stop(): Promise<void> {
  await stopWorkers();
  for (const i of instances) i.closeSync();
  print('stopped', {});
  // Nothing is left holding the event loop, so the process ends with code 0 by itself.
}

const started = main();
// Installed before startup finishes, so an early SIGTERM still shuts down in order.
process.once('SIGTERM', () => void started.then(stop));
started.catch(async (err: unknown) => {
  console.error(err);
  await Promise.all(workers.map((w) => w.terminate()));
  process.exit(1);
});
