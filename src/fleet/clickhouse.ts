// The fleet's ClickHouse connection: the HTTP interface through @clickhouse/client, with
// what ClickHouse 18.16 supports and current releases keep: statements as text (values
// only through ./sql.ts), JSONEachRow inserts, JSONEachRow and JSON (for
// rows_before_limit_at_least) results. Every failure becomes a FleetError that says
// whether ClickHouse answered (the statement failed) or could not be reached.
import net from 'node:net';
import tls from 'node:tls';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { sqlIdentifier } from './sql.ts';
import type { ClickHouseTarget } from '../base/clickhouse-url.ts';

/** ClickHouse exception codes ivtd reacts to. */
export const CH_CODES = {
  /** A query with this query_id is still running (replace_running_query = 0, the default). */
  QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING: 216,
} as const;

export class FleetError extends Error {
  constructor(
    message: string,
    /** ClickHouse answered with this exception code (the statement itself failed). */
    readonly chCode: number | null,
    /** The request may or may not have taken effect (no answer, or the answer was cut). */
    readonly uncertain: boolean,
  ) {
    super(message);
    this.name = 'FleetError';
  }
}

const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** An https:// URL whose certificate Node does not accept: the request never left. */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** One line of the server's exception, e.g. "Code: 60 … Table ivtd.x doesn't exist". */
function firstLine(s: string): string {
  const line = s.split('\n').find((l) => l.trim() !== '') ?? s;
  return line.length > 400 ? line.slice(0, 400) + '…' : line;
}

function asFleetError(e: unknown, what: string, display: string): FleetError {
  if (e instanceof FleetError) return e;
  const err = e as Error & { code?: string };
  const m = /Code: (\d+)/.exec(err.message ?? '');
  if (m) return new FleetError(`ClickHouse ${display}: ${what} failed: ${firstLine(err.message)}`, Number(m[1]), false);
  if (err.code && NOT_SENT.has(err.code)) {
    return new FleetError(`ClickHouse ${display} is unreachable (${err.code}) during ${what}`, null, false);
  }
  if (err.code && UNTRUSTED.has(err.code)) {
    return new FleetError(
      `ClickHouse ${display}: the TLS certificate is not trusted (${err.code}: ${err.message}) during ${what}; for a private CA, start ivtd with NODE_EXTRA_CA_CERTS=/path/to/ca.pem`,
      null,
      false,
    );
  }
  if (err.code === 'EPROTO' || err.code?.startsWith('ERR_SSL_')) {
    return new FleetError(`ClickHouse ${display}: the TLS handshake failed (${err.code}: ${firstLine(err.message ?? '')}) during ${what}; is that port https?`, null, false);
  }
  return new FleetError(`ClickHouse ${display}: ${what} got no clear answer: ${err.message}`, null, true);
}

/** How long the TLS probe after a timed-out https request waits for a handshake. */
export const TLS_PROBE_MS = 3000;

export type TlsProbe = { kind: 'tls' } | { kind: 'not-tls'; code: string } | { kind: 'silent' };

/**
 * Whether host:port speaks TLS, asked after an https request timed out: a plain HTTP port
 * (ClickHouse's 8123 behind an https:// URL) answers a ClientHello with something that is
 * not TLS, or now and then waits for more and says nothing (measured: 9 in 60 hellos against
 * ClickHouse's 8123; most likely a hello without a line break, an unfinished request line
 * to it). Up to
 * `tries` handshakes (each hello is new), `timeoutMs` each; the certificate is not judged
 * here (an untrusted one fails the request itself, with its own message). `signal` ends it
 * early (close(): shutdown does not wait for probes).
 */
export async function probeTls(host: string, port: number, timeoutMs = TLS_PROBE_MS, tries = 3, signal?: AbortSignal): Promise<TlsProbe> {
  for (let i = 0; i < tries && signal?.aborted !== true; i++) {
    const r = await new Promise<TlsProbe>((resolve) => {
      const socket = tls.connect({ host, port, rejectUnauthorized: false, ...(net.isIP(host) ? {} : { servername: host }) });
      const timer = setTimeout(() => done({ kind: 'silent' }), timeoutMs);
      const stop = () => done({ kind: 'silent' });
      signal?.addEventListener('abort', stop, { once: true });
      const done = (p: TlsProbe) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', stop);
        socket.destroy();
        resolve(p);
      };
      socket.once('secureConnect', () => done({ kind: 'tls' }));
      socket.once('error', (e: Error & { code?: string }) => done(e.code === 'EPROTO' || e.code?.startsWith('ERR_SSL_') ? { kind: 'not-tls', code: e.code } : { kind: 'silent' }));
    });
    if (r.kind !== 'silent') return r;
  }
  return { kind: 'silent' };
}

export interface ClickHouseOptions {
  /** Milliseconds before a request counts as failed (default 30 s). */
  requestTimeoutMs?: number;
  /** Milliseconds each TLS probe after a timed-out https request waits (default TLS_PROBE_MS; tests). */
  tlsProbeMs?: number;
}

export interface ReportResult<T> {
  data: T[];
  /** Rows the statement had before LIMIT/OFFSET (exact with GROUP BY). */
  rowsBeforeLimit: number | undefined;
}

export class ClickHouse {
  private readonly client: ClickHouseClient;
  private readonly db: string;
  /** Aborted by close(): ends requests in flight and queued ones (a hanging server holds them for the timeout). */
  private readonly aborter = new AbortController();

  constructor(
    readonly target: ClickHouseTarget,
    private readonly opts: ClickHouseOptions = {},
  ) {
    this.db = sqlIdentifier(target.database);
    this.client = this.makeClient(this.db);
  }

  private makeClient(database: string): ClickHouseClient {
    return createClient({
      url: this.target.origin,
      username: this.target.username,
      password: this.target.password,
      database,
      request_timeout: this.opts.requestTimeoutMs ?? 30_000,
      max_open_connections: 4,
      application: 'ivtd',
      // Failures are reported by the callers, once, in ivtd's log.
      log: { level: ClickHouseLogLevel.OFF },
    });
  }

  get database(): string {
    return this.db;
  }

  /**
   * The FleetError for a failed request. An https request that timed out may have met a
   * port that does not speak TLS and waits silently: the port is probed, and when it is not
   * TLS the request was never delivered (the failure is certain, and says so).
   */
  private async failure(e: unknown, what: string): Promise<FleetError> {
    const fe = asFleetError(e, what, this.target.display);
    if (!fe.uncertain || !this.target.origin.startsWith('https:') || !/timeout/i.test(fe.message)) return fe;
    const url = new URL(this.target.origin);
    const probeMs = this.opts.tlsProbeMs ?? TLS_PROBE_MS;
    const probe = await probeTls(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 443), probeMs, 3, this.aborter.signal);
    if (probe.kind === 'not-tls') {
      return new FleetError(`ClickHouse ${this.target.display}: the TLS handshake failed (${probe.code}, after ${what} timed out): that port does not speak TLS; is it ClickHouse's https port?`, null, false);
    }
    if (probe.kind === 'silent') {
      return new FleetError(`${fe.message}; a TLS handshake with that port did not complete within ${probeMs / 1000} s either: is it ClickHouse's https port (a plain HTTP port can wait silently)?`, null, true);
    }
    return fe;
  }

  /** Creates the database when missing (through the always-present `system` database). */
  async ensureDatabase(): Promise<void> {
    const boot = this.makeClient('system');
    try {
      await boot.command({ query: `CREATE DATABASE IF NOT EXISTS ${this.db}`, abort_signal: this.aborter.signal });
    } catch (e) {
      throw await this.failure(e, 'CREATE DATABASE');
    } finally {
      await boot.close();
    }
  }

  /** A SELECT as rows of objects (UInt64/Int64 arrive as strings: ClickHouse quotes them in JSON). */
  async rows<T>(sql: string, what = 'query'): Promise<T[]> {
    try {
      const rs = await this.client.query({ query: sql, format: 'JSONEachRow', abort_signal: this.aborter.signal });
      return await rs.json<T>();
    } catch (e) {
      throw await this.failure(e, what);
    }
  }

  /** A SELECT in FORMAT JSON: rows plus rows_before_limit_at_least. */
  async report<T>(sql: string): Promise<ReportResult<T>> {
    try {
      const rs = await this.client.query({ query: sql, format: 'JSON', abort_signal: this.aborter.signal });
      const j = await rs.json<T>();
      const before = (j as { rows_before_limit_at_least?: number }).rows_before_limit_at_least;
      return { data: j.data, rowsBeforeLimit: before === undefined ? undefined : Number(before) };
    } catch (e) {
      throw await this.failure(e, 'report query');
    }
  }

  /** A statement without a result (DDL, ALTER, INSERT … SELECT). */
  async command(sql: string, what = 'statement'): Promise<void> {
    try {
      await this.client.command({ query: sql, abort_signal: this.aborter.signal });
    } catch (e) {
      throw await this.failure(e, what);
    }
  }

  /**
   * One INSERT of `rows` as one JSONEachRow body. With `queryId`, ClickHouse refuses a
   * second statement under the same id while the first still runs (the delivery relies on it).
   */
  async insert(table: string, rows: readonly object[], queryId?: string): Promise<void> {
    try {
      await this.client.insert({
        table: `${this.db}.${sqlIdentifier(table)}`,
        values: rows as object[],
        format: 'JSONEachRow',
        abort_signal: this.aborter.signal,
        ...(queryId === undefined ? {} : { query_id: queryId }),
      });
    } catch (e) {
      throw await this.failure(e, `INSERT INTO ${table}`);
    }
  }

  /** True when the server answers /ping. */
  async ping(): Promise<boolean> {
    const r = await this.client.ping();
    return r.success;
  }

  async close(): Promise<void> {
    this.aborter.abort();
    await this.client.close();
  }
}
