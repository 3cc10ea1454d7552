// The embedded DuckDB store: one file in the data dir, versioned migrations, async
// queries that run off the JS thread. Only the main thread opens it.
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS } from './migrations.ts';

export type Params = DuckDBValue[] | Record<string, DuckDBValue>;
export type Row = Record<string, unknown>;

export const DB_FILE = 'ivtd.duckdb';

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
  constructor(protected readonly conn: DuckDBConnection) {}
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
  private constructor(
    private readonly instance: DuckDBInstance,
    conn: DuckDBConnection,
    readonly path: string,
  ) {
    super(conn);
  }

  /** Opens (creating if needed) `<dataDir>/ivtd.duckdb` and applies pending migrations. */
  static async open(dataDir: string): Promise<Store> {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const path = join(dataDir, DB_FILE);
    let instance: DuckDBInstance;
    try {
      instance = await DuckDBInstance.create(path);
    } catch (e) {
      const msg = (e as Error).message;
      if (/lock/i.test(msg)) {
        throw new StoreLockedError(`${path} is held by another process (is ivtd already serving this data dir?): ${msg}`);
      }
      throw e;
    }
    const store = new Store(instance, await instance.connect(), path);
    await store.migrate();
    return store;
  }

  /** Runs fn inside BEGIN/COMMIT on a connection of its own; rolls back if it throws. */
  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const conn = await this.instance.connect();
    const q = new ConnectionRunner(conn);
    try {
      return await inTransaction(q, () => fn(q));
    } finally {
      conn.closeSync();
    }
  }

  /** A separate connection, for long reads that should not queue behind writes. */
  async connection(): Promise<Queryable & { close(): void }> {
    const conn = await this.instance.connect();
    const r = new ConnectionRunner(conn);
    return Object.assign(r, { close: () => conn.closeSync() });
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

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.conn.closeSync();
    this.instance.closeSync();
  }
}
