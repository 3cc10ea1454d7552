// A filter's port while its thread is being replaced (docs/filter.md, "When something fails"):
// the main thread listens there with the filter's own code (src/prebid/filter/proxy.ts) and no
// engine, so every request goes on to the upstream as is (no verdict header), counted as
// fail-open `not_ready` with the usual outcomes. Node 20's net has no SO_REUSEPORT: the port is
// held by one listener at a time, handed over by src/server/lookup-threads.ts.
import { Filter, listenFailure, monotonicMs, RETIRE_GRACE_MS } from '../prebid/filter/proxy.ts';
import type { ClientServer } from '../prebid/filter/client-http.ts';
import type { FilterStats } from '../prebid/filter/filter-stats.ts';
import type { FilterSettings } from '../base/filter-settings.ts';

/** How soon a listen that found the port still held is tried again (the thread is letting go)... */
const RETRY_MS = 2;
/** ...for this long; then (another program holds it) every RETRY_SLOW_MS. */
const RETRY_FAST_FOR_MS = 1000;
const RETRY_SLOW_MS = 250;

export class FilterFallback {
  /** Made on the first hand-over, kept (its upstream connections and its figures) until stop. */
  private filter: Filter | null = null;
  /** The listener holding the port, or about to. */
  private current: ClientServer | null = null;
  /** `current` once told to take the port. */
  private taking: ClientServer | null = null;
  /** Listeners that let go of the port, still answering the connections they accepted. */
  private readonly retiring = new Set<ClientServer>();
  private closed = false;
  /** Listening now. */
  listening = false;

  /** `settings.port`: the port its thread bound (never 0). */
  constructor(
    private settings: FilterSettings,
    private readonly host: string,
    /** The filter's cap on the bytes it holds (the memory plan's, a filter's; 0: the budget's per-filter figure). */
    private readonly heldCapBytes: number,
    private readonly onError: (message: string) => void,
  ) {}

  /** A reload's new settings of the filter (its port unchanged): in force here too. */
  update(s: FilterSettings): void {
    this.settings = { ...s, port: this.settings.port };
    this.filter?.update(this.settings);
  }

  /** A listener made ready (not listening): the hand-over then only has to bind. */
  prepare(): void {
    if (this.current !== null || this.closed) return;
    this.filter ??= new Filter(this.settings, { engine: () => null, noteError: this.onError, heldCapBytes: this.heldCapBytes });
    const cs = this.filter.server();
    this.current = cs;
    let lastError = '';
    let firstAt = 0;
    cs.server.on('error', (e: NodeJS.ErrnoException) => {
      if (this.current !== cs) return;
      // Held still (the thread is letting go), or taken by another program: tried again until it
      // is free or the thread is back; soon at first, then every RETRY_SLOW_MS (said once).
      const now = monotonicMs();
      if (firstAt === 0) firstAt = now;
      const slow = e.code !== 'EADDRINUSE' || now - firstAt > RETRY_FAST_FOR_MS;
      const message = listenFailure(this.settings, this.host, this.settings.port, e);
      if (slow && message !== lastError) this.onError(message);
      if (slow) lastError = message;
      setTimeout(() => this.attempt(cs), slow ? RETRY_SLOW_MS : RETRY_MS);
    });
  }

  /** Takes the port now (tries again until it is free); `onListening` with the monotonic ms it listened. */
  listen(onListening?: (at: number) => void): void {
    if (this.closed) return;
    this.prepare();
    const cs = this.current!;
    if (this.taking === cs) return; // listening, or trying to
    this.taking = cs;
    cs.server.once('listening', () => {
      if (this.current !== cs) {
        cs.server.close(); // let go before it bound: not its port any more
        return;
      }
      this.listening = true;
      onListening?.(monotonicMs());
    });
    this.attempt(cs);
  }

  private attempt(cs: ClientServer): void {
    if (this.current === cs && !cs.server.listening) cs.server.listen({ host: this.host, port: this.settings.port });
  }

  /**
   * Lets go of the port (the replacement thread takes it at once); the connections accepted
   * meanwhile are answered and each closed after its next answer. Returns the monotonic ms.
   */
  yieldPort(): number {
    const at = monotonicMs(); // before the close: a gap measured from it is never less than the true one
    const cs = this.current;
    this.current = null;
    this.taking = null;
    this.listening = false;
    if (cs !== null) {
      this.retiring.add(cs);
      cs.retire(RETIRE_GRACE_MS, () => this.retiring.delete(cs));
    }
    return at;
  }

  /** The figures since the last call, or null when nothing was counted. */
  take(): FilterStats | null {
    return this.filter !== null && this.filter.counted ? this.filter.take() : null;
  }

  /** Shutdown: stops listening; requests under way get their answers within the filter's timeout, then every connection closes. */
  close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    const all = [...this.retiring];
    if (this.current !== null) all.push(this.current);
    this.current = null;
    this.taking = null;
    const filter = this.filter;
    if (filter === null) return Promise.resolve();
    for (const cs of all) cs.close(false);
    return new Promise((resolve) => {
      setTimeout(() => {
        for (const cs of all) cs.close(true);
        this.retiring.clear();
        filter.destroy();
        resolve();
      }, all.some((cs) => cs.connections > 0) ? this.settings.timeoutMs + 50 : 0);
    });
  }
}
