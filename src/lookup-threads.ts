// The main thread's side of the pre-bid listener: starts the lookup threads, pushes keys
// and data to them, collects their count deltas, and stops them in order. What runs inside
// the threads is in src/prebid.
import { createServer, type AddressInfo } from 'node:net';
import type { Worker } from 'node:worker_threads';
import type { DataBundle } from './data/bundle.ts';
import type { LookupMemory } from './memory/budget.ts';
import type { CountRow } from './reporting/tuple.ts';
import type { LiveKey } from './prebid/keys.ts';
import type { FromWorker, LookupStats, LookupWorkerInit, ToWorker } from './prebid/messages.ts';
import { startWorker } from './runtime/worker-entry.ts';

export interface LookupServerOptions {
  host: string;
  port: number;
  threads: number;
  /** The shared tables every thread opens (allocated once by the main thread). */
  memory: LookupMemory;
  countsIntervalMs?: number;
  onCounts: (rows: CountRow[], stats: LookupStats) => void;
  onWorkerError?: (index: number, err: Error) => void;
}

interface Slot {
  worker: Worker;
  index: number;
}

export class LookupServer {
  private slots: Slot[] = [];
  private pending = new Map<string, { resolve: (v: FromWorker) => void }>();
  port = 0;
  listening = false;

  constructor(private readonly opts: LookupServerOptions) {}

  /**
   * Starts every thread; resolves with the bound port once all listen. Until `reload`
   * hands them data, the threads answer lookups and /health-check with 503.
   */
  async start(keys: LiveKey[]): Promise<number> {
    let port = this.opts.port;
    // uSockets shares a port across threads only when it is given explicitly: with several
    // threads, an ephemeral port (0) is chosen here first.
    if (port === 0 && this.opts.threads > 1) port = await freePort(this.opts.host);
    try {
      for (let i = 0; i < this.opts.threads; i++) port = await this.spawn(i, port, keys);
    } catch (e) {
      await this.stop().catch(() => undefined);
      throw e;
    }
    this.port = port;
    this.listening = true;
    return port;
  }

  private spawn(index: number, port: number, keys: LiveKey[]): Promise<number> {
    const init: LookupWorkerInit = {
      index,
      host: this.opts.host,
      port,
      keys,
      memory: this.opts.memory,
      countsIntervalMs: this.opts.countsIntervalMs ?? 1000,
    };
    // The same way from a checkout and inside the binary (src/runtime/worker-entry.ts).
    const worker = startWorker('lookup', init);
    const slot: Slot = { worker, index };
    this.slots.push(slot);
    return new Promise((resolve, reject) => {
      const onFirst = (m: FromWorker) => {
        if (m.type === 'listening') resolve(m.port);
        else if (m.type === 'listen-failed') reject(new Error(`lookup thread ${index}: ${m.message}`));
        else return;
        worker.off('message', onFirst);
      };
      worker.on('message', onFirst);
      worker.on('message', (m: FromWorker) => this.onMessage(m));
      worker.once('error', (e) => {
        reject(e);
        this.opts.onWorkerError?.(index, e);
      });
      worker.once('exit', (code) => {
        if (this.listening && code !== 0) this.opts.onWorkerError?.(index, new Error(`lookup thread ${index} exited with code ${code}`));
      });
    });
  }

  private onMessage(m: FromWorker): void {
    if (m.type === 'counts') this.opts.onCounts(m.rows, m.stats);
    const key = m.type === 'data-ok' || m.type === 'data-failed' ? `data:${m.id}:${m.index}` : m.type === 'stopped' ? `stop:${m.index}` : '';
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
      const timer = setTimeout(() => {
        this.pending.delete(key);
        resolve(null);
      }, timeoutMs);
      this.pending.set(key, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
      });
      slot.worker.postMessage(msg);
    });
  }

  pushKeys(keys: LiveKey[]): void {
    for (const s of this.slots) s.worker.postMessage({ type: 'keys', keys } satisfies ToWorker);
  }

  /**
   * Sends data to every thread (first load or reload) as load number `id` (the data
   * generation); resolves with the failures (empty when all swapped).
   */
  async reload(bundle: DataBundle, id: number): Promise<string[]> {
    const answers = await Promise.all(
      this.slots.map((s) => this.ask(s, { type: 'data', id, bundle }, `data:${id}:${s.index}`, 30_000)),
    );
    const failures: string[] = [];
    answers.forEach((a, i) => {
      if (a === null) failures.push(`lookup thread ${i} did not answer the reload`);
      else if (a.type === 'data-failed') failures.push(`lookup thread ${i}: ${a.message}`);
    });
    return failures;
  }

  /**
   * Closes the listen sockets and connections, collects the last counts, then waits for
   * each thread to exit by itself (terminating a thread that still holds uWS sockets would
   * abort the whole process; terminate is only the fallback).
   */
  async stop(timeoutMs = 5000, exitWaitMs = 5000): Promise<void> {
    this.listening = false;
    const exits = this.slots.map((s) => new Promise<void>((r) => {
      if (s.worker.threadId === -1) r();
      else s.worker.once('exit', () => r());
    }));
    const answers = await Promise.all(this.slots.map((s) => this.ask(s, { type: 'stop' }, `stop:${s.index}`, timeoutMs)));
    for (const a of answers) if (a && a.type === 'stopped') this.opts.onCounts(a.rows, a.stats);
    await Promise.all(
      exits.map((exited, i) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((r) => {
          timer = setTimeout(() => {
            this.opts.onWorkerError?.(i, new Error(`lookup thread ${i} still had open connections after ${exitWaitMs} ms; terminating it`));
            void this.slots[i]?.worker.terminate();
            r();
          }, exitWaitMs);
        });
        return Promise.race([exited, late]).finally(() => clearTimeout(timer));
      }),
    );
    this.slots = [];
  }

  get threads(): number {
    return this.slots.length;
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
