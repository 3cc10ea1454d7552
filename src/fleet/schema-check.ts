// The ClickHouse schema, checked (and created or migrated) in the background until it works:
// the start waits for it only briefly, so an unreachable or hanging ClickHouse never holds
// up lookups; rollups wait in the spool until it is ready.
import { log } from '../base/log.ts';
import type { ClickHouse } from './clickhouse.ts';
import { migrateClickHouse } from './schema.ts';

/** Seconds between schema attempts while ClickHouse is unreachable at start. */
const MIGRATE_RETRY_MS = 5000;

export class SchemaCheck {
  /** True once the schema was checked in this run. */
  ready = false;
  /** Settles when the check succeeded or was closed. */
  readonly done: Promise<void>;
  private closed = false;
  private wake: (() => void) | null = null;
  private warned = '';

  constructor(
    private readonly ch: ClickHouse,
    private readonly target: { display: string; database: string },
  ) {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      try {
        await migrateClickHouse(this.ch);
        this.ready = true;
        log.info({ clickhouse: this.target.display, database: this.target.database }, 'fleet: ClickHouse schema ready');
        return;
      } catch (e) {
        const msg = (e as Error).message;
        if (msg !== this.warned) log.warn({ err: msg, retryInSeconds: MIGRATE_RETRY_MS / 1000 }, 'fleet: ClickHouse not ready; serving on, rollups wait in the spool');
        this.warned = msg;
        // Unref'd once serving (the listeners keep Node alive); close() cuts it short.
        await new Promise<void>((r) => {
          const t = setTimeout(r, MIGRATE_RETRY_MS);
          t.unref();
          this.wake = () => {
            clearTimeout(t);
            r();
          };
        });
        this.wake = null;
      }
    }
  }

  /** Stops retrying (the attempt under way, if any, ends with the connection). */
  close(): void {
    this.closed = true;
    this.wake?.();
  }
}
