// The lookups' tuple dictionary (tuple-dictionary.ts) on disk, for as long as a beacon can
// still name one of its tuples: the main thread appends each tuple the lookup threads
// announce (hash id, customer, hour, values) to `reporting_tuple_ids` (migration 93) every
// flush interval and at stop, and deletes the hours older than --imp-ttl. After a restart
// (the tuple seed comes from lid.key, so a tuple hashes the same in every run) the
// impression dictionary asks here for the tuples its impressions name and it does not know
// (impression-dictionary.ts), so a beacon of a lid the previous run answered is counted
// under its lookup's dimensions rather than `__overflow__`.
//
// Main thread only, everything asynchronous and off the lookup path. Bounded: at most
// `maxPending` tuples wait to be written (src/server/serve.ts sizes it from the pending-counts
// share; an entry is a small record pointing at the dictionary's own strings; more are not
// kept: their impressions would be `__overflow__` after a restart, nothing else), at most
// WANT_MAX ids are looked up per pass and `maxPending` per hour, and tuples found are kept by
// the impression dictionary (`restoredMax`, as many) only while their hour can be counted. A failed
// write (a full disk) keeps the tuples for the next pass, is logged once until a write works
// again, and never touches any count.
import { timestampValue } from '@duckdb/node-api';
import { log } from '../base/log.ts';
import { inTransaction, isInvalidatedError, type Queryable, type Store } from '../store/db.ts';
import { DAY_MS, hourStart } from '../base/time.ts';
import { hashId } from '../memory/hash.ts';
import type { NewTuple } from '../counts/tuple-dictionary.ts';
import type { CountRow } from '../counts/tuple.ts';
import { joinDims } from '../counts/tuple.ts';

/** Tuples waiting to be written, at most, when no memory plan says (each ~64 bytes: the strings are the dictionary's). */
export const PENDING_MAX = 200_000;
/** Rows per insert statement. */
const CHUNK = 5_000;
/** Tuple ids looked up per pass, at most. */
export const WANT_MAX = 10_000;

/** How long an id asked for counts as being looked up (a store that hangs must not hold impressions back). */
const LOOKUP_WAIT_MS = 30_000;
/** Between deletions of the hours no beacon can name any more. */
const PRUNE_EVERY_MS = 10 * 60_000;

/** A tuple's values as the archive hands them back. */
export interface ArchivedTuple {
  customerId: string;
  hour: number;
  /** joinDims of the values. */
  dims: string;
}

interface Pending {
  id: number;
  customerId: string;
  hour: number;
  dims: string;
}

export interface TupleArchiveOptions {
  /** --imp-ttl in ms; 0 (off): tuples are kept a day. */
  impTtlMs: number;
  /** Milliseconds between writes (config.flushInterval × 1000). */
  flushIntervalMs: number;
  /**
   * Tuples waiting to be written at most, and ids looked up per hour at most (past it,
   * unknown tuples are not looked up: `__overflow__`); default PENDING_MAX. src/server/serve.ts
   * sizes it from the memory plan's pending-counts share.
   */
  maxPending?: number;
  now?: () => number;
}

export class TupleArchive {
  private pending: Pending[] = [];
  /** Ids asked for and not yet looked up. */
  private wanted = new Set<number>();
  /** Ids being looked up or asked for: since when. */
  private readonly inFlight = new Map<number, number>();
  /** Ids looked up already, found or not (cleared each hour): not asked for again. */
  private asked = new Set<number>();
  private askedHour = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private lookupScheduled = false;
  private failing = false;
  private lastPrune = 0;
  private closed = false;
  private conn: (Queryable & { close(): void; generation: number }) | null = null;
  private readonly now: () => number;
  private readonly maxPending: number;
  /** Called with what a lookup found (the impression dictionary's restore). */
  onFound: ((found: Map<number, ArchivedTuple>) => void) | null = null;
  readonly stats = { written: 0, dropped: 0, failedWrites: 0, found: 0, lookedUp: 0 };

  constructor(
    private readonly store: Store,
    private readonly opts: TupleArchiveOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.maxPending = opts.maxPending ?? PENDING_MAX;
  }

  /** Starts the write timer and a first pruning pass. */
  start(): void {
    this.timer = setInterval(() => void this.flush().catch(() => undefined), this.opts.flushIntervalMs);
    this.timer.unref();
    void this.serial(() => this.prune()).catch(() => undefined);
  }

  private keepFrom(now: number): number {
    return hourStart(now - (this.opts.impTtlMs > 0 ? this.opts.impTtlMs : DAY_MS));
  }

  /** Tuples the lookup threads announced (main thread; no I/O here). */
  record(list: readonly NewTuple[]): void {
    for (const t of list) this.keep(hashId(t.hi, t.lo), t.customerId, t.hour, t.dims);
  }

  /** Rows a thread counted in its own map (its tuple never reached the dictionary). */
  recordRows(rows: readonly CountRow[]): void {
    for (const r of rows) if (r.id !== undefined) this.keep(r.id, r.customerId, r.hour, joinDims(r.dims));
  }

  private keep(id: number, customerId: string, hour: number, dims: string): void {
    if (this.closed) return;
    if (this.pending.length >= this.maxPending) {
      if (this.stats.dropped++ === 0) log.warn({ max: this.maxPending }, 'reporting: too many reporting tuples wait to be written to reporting_tuple_ids; impressions of the ones left out count as __overflow__ after a restart');
      return;
    }
    this.pending.push({ id, customerId, hour, dims });
  }

  /**
   * Asks for a tuple the impressions name and nobody in memory knows; looked up soon, on
   * the main thread. True when it is (or was just) being looked up: the caller waits.
   */
  want(id: number): boolean {
    const now = this.now();
    const h = hourStart(now);
    if (h !== this.askedHour) {
      this.asked = new Set();
      this.askedHour = h;
    }
    if (this.asked.has(id) || this.asked.size >= this.maxPending) return false;
    const since = this.inFlight.get(id);
    if (since !== undefined) return now - since < LOOKUP_WAIT_MS;
    if (this.closed || this.wanted.size >= WANT_MAX) return false;
    this.wanted.add(id);
    this.inFlight.set(id, now);
    if (!this.lookupScheduled) {
      this.lookupScheduled = true;
      setImmediate(() => {
        this.lookupScheduled = false;
        void this.serial(() => this.lookUp()).catch(() => undefined);
      });
    }
    return true;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async connection(): Promise<Queryable> {
    if (this.conn && this.conn.generation === this.store.generation) return this.conn;
    const fresh = await this.store.connection();
    try {
      this.conn?.close();
    } catch {
      // a connection of an instance already gone
    }
    this.conn = fresh;
    return fresh;
  }

  private async failed(e: unknown): Promise<void> {
    if (isInvalidatedError(e) && this.conn) await this.store.reopen(this.conn.generation).catch(() => undefined);
  }

  private async lookUp(): Promise<void> {
    const ids = [...this.wanted];
    this.wanted = new Set();
    if (ids.length === 0) return;
    const found = new Map<number, ArchivedTuple>();
    try {
      const conn = await this.connection();
      const rows = await conn.all<{ tuple_id: bigint; customer_id: string; hour: bigint; dims: string }>(
        `SELECT tuple_id, customer_id, epoch_ms(period_start) AS hour, dims FROM reporting_tuple_ids
         WHERE tuple_id IN (SELECT unnest(from_json($1::JSON, '["BIGINT"]')))`,
        [JSON.stringify(ids)],
      );
      for (const r of rows) found.set(Number(r.tuple_id), { customerId: r.customer_id, hour: Number(r.hour), dims: r.dims });
      this.stats.lookedUp += ids.length;
      this.stats.found += found.size;
    } catch (e) {
      log.warn({ err: (e as Error).message, tuples: ids.length }, 'reporting: could not read reporting_tuple_ids; those impressions count as __overflow__');
      await this.failed(e);
    } finally {
      for (const id of ids) {
        this.inFlight.delete(id);
        this.asked.add(id);
      }
    }
    if (found.size > 0) this.onFound?.(found);
  }

  /** Writes the tuples announced since the last pass (and prunes now and then). */
  flush(): Promise<void> {
    return this.serial(async () => {
      const now = this.now();
      const from = this.keepFrom(now);
      const rows = this.pending.filter((p) => p.hour >= from);
      this.pending = [];
      let done = 0;
      try {
        if (rows.length > 0) {
          const conn = await this.connection();
          for (; done < rows.length; done += CHUNK) {
            const chunk = rows.slice(done, done + CHUNK);
            const cols = { i: chunk.map((r) => r.id), c: chunk.map((r) => r.customerId), h: chunk.map((r) => r.hour), d: chunk.map((r) => r.dims) };
            await inTransaction(conn, () =>
              conn.run(
                `INSERT INTO reporting_tuple_ids (tuple_id, customer_id, period_start, dims)
                 SELECT unnest(v.i), unnest(v.c), make_timestamp(unnest(v.h) * 1000), unnest(v.d)
                 FROM (SELECT from_json($1::JSON, '{"i":["BIGINT"],"c":["VARCHAR"],"h":["BIGINT"],"d":["VARCHAR"]}') AS v)`,
                [JSON.stringify(cols)],
              ),
            );
            this.stats.written += chunk.length;
          }
        }
        if (now - this.lastPrune >= PRUNE_EVERY_MS) await this.prune();
        if (this.failing) log.info({}, 'reporting: reporting_tuple_ids takes writes again');
        this.failing = false;
      } catch (e) {
        // Kept for the next pass, within the bound; the newest go first when it is reached.
        const rest = rows.slice(done);
        const room = Math.max(0, this.maxPending - this.pending.length);
        if (rest.length > room) this.stats.dropped += rest.length - room;
        this.pending = rest.slice(0, room).concat(this.pending);
        this.stats.failedWrites++;
        if (!this.failing) log.error({ err: (e as Error).message, tuples: rest.length }, 'reporting: could not write reporting_tuple_ids (kept and retried; no count is lost, but impressions of these tuples count as __overflow__ after a restart until it works)');
        this.failing = true;
        await this.failed(e);
        throw e;
      }
    });
  }

  /** Deletes the hours no beacon can name any more. */
  private async prune(): Promise<void> {
    const conn = await this.connection();
    this.lastPrune = this.now();
    await conn.run('DELETE FROM reporting_tuple_ids WHERE period_start < $1', [timestampValue(BigInt(this.keepFrom(this.lastPrune)) * 1000n)]);
  }

  /** Stops the timer and writes what is pending (stop: after the threads' last reports, before the store closes). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.flush().catch(() => undefined);
    await this.chain;
    try {
      this.conn?.close();
    } catch {
      // gone with its instance
    }
    this.conn = null;
  }
}
