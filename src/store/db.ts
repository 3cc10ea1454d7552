// The embedded DuckDB store: one file in the data dir, versioned migrations, async
// queries that run off the JS thread. Only the main thread opens it.
//
// A disk that fills up must not wedge it for good: DuckDB's temp folder is set here, with
// a limit of our own (left alone, DuckDB fixes it at 90 % of the disk space free at the first
// spill, for the life of the instance: 270 KiB after one spill on a nearly full disk), and a
// fatal error (DuckDB invalidates the instance, e.g. when a checkpoint cannot be written)
// reopens the instance, so the store works again once space returns.
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { mkdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { log } from '../base/log.ts';
import { MIGRATIONS } from './migrations.ts';

export type Params = DuckDBValue[] | Record<string, DuckDBValue>;
export type Row = Record<string, unknown>;

export const DB_FILE = 'ivtd.duckdb';
/** DuckDB's temp folder (spills of large writes and queries), in the data dir. */
export const TEMP_DIR = 'ivtd.duckdb.tmp';

const MiB = 1 << 20;
/** The temp folder's limit: a quarter of the data dir's file system, within these bounds. */
export const TEMP_LIMIT_MIN = 256 * MiB;
export const TEMP_LIMIT_MAX = 16 * 1024 * MiB;

/**
 * max_temp_directory_size for a data dir: a quarter of its file system's size (its size,
 * not its free space, so a passing full disk cannot shrink it), at least TEMP_LIMIT_MIN and
 * at most TEMP_LIMIT_MAX. Rounded down to whole MiB.
 */
export function tempLimitBytes(dataDir: string): number {
  let quarter = TEMP_LIMIT_MIN;
  try {
    const fs = statfsSync(dataDir);
    quarter = Math.floor((fs.blocks * fs.bsize) / 4);
  } catch {
    // No statfs (an exotic file system): the lower bound.
  }
  const bytes = Math.min(TEMP_LIMIT_MAX, Math.max(TEMP_LIMIT_MIN, quarter));
  return Math.floor(bytes / MiB) * MiB;
}

/** True for the error DuckDB gives once an instance is invalidated (every later query fails). */
export function isInvalidatedError(e: unknown): boolean {
  return e instanceof Error && /^FATAL Error|database has been invalidated/i.test(e.message);
}

/**
 * DuckDB's error when a statement's memory would pass its memory_limit. It should spill to
 * the temp directory instead, and at some limits its hash aggregate does not
 * (duckdb/duckdb#25318): callers with large GROUP BYs redo them in hash parts (HASH_PARTS).
 */
export function isOutOfMemory(e: unknown): boolean {
  return e instanceof Error && e.message.includes('Out of Memory Error');
}

/** Hash parts a large GROUP BY is redone in after isOutOfMemory(), tried in turn. */
export const HASH_PARTS = [16, 128] as const;

/**
 * `run(1)` (the statement whole); past DuckDB's memory limit `run(parts)` for each of
 * HASH_PARTS in turn, then `inParts(parts, value)` (to log it) for the one that did.
 * Throws any other error at once, and the last out-of-memory error when no split fits.
 */
export async function withHashParts<T>(run: (parts: number) => Promise<T>, inParts: (parts: number, value: T) => Promise<void>): Promise<T> {
  let last: unknown;
  for (const parts of [1, ...HASH_PARTS]) {
    try {
      const value = await run(parts);
      if (parts > 1) await inParts(parts, value);
      return value;
    } catch (e) {
      if (!isOutOfMemory(e)) throw e;
      last = e;
    }
  }
  throw last;
}

/** DuckDB's memory_limit as it says it ("45.7 MiB"), for messages. */
export async function memoryLimit(q: Queryable): Promise<string> {
  const r = await q.one<{ m: string }>("SELECT current_setting('memory_limit') AS m").catch(() => undefined);
  return r?.m ?? 'memory_limit';
}

function sqlString(v: string): string {
  return `'${v.replaceAll("'", "''")}'`;
}

export class StoreLockedError extends Error {}

/** A TIMESTAMP column as read by Queryable (a Date), as ISO text. */
export function isoTime(value: unknown): string {
  return (value as Date).toISOString();
}

/** A query runner: the store itself, or one transaction of it. */
export interface Queryable {
  run(sql: string, params?: Params): Promise<void>;
  /** Rows as plain JS objects (BIGINT → bigint, TIMESTAMP → Date, DATE → DuckDBDateValue via JS conversion). */
  all<T extends Row = Row>(sql: string, params?: Params): Promise<T[]>;
  one<T extends Row = Row>(sql: string, params?: Params): Promise<T | undefined>;
}

/** Runs fn inside BEGIN/COMMIT on `q`'s connection; rolls back and rethrows if it throws. */
export async function inTransaction<T>(q: Queryable, fn: () => Promise<T>): Promise<T> {
  await q.run('BEGIN TRANSACTION');
  try {
    const out = await fn();
    await q.run('COMMIT');
    return out;
  } catch (e) {
    await q.run('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

class ConnectionRunner implements Queryable {
  constructor(protected conn: DuckDBConnection) {}
  async run(sql: string, params?: Params): Promise<void> {
    await this.conn.run(sql, params);
  }
  async all<T extends Row = Row>(sql: string, params?: Params): Promise<T[]> {
    const reader = await this.conn.runAndReadAll(sql, params);
    return reader.getRowObjectsJS() as T[];
  }
  async one<T extends Row = Row>(sql: string, params?: Params): Promise<T | undefined> {
    return (await this.all<T>(sql, params))[0];
  }
}

export class Store extends ConnectionRunner {
  private closed = false;
  /** Queries and transactions under way on this store (separate connection() ones excepted). */
  private inFlight = 0;
  /** Set by a close() that waits for the queries under way; called once the last has ended. */
  private idle: (() => void) | null = null;
  private closing: Promise<void> = Promise.resolve();
  /** Global settings applied with set(), applied again when the instance is reopened. */
  private readonly settings = new Map<string, string>();
  private reopening: Promise<void> | null = null;
  /** Why the store has no usable instance (a reopen failed); null while it has one. */
  private broken: Error | null = null;
  /** Counts instance openings: a connection taken before a reopen belongs to a dead instance. */
  generation = 1;

  private constructor(
    private instance: DuckDBInstance,
    conn: DuckDBConnection,
    readonly path: string,
    readonly dataDir: string,
  ) {
    super(conn);
  }

  /** Opens (creating if needed) `<dataDir>/ivtd.duckdb` and applies pending migrations. */
  static async open(dataDir: string): Promise<Store> {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const path = join(dataDir, DB_FILE);
    const instance = await openInstance(path);
    const store = new Store(instance, await instance.connect(), path, dataDir);
    store.settings.set('temp_directory', sqlString(join(dataDir, TEMP_DIR)));
    store.settings.set('max_temp_directory_size', sqlString(`${tempLimitBytes(dataDir) / MiB}MiB`));
    await store.applySettings();
    await store.migrate();
    return store;
  }

  /**
   * Sets a global DuckDB setting (`SET name = value`, value as SQL) and keeps it, so a
   * reopened instance gets it too.
   */
  async set(name: string, value: string | number): Promise<void> {
    const v = typeof value === 'number' ? String(value) : value;
    await this.run(`SET ${name} = ${v}`);
    this.settings.set(name, v);
  }

  private async applySettings(conn: DuckDBConnection = this.conn): Promise<void> {
    for (const [name, value] of this.settings) await conn.run(`SET ${name} = ${value}`);
  }

  override async run(sql: string, params?: Params): Promise<void> {
    this.inFlight++;
    try {
      await this.usable();
      await super.run(sql, params);
    } catch (e) {
      throw this.failed(e);
    } finally {
      this.settle();
    }
  }

  override async all<T extends Row = Row>(sql: string, params?: Params): Promise<T[]> {
    this.inFlight++;
    try {
      await this.usable();
      return await super.all<T>(sql, params);
    } catch (e) {
      throw this.failed(e);
    } finally {
      this.settle();
    }
  }

  /** One query (or transaction) fewer under way; the last one out does a close() that waited for it. */
  private settle(): void {
    if (--this.inFlight === 0 && this.idle) {
      const done = this.idle;
      this.idle = null;
      this.closeNow();
      done();
    }
  }

  /**
   * Waits for a reopen under way; with no usable instance (an earlier reopen failed), tries
   * to reopen it first (one at a time, at most as often as queries come), and throws if
   * that fails.
   */
  private async usable(): Promise<void> {
    if (this.closed) throw new Error(`${this.path}: the store is closed`);
    if (this.reopening) await this.reopening.catch(() => undefined);
    if (this.broken) {
      try {
        await this.reopen(this.generation);
      } catch (e) {
        throw new Error(`${this.path} could not be reopened after a fatal error (tried again at the next query): ${(e as Error).message}`);
      }
    }
    if (this.closed) throw new Error(`${this.path}: the store is closed`);
  }

  /** A fatal error invalidated the instance: reopen it in the background (this query still fails). */
  private failed(e: unknown): unknown {
    if (isInvalidatedError(e)) void this.reopen(this.generation).catch(() => undefined);
    return e;
  }

  /**
   * Closes the instance and opens the file again (settings reapplied), once per generation:
   * callers pass the generation they saw fail, and a reopen already done for it is not
   * repeated. Rejects if the file cannot be opened (the store then refuses queries and
   * tries again on the next one).
   */
  reopen(seen = this.generation): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`${this.path}: the store is closed`));
    if (this.reopening) return this.reopening;
    if (seen !== this.generation && !this.broken) return Promise.resolve();
    const run = (async () => {
      if (!this.broken) {
        log.error({ path: this.path }, 'store: DuckDB stopped after a fatal error; reopening the database');
        closeQuietly(this.conn, this.instance);
      }
      let instance: DuckDBInstance | undefined;
      let conn: DuckDBConnection | undefined;
      try {
        instance = await openInstance(this.path);
        conn = await instance.connect();
        await this.applySettings(conn);
        // Closed meanwhile (a stop): the new instance must not outlive the store.
        if (this.closed) throw new Error(`${this.path}: the store is closed`);
        this.instance = instance;
        this.conn = conn;
        this.broken = null;
        this.generation++;
        log.info({ path: this.path, generation: this.generation }, 'store: database reopened');
      } catch (e) {
        if (instance) closeQuietly(conn, instance);
        if (!this.broken) log.error({ path: this.path, err: (e as Error).message }, 'store: could not reopen the database; queries fail until it opens');
        this.broken = e as Error;
        throw e;
      }
    })().finally(() => {
      this.reopening = null;
    });
    this.reopening = run;
    return run;
  }

  /** Runs fn inside BEGIN/COMMIT on a connection of its own; rolls back if it throws. */
  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    this.inFlight++;
    try {
      await this.usable();
      const conn = await this.instance.connect();
      const q = new ConnectionRunner(conn);
      try {
        return await inTransaction(q, () => fn(q));
      } finally {
        conn.closeSync();
      }
    } catch (e) {
      throw this.failed(e);
    } finally {
      this.settle();
    }
  }

  /** A separate connection, for long reads that should not queue behind writes. */
  async connection(): Promise<Queryable & { close(): void; generation: number }> {
    await this.usable();
    const conn = await this.instance.connect();
    const r = new ConnectionRunner(conn);
    return Object.assign(r, { close: () => conn.closeSync(), generation: this.generation });
  }

  async schemaVersion(): Promise<number> {
    const r = await this.one<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    return Number(r?.v ?? 0);
  }

  private async migrate(): Promise<void> {
    await this.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)',
    );
    const current = await this.schemaVersion();
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      await this.tx(async (q) => {
        for (const stmt of m.statements) await q.run(stmt);
        await q.run('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      });
    }
  }

  /**
   * Refuses new queries at once and closes the database once the queries and transactions
   * under way have ended (resolved then). DuckDB closed under a query in flight never settles
   * that query: the process would hang (or crash) instead of stopping.
   */
  close(): Promise<void> {
    if (this.closed) return this.closing;
    this.closed = true;
    if (this.inFlight === 0) this.closeNow();
    else this.closing = new Promise<void>((r) => (this.idle = r));
    return this.closing;
  }

  private closeNow(): void {
    if (this.broken) return;
    // A reopen under way has closed these already (and closes the new ones itself).
    if (this.reopening) closeQuietly(this.conn, this.instance);
    else {
      this.conn.closeSync();
      this.instance.closeSync();
    }
  }
}

async function openInstance(path: string): Promise<DuckDBInstance> {
  try {
    return await DuckDBInstance.create(path);
  } catch (e) {
    const msg = (e as Error).message;
    if (/lock/i.test(msg)) {
      throw new StoreLockedError(`${path} is held by another process (is ivtd already serving this data dir?): ${msg}`);
    }
    throw e;
  }
}

function closeQuietly(conn: DuckDBConnection | undefined, instance: DuckDBInstance): void {
  try {
    conn?.closeSync();
  } catch {
    // already unusable
  }
  try {
    instance.closeSync();
  } catch {
    // already unusable
  }
}
