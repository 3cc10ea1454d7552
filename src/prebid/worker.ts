// A lookup thread: its own uWebSockets.js app on the shared pre-bid port. History and the
// verdict caches are the process's shared tables (init.memory); the data files' bytes are
// shared too. Nothing here waits on I/O or logs per request.
//
// The thread in named parts: this file is its lifecycle (start, the main thread's messages,
// the fatal hand-over); worker-routes.ts one handler per path; worker-framing.ts how answers
// are written, the request's size limit, an OpenRTB body's framing and the end-of-turn answer
// batch; worker-stats.ts what it counts; worker-state.ts the engine it serves with. One
// worker a thread: their state is module-level, set up once by runLookupWorker.
import uWS from 'uWebSockets.js';
import type { MessagePort } from 'node:worker_threads';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fromMainThread } from './thread-bundle.ts';
import { buildLookupData, type LookupData } from './lookup-data.ts';
import { warmUp, type WarmUp } from './warm-up.ts';
import { LookupEngine } from './pipeline.ts';
import { setVersionFloor } from '../signals/ua-analysis.ts';
import { BeaconJudge } from './beacon.ts';
import type { FromWorker, LookupWorkerInit, ToWorker } from './messages.ts';
import { engine, serveWith, setBeacon, setKeysKnown, startDraining, unavailable } from './worker-state.ts';
import { flush, noteError, startStats, statsOfFilter } from './worker-stats.ts';
import { monotonicMs, RETIRE_GRACE_MS, startFilter, type RunningFilter } from './filter/proxy.ts';
import { addRoutes } from './worker-routes.ts';

export { LOOKUP_PATH, ORTB_PATH, HEALTH_PATH } from './worker-routes.ts';
export { MAX_REQUEST_BYTES } from './worker-framing.ts';

/** How long a failing thread keeps its port for the main thread's 503 listener to open. */
const HANDOVER_WAIT_MS = 1000;
/** How long a filter's replacement waits, blocked, for the main thread to let go of its port. */
const TAKE_PORT_WAIT_MS = 2000;
/** How long a listener that stops accepting still answers the connections it accepted. */
export const LINGER_MS = 100;

type DataMessage = Extract<ToWorker, { type: 'data' }>;

let init: LookupWorkerInit;
let port: MessagePort;
let keys: LookupWorkerInit['keys'];
/** The policies received before the engine exists (applied to it when the first data makes it). */
let policies: Map<string, LookupWorkerInit['policies'][number]>;
let app: uWS.TemplatedApp;
let timer: ReturnType<typeof setInterval>;
let listenSocket: uWS.us_listen_socket | null = null;
/** A filter's thread listens with its filter (src/prebid/filter/proxy.ts) instead of `app`. */
let filter: RunningFilter | null = null;

export function runLookupWorker(workerInit: LookupWorkerInit, workerPort: MessagePort): void {
  init = workerInit;
  port = workerPort;
  setVersionFloor(init.versionFloorMs ?? 0);
  keys = init.keys;
  setKeysKnown(init.keysKnown ?? true);
  policies = new Map(init.policies.map((u) => [u.customerId, u]));
  startStats(init.index);
  app = addRoutes(uWS.App());
  timer = setInterval(report, init.countsIntervalMs);
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
  port.on('message', onMessage);
  if (init.filter !== undefined) {
    filter = startFilter(init.filter, init.host, { engine: () => (unavailable() === null ? engine : null), noteError: (m) => noteError(new Error(m)), heldCapBytes: init.memory.filterHeldBytes },
      (listening) => post({ type: 'listening', index: init.index, port: listening, at: monotonicMs() }),
      (message) => {
        post({ type: 'listen-failed', index: init.index, message });
        clearInterval(timer);
      }, init.deferListen === true);
    const running = filter;
    statsOfFilter(() => running.take());
    if (init.deferListen === true) post({ type: 'booted', index: init.index });
  } else app.listen(init.host, init.port, onListen);
}

function post(m: FromWorker): void {
  port.postMessage(m);
}

/** The interval's counts and stats, to the main thread. */
function report(): void {
  post({ type: 'counts', index: init.index, ...flush() });
}

function onListen(ls: uWS.us_listen_socket | false): void {
  if (!ls) {
    post({ type: 'listen-failed', index: init.index, message: `cannot listen on ${init.host}:${init.port} (port in use or address not available)` });
    clearInterval(timer);
    return;
  }
  listenSocket = ls;
  post({ type: 'listening', index: init.index, port: uWS.us_socket_local_port(ls as unknown as uWS.us_socket) });
}

function onMessage(m: ToWorker): void {
  if (m.type === 'handover') {
    if (m.signal !== undefined) handoverSignal = m.signal;
    if (dying) closeAfterFatal();
    return;
  }
  if (m.type === 'take-port') {
    // Ready (its data loaded): it says so and waits, blocked, to be woken the moment the main
    // thread has let go of the port, then listens at once; `listen` follows if it stopped waiting.
    if (dying) return;
    post({ type: 'waiting', index: init.index });
    const flag = new Int32Array(m.signal, 0, 1);
    Atomics.wait(flag, 0, 0, TAKE_PORT_WAIT_MS);
    if (Atomics.load(flag, 0) === 1) filter?.listen();
    return;
  }
  if (m.type === 'listen') {
    if (!dying) filter?.listen();
    return;
  }
  if (m.type === 'gc') {
    fullGc();
    post({ type: 'gc-done', index: init.index, heapUsed: getHeapStatistics().used_heap_size });
    return;
  }
  if (m.type === 'crash') {
    // A thread that ends at once, without a word (a filter's: no uWS socket to abort the process).
    if (m.exit === true && filter !== null) process.exit(3);
    // Fault injection for the supervision test: fail the way a bug would, outside a request.
    setImmediate(() => {
      throw new Error('crash requested by the main thread');
    });
    return;
  }
  if (m.type === 'policy') {
    for (const u of m.updates) policies.set(u.customerId, u);
    engine?.policies.apply(m.updates);
    post({ type: 'policy-ok', index: init.index, id: m.id });
  } else if (m.type === 'keys') {
    keys = m.keys;
    setKeysKnown(m.known);
    engine?.keys.replace(keys);
    post({ type: 'keys-ok', index: init.index, id: m.id });
  } else if (m.type === 'filter') {
    filter?.update(m.settings);
    post({ type: 'filter-ok', index: init.index, id: m.id });
  } else if (m.type === 'data') takeData(m);
  else if (m.type === 'stop') stop(m.retire === true);
}

/** New data: built aside, then swapped in one assignment, so lookups never see half-loaded data. */
function takeData(m: DataMessage): void {
  try {
    const data = buildLookupData(fromMainThread(m.bundle), m.id).data;
    let warm: WarmUp | undefined;
    if (engine === null) {
      // Before the first lookup: the code each kind of lookup runs, compiled (warm-up.ts).
      warm = warmUp(data);
      startEngine(data);
    } else {
      engine.data = data;
    }
    post({ type: 'data-ok', index: init.index, id: m.id, ...(warm ? { warmUp: warm } : {}) });
  } catch (e) {
    post({ type: 'data-failed', index: init.index, id: m.id, message: (e as Error).message });
  }
}

/** The engine (and beacon judge) the first data makes, with the keys and policies received so far. */
function startEngine(data: LookupData): void {
  const e = new LookupEngine(data, init.memory, {
    trackBotIps: init.trackBotIps === true,
    seenSample: init.seenSample ?? 0,
    ...(init.beacon ? { lidSecret: init.beacon.lidSecret } : {}),
  });
  serveWith(e);
  e.keys.replace(keys);
  e.policies.apply([...policies.values()]);
  if (init.beacon) setBeacon(new BeaconJudge(init.beacon, init.memory, e.sources.history, e.sources.uaCache));
  policies = new Map();
}

/** The main thread's stop: stop accepting, close every connection, send the last counts (`retire`: a filter's, once more after its requests under way). */
function stop(retire = false): void {
  startDraining();
  if (listenSocket) uWS.us_listen_socket_close(listenSocket);
  listenSocket = null;
  filter?.close(retire ? report : undefined);
  // Requests are answered synchronously, so none is in flight here. Close every kept-
  // alive connection too: a thread that still holds uWS sockets when it ends aborts the
  // whole process. TemplatedApp.close() exists in v20.30 but is missing from its typings.
  (app as unknown as { close(): void }).close();
  clearInterval(timer);
  post({ type: 'stopped', index: init.index, ...flush() });
  // Nothing else to receive: let the thread end when its last socket closes.
  port.unref();
}

/**
 * An error nothing caught. A thread that ends while it holds uWS sockets aborts the whole
 * process, so close them all first, tell the main thread (which starts a new thread), then
 * end this one.
 */
let dying = false;
function fatal(err: unknown): void {
  if (dying) return;
  dying = true;
  startDraining();
  clearInterval(timer);
  try {
    // The counts of this last second still reach reporting.
    report();
    post({ type: 'fatal', index: init.index, message: err instanceof Error ? `${err.message}` : String(err) });
  } finally {
    // The port stays open until the main thread says another listener holds it (the
    // last thread's 503 listener: its 'handover' message), so no connection is refused
    // meanwhile; not for long.
    setTimeout(closeAfterFatal, HANDOVER_WAIT_MS);
  }
}

let closed = false;
/** A filter's thread: where to say at once that it let go of its port (the main thread waits on it). */
let handoverSignal: SharedArrayBuffer | null = null;
/** After fatal(): stop accepting, answer what was accepted for LINGER_MS, then end the thread. */
function closeAfterFatal(): void {
  if (closed) return;
  closed = true;
  if (filter !== null) return releaseFilter(filter, init.filter?.timeoutMs ?? 0);
  try {
    if (listenSocket) uWS.us_listen_socket_close(listenSocket);
    listenSocket = null;
  } finally {
    // Requests already on accepted connections are answered before those close.
    setTimeout(exitAfterLinger, LINGER_MS);
  }
}

/**
 * A failing filter's thread lets go of its port for the main thread's fail-open listener, says
 * so at once, answers the connections it accepted (each closed after its next answer), and ends.
 */
function releaseFilter(f: RunningFilter, timeoutMs: number): void {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    exitAfterLinger();
  };
  // (Taken before the listener closes: the gap the main thread measures from it is never less than the true one.)
  const at = monotonicMs();
  try {
    f.release(RETIRE_GRACE_MS, end);
  } finally {
    if (handoverSignal !== null) {
      const flag = new Int32Array(handoverSignal, 0, 1);
      new Float64Array(handoverSignal, 8, 1)[0] = at;
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    }
    post({ type: 'released', index: init.index, at });
    setTimeout(end, RETIRE_GRACE_MS + timeoutMs + 500);
  }
}

function exitAfterLinger(): void {
  try {
    (app as unknown as { close(): void }).close();
    // What it answered while handing over counts too.
    report();
  } finally {
    setImmediate(() => process.exit(1));
  }
}

let gcFn: (() => void) | null = null;
/** A full garbage collection (V8's gc(), exposed on first use; never on the lookup path). */
function fullGc(): void {
  if (gcFn === null) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
}
