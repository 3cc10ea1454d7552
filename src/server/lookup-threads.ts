// The main thread's side of the pre-bid listener: starts the lookup threads, pushes keys
// and data to them, collects their count deltas, supervises them, and stops them in
// order. What runs inside the threads is in src/prebid.
//
// Supervision: a thread that fails on an error nothing caught closes its sockets and ends
// (src/prebid/worker.ts); a new one is started here after a backoff and given the current
// keys and data. While no thread is alive, the main thread holds the port with a listener
// that answers 503 to everything, so /health-check says what is true. A thread that runs
// out of its heap limit cannot close its sockets first: Node then ends the whole process,
// and the service manager restarts it (the systemd unit has Restart=on-failure).
//
// A filter's thread (src/prebid/filter/) listens with node:net, which in Node 20 cannot share a
// port: while it is being replaced the main thread holds its port and sends every request on
// unjudged (src/server/filter-fallback.ts). The failing thread lets go only once the main
// thread waits to take the port; the replacement loads its data before it asks for the port back.
import uWS from 'uWebSockets.js';
import { createServer, type AddressInfo } from 'node:net';
import type { Worker } from 'node:worker_threads';
import { forThreads, type DataBundle } from '../prebid/thread-bundle.ts';
import { errorJson, ListenError, listenHint, STATUS_TEXT, type ErrorAnswer } from '../base/errors.ts';
import type { CountRow } from '../counts/tuple.ts';
import type { NewTuple } from '../counts/tuple-dictionary.ts';
import type { BotIpRow } from '../prebid/bot-ip-tracker.ts';
import type { LiveKey } from '../store/api-keys.ts';
import type { PolicyUpdate } from '../policy/service.ts';
import type { BeaconSettings, FromWorker, ImpressionDeltas, LookupMemory, LookupStats, LookupWorkerInit, SeenValues, ToWorker } from '../prebid/messages.ts';
import { HEALTH_PATH, LINGER_MS } from '../prebid/worker.ts';
import { startWorker } from '../runtime/worker-entry.ts';
import type { FilterSettings } from '../base/filter-settings.ts';
import { emptyLookupStats } from '../prebid/messages.ts';
import { monotonicMs } from '../prebid/filter/proxy.ts';
import { FilterFallback } from './filter-fallback.ts';

export interface LookupServerOptions {
  host: string;
  port: number;
  threads: number;
  /** The shared tables every thread opens (allocated once by the main thread). */
  memory: LookupMemory;
  countsIntervalMs?: number;
  onCounts: (rows: CountRow[], stats: LookupStats) => void;
  /** Tuples a thread added to the shared counts (their values, for the flush). */
  onTuples?: (announced: NewTuple[]) => void;
  /** Impression tuples a thread added to the shared impression counts, and the counts it kept itself. */
  onImpressions?: (deltas: ImpressionDeltas) => void;
  /** A fleet host: threads keep their bot-heavy IPs and report them here. */
  onBotIps?: (rows: BotIpRow[]) => void;
  /** The data refresher crawls: threads sample the domains and selling systems they see and report them here. */
  onSeen?: (seen: SeenValues) => void;
  /** A thread failed or ended unexpectedly (logged by the caller). */
  onWorkerError?: (index: number, err: Error) => void;
  /** A replacement thread is serving again (`warmUpMs`: its warm-up before its first lookup). */
  onRestart?: (index: number, restarts: number, warmUpMs: number) => void;
  /** A thread's warm-up failed (a bug): it serves regardless, its first lookups of each kind slower. */
  onWarmUpFailed?: (index: number, message: string) => void;
  /** UA version ceilings never fall below this time (ms), whatever the clock says (setVersionFloor). */
  versionFloorMs?: number;
  /** The main thread's listener answered a request (not a health check) 503: no thread was alive. */
  onUnavailable?: () => void;
  /** Lookup ids and the impression beacon (absent: none). */
  beacon?: BeaconSettings;
  /** First and longest wait before starting a replacement thread, ms. */
  restartDelayMs?: { min: number; max: number };
  /**
   * Filters (src/filter/): a thread each, supervised, fed and counted like a lookup thread,
   * listening on its filter's port instead of the pre-bid port (never in the 503 fallback).
   */
  filters?: FilterSettings[];
  /**
   * How many filters the memory plan was made for (src/memory/budget.ts: each one's floors and
   * held bytes): a reload may run at most this many (default: `filters`' count).
   */
  plannedFilters?: number;
  /** A filter's thread a reload removed has ended (its figures, by thread index, are over). */
  onRetired?: (index: number) => void;
  /**
   * A filter's port changed hands: `take`, the main thread listened `ms` after the failing thread
   * let go; `give`, the replacement listened `ms` after the main thread let go; `exit`, the main
   * thread listened `ms` after it learnt that the thread had ended without a word.
   */
  onFilterHandover?: (filter: string, phase: FilterHandover['phase'], ms: number) => void;
}

/** One hand-over of a filter's port (see onFilterHandover). */
export interface FilterHandover {
  filter: string;
  phase: 'take' | 'give' | 'exit';
  /** The gap: from just before one listener closed (or the thread's exit was heard of) to just after the other listened, monotonic ms (proxy.ts monotonicMs, one clock for every thread). */
  from: number;
  to: number;
  ms: number;
}

/**
 * Distinct domains (and apps, and selling systems) a thread reports per flush (a second by
 * default) for the crawl: the refresher keeps the most recent few thousand, so a thread
 * need not send more than that in a second.
 */
export const SEEN_SAMPLE_PER_FLUSH = 1000;

/** A thread that served this long before failing starts its backoff from the beginning. */
const STABLE_MS = 60_000;
/** How long a policy push waits for a thread to say the policy is in force. */
const POLICY_ACK_MS = 2_000;
const RESTART_DELAY = { min: 250, max: 30_000 };
/**
 * How long the main thread blocks waiting for a failing filter thread to let go of its port:
 * woken the moment it does, it binds at once, where a message would wait for its event loop.
 */
const FILTER_TAKE_WAIT_MS = 50;
/** How long a replacement filter thread has to take its port back once the main thread let go. */
const FILTER_GIVE_WAIT_MS = 10_000;
const NO_THREAD: ErrorAnswer = { status: 503, code: 'unavailable', message: 'No lookup thread is running; a new one is starting. Retry in a moment or on another instance.' };

interface Slot {
  index: number;
  worker: Worker | null;
  /** Listening (it may still be waiting for its data: then it answers 503). */
  live: boolean;
  startedAt: number;
  /** Consecutive short-lived failures (the backoff exponent). */
  failures: number;
  restartTimer: NodeJS.Timeout | null;
  /** Its warm-up before its first lookup (whole ms, at least 1; 0 until its first data). */
  warmUpMs: number;
  /** A filter's thread: its filter, and the port it listens on (bound once, kept by its replacements). */
  filter?: FilterSettings;
  filterPort?: number;
  /** A filter a reload removed (or whose start it undid): never restarted; its place in `slots` kept. */
  retired?: boolean;
  /** A filter's: the main thread's listener for its port while the thread is being replaced. */
  fallback?: FilterFallback;
  /** A filter's: the thread that failed and is letting go of the port (until the main thread has it). */
  failing?: Worker | null;
}

/**
 * V8 heap limits of a lookup thread: old space for its share of counts and memos, the
 * data lists and code, with room; a small young generation (a lookup's garbage dies young).
 */
export function lookupHeapLimits(memory: LookupMemory): { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number } {
  const mb = (memory.threadCountsBytes + memory.keyMemoEntries * 1024 + memory.uaMemoBytes) / (1 << 20);
  return { maxOldGenerationSizeMb: Math.ceil(192 + 3 * mb), maxYoungGenerationSizeMb: 4 };
}

export class LookupServer {
  private slots: Slot[] = [];
  private pending = new Map<string, { resolve: (v: FromWorker) => void }>();
  /** What every thread must have: the live keys and the data last loaded everywhere. */
  private keys: LiveKey[] = [];
  /** False until a fleet edge has a key set (LookupWorkerInit.keysKnown). */
  private keysKnown = true;
  /** Every customer's compiled policy, by customer (what a new thread starts with). */
  private policies = new Map<string, PolicyUpdate>();
  private policyPushes = 0;
  private keyPushes = 0;
  private filterPushes = 0;
  private data: { bundle: DataBundle; id: number } | null = null;
  private fallback: { app: uWS.TemplatedApp; socket: uWS.us_listen_socket | null } | null = null;
  port = 0;
  listening = false;
  /** Threads started to replace failed ones, since start. */
  restarts = 0;
  /** The last hand-overs of filters' ports (at most 100), for tests and the log. */
  readonly filterHandovers: FilterHandover[] = [];
  private fallbackTimer: NodeJS.Timeout | null = null;
  /** Failing filter threads already replaced, still answering the connections they had accepted. */
  private readonly leaving = new Set<Worker>();

  constructor(private readonly opts: LookupServerOptions) {}

  /**
   * Starts every thread; resolves with the bound port once all listen. Until `reload`
   * hands them data, the threads answer lookups and /health-check with 503.
   */
  async start(keys: LiveKey[], known = true): Promise<number> {
    this.keys = keys;
    this.keysKnown = known;
    let port = this.opts.port;
    // uSockets sets SO_REUSEPORT and SO_REUSEADDR only on a port given explicitly: without
    // them threads cannot share the port, and a replacement thread (or the 503 listener)
    // cannot bind it while old connections linger in TIME-WAIT. So port 0 is resolved here.
    if (port === 0) port = await freePort(this.opts.host);
    // SO_REUSEPORT would also let a second process of the same user share the port and take
    // about half of its connections (a second ivtd on another data dir answering 401 to this
    // one's customers): refuse to start when anything listens there already.
    else await portIsFree(this.opts.host, port);
    try {
      for (let i = 0; i < this.opts.threads; i++) {
        const slot: Slot = { index: i, worker: null, live: false, startedAt: 0, failures: 0, restartTimer: null, warmUpMs: 0 };
        this.slots.push(slot);
        port = await this.launch(slot, port);
      }
      for (const [i, filter] of (this.opts.filters ?? []).entries()) {
        const slot: Slot = { index: this.opts.threads + i, worker: null, live: false, startedAt: 0, failures: 0, restartTimer: null, warmUpMs: 0, filter };
        this.slots.push(slot);
        slot.filterPort = await this.launch(slot, filter.port);
        this.holdFallback(slot);
      }
    } catch (e) {
      await this.stop().catch(() => undefined);
      throw e;
    }
    this.port = port;
    this.listening = true;
    return port;
  }

  /** Lookup threads listening now (filters' threads apart). */
  get liveThreads(): number {
    let n = 0;
    for (const s of this.slots) if (s.live && s.filter === undefined) n++;
    return n;
  }

  get threads(): number {
    return this.slots.filter((s) => s.filter === undefined).length;
  }

  /** Each lookup thread's warm-up before its first lookup, whole ms (0: not warmed yet). */
  get warmUpMs(): number[] {
    return this.slots.filter((s) => s.filter === undefined).map((s) => s.warmUpMs);
  }

  /** How many filters the memory plan holds (plannedFilters, else the filters started with). */
  get plannedFilters(): number {
    return this.opts.plannedFilters ?? this.opts.filters?.length ?? 0;
  }

  /** Each filter's port by its name (0 until it listens). */
  get filterPorts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.slots) if (s.filter !== undefined && s.retired !== true) out[s.filter.name] = s.filterPort ?? 0;
    return out;
  }

  /** `deferred`: a filter's replacement, which says `booted` and listens when told (handBack). */
  private launch(slot: Slot, port: number, deferred = false): Promise<number> {
    const init: LookupWorkerInit = {
      index: slot.index,
      host: this.opts.host,
      port,
      keys: this.keys,
      keysKnown: this.keysKnown,
      policies: [...this.policies.values()].filter((u) => u.buffer !== null),
      memory: this.opts.memory,
      trackBotIps: this.opts.onBotIps !== undefined,
      countsIntervalMs: this.opts.countsIntervalMs ?? 1000,
      seenSample: this.opts.onSeen ? SEEN_SAMPLE_PER_FLUSH : 0,
      versionFloorMs: this.opts.versionFloorMs ?? 0,
      ...(this.opts.beacon ? { beacon: this.opts.beacon } : {}),
      ...(slot.filter ? { filter: { ...slot.filter, port } } : {}),
      ...(deferred ? { deferListen: true } : {}),
    };
    // The same way from a checkout and inside the binary (src/runtime/worker-entry.ts).
    const worker = startWorker('lookup', init, { resourceLimits: lookupHeapLimits(this.opts.memory) });
    if (slot.worker !== null) this.leaving.add(slot.worker);
    slot.worker = worker;
    slot.startedAt = Date.now();
    return new Promise((resolve, reject) => {
      const onFirst = (m: FromWorker) => {
        if (m.type === 'listening') {
          slot.live = true;
          if (slot.filter === undefined) this.closeFallback();
          resolve(m.port);
        } else if (m.type === 'booted') resolve(port);
        else if (m.type === 'listen-failed') {
          // It holds no socket: ending it is safe, and a replacement is then scheduled.
          void worker.terminate();
          reject(new ListenError(`lookup thread ${slot.index}: ${m.message}`));
        } else return;
        worker.off('message', onFirst);
      };
      worker.on('message', onFirst);
      worker.on('message', (m: FromWorker) => this.onMessage(m, slot, worker));
      worker.once('error', (e) => {
        reject(e);
        this.opts.onWorkerError?.(slot.index, e);
      });
      worker.once('exit', (code) => {
        this.leaving.delete(worker);
        reject(new Error(`lookup thread ${slot.index} exited with code ${code} before listening`));
        this.onExit(slot, worker, code);
      });
    });
  }

  private onExit(slot: Slot, worker: Worker, code: number): void {
    const exitedAt = monotonicMs();
    // A failing filter thread that ended before the main thread took its port: the port is free now.
    if (slot.failing === worker && this.listening) this.takeFilterPort(slot, exitedAt, 'exit');
    if (slot.worker !== worker) return;
    slot.worker = null;
    slot.live = false;
    if (!this.listening) return; // stopping, or still starting (start() fails instead)
    this.opts.onWorkerError?.(slot.index, new Error(`lookup thread ${slot.index} ended (exit code ${code}); starting a new one`));
    if (slot.filter !== undefined) this.takeFilterPort(slot, exitedAt, 'exit');
    else if (this.liveThreads === 0) this.openFallback();
    this.scheduleRestart(slot);
  }

  private scheduleRestart(slot: Slot): void {
    if (slot.restartTimer !== null) return; // already (a filter's: when the main thread took its port)
    const { min, max } = this.opts.restartDelayMs ?? RESTART_DELAY;
    if (Date.now() - slot.startedAt > STABLE_MS) slot.failures = 0;
    const delay = Math.min(max, min * 2 ** slot.failures);
    slot.failures++;
    slot.restartTimer = setTimeout(() => void this.restart(slot), delay);
  }

  private async restart(slot: Slot): Promise<void> {
    slot.restartTimer = null;
    if (!this.listening || slot.retired) return;
    // A filter's replacement boots and loads its data while the main thread holds its port.
    const deferred = slot.fallback !== undefined;
    try {
      await this.launch(slot, slot.filter ? slot.filterPort ?? slot.filter.port : this.port, deferred);
      if (this.data) {
        const a = await this.ask(slot, { type: 'data', id: this.data.id, bundle: forThreads(this.data.bundle) }, `data:${this.data.id}:${slot.index}`, 30_000);
        if (a === null || a.type !== 'data-ok') throw new Error(`lookup thread ${slot.index} could not load the data again: ${a && a.type === 'data-failed' ? a.message : 'no answer'}`);
        this.noteWarmUp(slot, a);
      }
      if (deferred) await this.handBack(slot);
      this.restarts++;
      this.opts.onRestart?.(slot.index, this.restarts, slot.warmUpMs);
    } catch (e) {
      this.opts.onWorkerError?.(slot.index, e as Error);
      // A filter's replacement that is up but not listening is of no use: ended, its exit schedules the next.
      if (deferred && slot.worker !== null && !slot.live) void slot.worker.terminate();
      // A thread that started and failed again has its own exit handler; one that never
      // started needs the next attempt scheduled here.
      if (slot.worker === null && this.listening && slot.restartTimer === null) this.scheduleRestart(slot);
    }
  }

  /**
   * A thread is failing and holds its port until told to let go: when it is the last one
   * alive, the 503 listener opens first, then the thread closes; either way it is told to go.
   * The port never refuses a connection in between.
   */
  private takeOver(index: number): void {
    const slot = this.slots[index];
    const worker = slot?.worker;
    if (!slot || !worker) return;
    if (slot.fallback !== undefined && this.listening) return this.filterFailing(slot, worker);
    const letGo = () => worker.postMessage({ type: 'handover' } satisfies ToWorker);
    const othersLive = this.slots.some((s) => s !== slot && s.live && s.filter === undefined);
    if (othersLive || !this.listening || slot.filter !== undefined) letGo();
    else this.openFallback(letGo);
  }

  /**
   * A filter's thread is failing: its fail-open listener is made ready, the thread is told to
   * let go, and the main thread waits (blocking, at most FILTER_TAKE_WAIT_MS) to be woken the
   * moment it has, then binds at once. Node 20's net cannot share the port (no SO_REUSEPORT):
   * between the two, connections are refused; the gap is measured (filterHandovers).
   */
  private filterFailing(slot: Slot, worker: Worker): void {
    slot.failing = worker;
    slot.fallback!.prepare();
    const signal = new SharedArrayBuffer(16);
    const flag = new Int32Array(signal, 0, 1);
    worker.postMessage({ type: 'handover', signal } satisfies ToWorker);
    Atomics.wait(flag, 0, 0, FILTER_TAKE_WAIT_MS);
    // Not yet: its `released` message, or its exit, hands the port over instead.
    if (Atomics.load(flag, 0) === 1) this.takeFilterPort(slot, new Float64Array(signal, 8, 1)[0]!, 'take');
  }

  /** The main thread takes a filter's port (let go at `since`, monotonic ms), and a replacement is scheduled. */
  private takeFilterPort(slot: Slot, since: number, phase: FilterHandover['phase']): void {
    const fb = slot.fallback;
    if (fb === undefined) return;
    slot.failing = null;
    slot.live = false;
    fb.listen((at) => this.noteHandover(slot, phase, since, at));
    this.scheduleRestart(slot);
  }

  /**
   * A filter's replacement has booted and loaded its data: told to take its port, it says it
   * waits (blocked on a shared signal); the main thread lets go of the port and wakes it, and it
   * listens at once. The main thread's accepted connections are answered and closed. If the
   * thread cannot listen, the main thread takes the port back.
   */
  private async handBack(slot: Slot): Promise<void> {
    const fb = slot.fallback!;
    const worker = slot.worker;
    if (worker === null) throw new Error(`filter thread ${slot.index} ended before it took its port back`);
    const signal = new SharedArrayBuffer(4);
    const waiting = await this.ask(slot, { type: 'take-port', signal }, `waiting:${slot.index}`, FILTER_GIVE_WAIT_MS);
    if (waiting === null || slot.worker !== worker) throw new Error(`filter thread ${slot.index} did not ask for its port`);
    const letGoAt = fb.yieldPort();
    const flag = new Int32Array(signal, 0, 1);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    // (Its `listening` is read by the event loop, after ask() has registered for it.)
    const m = await this.ask(slot, { type: 'listen' }, `listen:${slot.index}`, FILTER_GIVE_WAIT_MS);
    if (m !== null && m.type === 'listening') {
      slot.live = true;
      if (m.at !== undefined) this.noteHandover(slot, 'give', letGoAt, m.at);
      return;
    }
    if (this.listening) fb.listen();
    throw new Error(`filter thread ${slot.index} could not take its port back: ${m !== null && m.type === 'listen-failed' ? m.message : 'no answer'}`);
  }

  private noteHandover(slot: Slot, phase: FilterHandover['phase'], from: number, to: number): void {
    const filter = slot.filter?.name ?? '';
    const ms = to - from;
    this.filterHandovers.push({ filter, phase, from, to, ms });
    if (this.filterHandovers.length > 100) this.filterHandovers.shift();
    this.opts.onFilterHandover?.(filter, phase, ms);
  }

  /** What the main thread's fail-open listeners counted since the last call, as their threads' stats. */
  private reportFallbacks(): void {
    for (const s of this.slots) {
      const f = s.fallback?.take();
      if (f) this.opts.onCounts([], { ...emptyLookupStats(s.index), filter: f });
    }
  }

  /** While no thread is alive, the main thread keeps the port and answers 503. */
  private openFallback(onListening?: () => void): void {
    if (this.fallback !== null || this.port === 0) {
      onListening?.();
      return;
    }
    const app = uWS.App().any('/*', (res, req) => {
      const health = req.getUrl() === HEALTH_PATH;
      const head = req.getMethod() === 'head'; // the headers without the body (RFC 9110 9.3.2)
      if (!health) this.opts.onUnavailable?.();
      res.cork(() => {
        res.writeStatus(STATUS_TEXT[503]!);
        if (health || head) res.end(undefined, true);
        else res.writeHeader('Content-Type', 'application/json').end(errorJson(NO_THREAD), true);
      });
    });
    const fb: { app: uWS.TemplatedApp; socket: uWS.us_listen_socket | null } = { app, socket: null };
    this.fallback = fb;
    // The failed thread may not have let go of the port yet: try again until it has.
    const listen = () => {
      if (this.fallback !== fb) return;
      app.listen(this.opts.host, this.port, (ls) => {
        if (this.fallback === fb && ls) {
          fb.socket = ls;
          onListening?.();
        } else if (ls) uWS.us_listen_socket_close(ls);
        else setTimeout(listen, 50);
      });
    };
    listen();
  }

  private closeFallback(): void {
    const fb = this.fallback;
    if (fb === null) return;
    this.fallback = null;
    if (fb.socket) uWS.us_listen_socket_close(fb.socket);
    // Then closes kept-alive connections too (exists in v20.30, missing from its typings),
    // once the requests already on them are answered.
    setTimeout(() => (fb.app as unknown as { close(): void }).close(), LINGER_MS);
  }

  private onMessage(m: FromWorker, slot: Slot, worker: Worker): void {
    if (m.type === 'counts' || m.type === 'stopped') {
      this.opts.onTuples?.(m.announced);
      const imp = m.impressions;
      if (imp.announced.length > 0 || imp.rows.length > 0 || imp.firstSeen !== undefined || imp.badIps !== undefined) this.opts.onImpressions?.(imp);
      if (m.botIps.length > 0) this.opts.onBotIps?.(m.botIps);
      if (m.seen !== null) this.opts.onSeen?.(m.seen);
    }
    if (m.type === 'counts') this.opts.onCounts(m.rows, m.stats);
    else if (m.type === 'fatal') {
      this.opts.onWorkerError?.(m.index, new Error(`lookup thread ${m.index} failed: ${m.message}`));
      this.takeOver(m.index);
    } else if (m.type === 'released' && slot.failing === worker && this.listening) this.takeFilterPort(slot, m.at, 'take');
    const key =
      m.type === 'data-ok' || m.type === 'data-failed' ? `data:${m.id}:${m.index}` : m.type === 'policy-ok' ? `policy:${m.id}:${m.index}` : m.type === 'keys-ok' ? `keys:${m.id}:${m.index}` : m.type === 'filter-ok' ? `filter:${m.id}:${m.index}` : m.type === 'stopped' ? `stop:${m.index}` : m.type === 'gc-done' ? `gc:${m.index}` : m.type === 'listening' || m.type === 'listen-failed' ? `listen:${m.index}` : m.type === 'waiting' ? `waiting:${m.index}` : '';
    if (key) {
      const p = this.pending.get(key);
      if (p) {
        this.pending.delete(key);
        p.resolve(m);
      }
    }
  }

  private ask(slot: Slot, msg: ToWorker, key: string, timeoutMs: number): Promise<FromWorker | null> {
    return new Promise((resolve) => {
      if (slot.worker === null) return resolve(null);
      const entry = {
        resolve: (v: FromWorker) => {
          clearTimeout(timer);
          resolve(v);
        },
      };
      const timer = setTimeout(() => {
        // (Only this question's own entry: another may have taken the key since.)
        if (this.pending.get(key) === entry) this.pending.delete(key);
        resolve(null);
      }, timeoutMs);
      this.pending.set(key, entry);
      slot.worker.postMessage(msg);
    });
  }

  /**
   * Customers' policies changed: every thread swaps them in (buffers are shared, never
   * copied). Resolves once every running thread has them in force, so a lookup that starts
   * after it applies them; a thread that does not answer within POLICY_ACK_MS (stuck, or being
   * replaced: a new thread starts with every policy) is not waited for longer.
   */
  async pushPolicies(updates: PolicyUpdate[]): Promise<void> {
    for (const u of updates) this.policies.set(u.customerId, u);
    const id = ++this.policyPushes;
    await Promise.all(this.slots.map((s) => this.ask(s, { type: 'policy', id, updates }, `policy:${id}:${s.index}`, POLICY_ACK_MS)));
  }

  /**
   * A full garbage collection on every lookup thread (for tests and benchmarks that measure
   * memory: RSS after it says what is kept, not what is merely not collected yet). Resolves
   * to the threads' V8 heap in use after it (bytes, summed over the threads that answered).
   */
  async collectGarbage(): Promise<number> {
    const done = await Promise.all(this.slots.map((s) => this.ask(s, { type: 'gc' }, `gc:${s.index}`, 10_000)));
    let heap = 0;
    for (const m of done) if (m?.type === 'gc-done') heap += m.heapUsed;
    return heap;
  }

  /**
   * The live key set: every thread swaps it in. Resolves once every running thread has it in
   * force (a thread that does not answer within POLICY_ACK_MS is not waited for longer), so a
   * key rotation answered after it is a key every lookup thread takes.
   */
  async pushKeys(keys: LiveKey[], known = true): Promise<void> {
    this.keys = keys;
    this.keysKnown = known;
    const id = ++this.keyPushes;
    await Promise.all(this.slots.map((s) => this.ask(s, { type: 'keys', id, keys, known }, `keys:${id}:${s.index}`, POLICY_ACK_MS)));
  }

  /**
   * Sends data to every thread (first load or reload) as load number `id` (the data
   * generation); resolves with the failures (empty when all swapped). A thread started
   * later is given the last data every thread accepted.
   */
  async reload(bundle: DataBundle, id: number): Promise<string[]> {
    const live = this.slots.filter((s) => s.worker !== null);
    const posted = forThreads(bundle);
    const answers = await Promise.all(live.map((s) => this.ask(s, { type: 'data', id, bundle: posted }, `data:${id}:${s.index}`, 30_000)));
    const failures: string[] = [];
    answers.forEach((a, i) => {
      const index = live[i]!.index;
      if (a === null) failures.push(`lookup thread ${index} did not answer the reload`);
      else if (a.type === 'data-failed') failures.push(`lookup thread ${index}: ${a.message}`);
      else this.noteWarmUp(live[i]!, a);
    });
    if (failures.length === 0) this.data = { bundle, id };
    return failures;
  }

  /** A thread's first data answer carries its warm-up. */
  private noteWarmUp(slot: Slot, a: FromWorker): void {
    if (a.type !== 'data-ok' || a.warmUp === undefined) return;
    slot.warmUpMs = Math.max(1, Math.round(a.warmUp.ms));
    if (a.warmUp.error !== undefined) this.opts.onWarmUpFailed?.(slot.index, a.warmUp.error);
  }

  // Filters changed by a reload (src/server/filter-reload.ts decides what changes, in which order).

  /** The thread (slot index) running filter `name`, not counting one a reload removed. */
  filterIndex(name: string): number | undefined {
    return this.slots.find((s) => s.filter?.name === name && s.retired !== true)?.index;
  }

  /**
   * Starts a thread for a new filter, given the keys, policies and data every thread has;
   * resolves with its slot and bound port once it serves. When it cannot listen: `supervised`,
   * it is retried as a failed thread is (backoff); else it is given up, and this throws.
   */
  async addFilter(filter: FilterSettings, supervised = false): Promise<{ index: number; port: number }> {
    const slot: Slot = { index: this.slots.length, worker: null, live: false, startedAt: 0, failures: 0, restartTimer: null, warmUpMs: 0, filter };
    this.slots.push(slot);
    let port: number;
    try {
      port = slot.filterPort = await this.launch(slot, filter.port);
      this.holdFallback(slot);
    } catch (e) {
      if (!supervised) {
        // Before its exit is seen: a slot without its worker is not restarted.
        slot.retired = true;
        slot.worker = null;
        slot.live = false;
        if (slot.restartTimer) clearTimeout(slot.restartTimer);
        slot.restartTimer = null;
      }
      throw e;
    }
    if (this.data) {
      const a = await this.ask(slot, { type: 'data', id: this.data.id, bundle: forThreads(this.data.bundle) }, `data:${this.data.id}:${slot.index}`, 30_000);
      if (a === null || a.type !== 'data-ok') {
        if (!supervised) await this.retireFilter(slot.index, 0);
        throw new Error(`filter ${filter.name}: its thread could not load the data: ${a && a.type === 'data-failed' ? a.message : 'no answer'}`);
      }
      this.noteWarmUp(slot, a);
    }
    return { index: slot.index, port };
  }

  /**
   * A running filter's new settings (same name, same port), in force on its thread when this
   * resolves true (false: the thread did not answer within POLICY_ACK_MS; its replacement, if
   * it is being replaced, starts with them).
   */
  async updateFilter(index: number, filter: FilterSettings): Promise<boolean> {
    const slot = this.slots[index];
    if (!slot || slot.filter === undefined || slot.retired) return false;
    slot.filter = filter;
    slot.fallback?.update(filter);
    const id = ++this.filterPushes;
    const a = await this.ask(slot, { type: 'filter', id, settings: { ...filter, port: slot.filterPort ?? filter.port } }, `filter:${id}:${index}`, POLICY_ACK_MS);
    return a !== null;
  }

  /**
   * Stops a filter's thread for good: it stops listening at once (its port is free when this
   * resolves), answers the requests under way, then ends; its last counts are delivered. It is
   * given `drainMs` (its timeout) and 5 s more to end before it is terminated.
   */
  async retireFilter(index: number, drainMs: number): Promise<void> {
    const slot = this.slots[index];
    if (!slot || slot.filter === undefined || slot.retired) return;
    slot.retired = true;
    if (slot.restartTimer) clearTimeout(slot.restartTimer);
    slot.restartTimer = null;
    // Its fail-open listener (holding the port if the thread is being replaced) goes with it.
    const fallback = slot.fallback;
    delete slot.fallback;
    slot.failing = null;
    if (fallback !== undefined) await fallback.close();
    const worker = slot.worker;
    // Detached first: its exit (or a failure while it drains) is not a thread to replace.
    slot.worker = null;
    slot.live = false;
    if (worker === null) return;
    if (worker.threadId === -1) return;
    const exited = new Promise<void>((r) => worker.once('exit', () => r()));
    const a = await this.ask({ ...slot, worker }, { type: 'stop', retire: true }, `stop:${index}`, 5000);
    if (a && a.type === 'stopped') this.opts.onCounts(a.rows, a.stats);
    const late = setTimeout(() => {
      this.opts.onWorkerError?.(index, new Error(`filter ${slot.filter?.name} (thread ${index}) still had requests under way ${drainMs + 5000} ms after it was removed; terminating it`));
      void worker.terminate();
    }, drainMs + 5000);
    void exited.then(() => {
      clearTimeout(late);
      this.opts.onRetired?.(index);
    });
  }

  /**
   * A filter's fail-open listener for its port while its thread is replaced (made ready, not
   * listening), and the timer that reports what those listeners count as their threads report.
   */
  private holdFallback(slot: Slot): void {
    slot.fallback = new FilterFallback({ ...slot.filter!, port: slot.filterPort! }, this.opts.host, this.opts.memory.filterHeldBytes, (message) => this.opts.onWorkerError?.(slot.index, new Error(message)));
    if (this.fallbackTimer === null) {
      this.fallbackTimer = setInterval(() => this.reportFallbacks(), this.opts.countsIntervalMs ?? 1000);
      this.fallbackTimer.unref();
    }
  }

  /**
   * Fault injection for tests: thread `index` fails as an uncaught bug would; `exit`: a filter's
   * thread ends at once without a word (a lookup thread cannot: its uWS sockets would abort the process).
   */
  crashThread(index: number, exit = false): void {
    const slot = this.slots[index];
    if (exit && slot?.filter === undefined) throw new Error('only a filter\'s thread can be ended without a word');
    slot?.worker?.postMessage({ type: 'crash', ...(exit ? { exit } : {}) } satisfies ToWorker);
  }

  /**
   * Closes the listen sockets and connections, collects the last counts, then waits for
   * each thread to exit by itself (terminating a thread that still holds uWS sockets would
   * abort the whole process; terminate is only the fallback).
   */
  async stop(timeoutMs = 5000, exitWaitMs = 5000): Promise<void> {
    this.listening = false;
    this.closeFallback();
    // Filters' fail-open listeners: their requests under way answered, then closed.
    const fallbacks = this.slots.flatMap((s) => (s.fallback ? [s.fallback.close()] : []));
    if (this.fallbackTimer !== null) clearInterval(this.fallbackTimer);
    for (const s of this.slots) if (s.restartTimer) clearTimeout(s.restartTimer);
    const running = this.slots.filter((s): s is Slot & { worker: Worker } => s.worker !== null);
    const exits = running.map((s) => new Promise<void>((r) => {
      if (s.worker.threadId === -1) r();
      else s.worker.once('exit', () => r());
    }));
    // Replaced filter threads still closing their connections end by themselves (bounded); not waited past exitWaitMs.
    const leaving = [...this.leaving].map((w) => new Promise<void>((r) => {
      const timer = setTimeout(() => void w.terminate().finally(r), exitWaitMs);
      w.once('exit', () => {
        clearTimeout(timer);
        r();
      });
      if (w.threadId === -1) r();
    }));
    // (A thread ending meanwhile, a failing filter's thread letting its connections go, never answers.)
    const answers = await Promise.all(running.map((s, i) => Promise.race([this.ask(s, { type: 'stop' }, `stop:${s.index}`, timeoutMs), exits[i]!.then(() => null)])));
    for (const a of answers) if (a && a.type === 'stopped') this.opts.onCounts(a.rows, a.stats);
    await Promise.all(
      exits.map((exited, i) => {
        const s = running[i]!;
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((r) => {
          timer = setTimeout(() => {
            this.opts.onWorkerError?.(s.index, new Error(`lookup thread ${s.index} still had open connections after ${exitWaitMs} ms; terminating it`));
            void s.worker.terminate();
            r();
          }, exitWaitMs);
        });
        return Promise.race([exited, late]).finally(() => clearTimeout(timer));
      }),
    );
    await Promise.all([...fallbacks, ...leaving]);
    this.reportFallbacks();
    this.slots = [];
  }
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Resolves when nothing listens on host:port. The probe binds without SO_REUSEPORT, so a
 * listener that set it (another uWebSockets.js process) makes the bind fail too.
 */
function portIsFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') {
        reject(new ListenError(`the pre-bid port ${host}:${port} is already in use (another ivtd, or another program): stop it, or choose another port with --prebid-port`));
      } else reject(new ListenError(`pre-bid lookups: cannot listen on ${host}:${port}: ${e.message}${listenHint(e.code)}`));
    });
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve()));
  });
}
