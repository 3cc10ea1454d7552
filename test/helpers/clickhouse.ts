// A real clickhouse-server (Debian's package) per test file: its config, data and logs in a
// temp dir, its three ports free ones, never a system service. stop()/start() keep the
// same dir and ports, so a test can take ClickHouse away and bring it back with its data.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

export const CLICKHOUSE_BINARY = '/usr/sbin/clickhouse-server';
const SYSTEM_CONFIG = '/etc/clickhouse-server';

export interface ClickHouseServerOptions {
  /**
   * The server's own time zone. Not UTC by default, so every test also proves that ivtd's
   * SQL never depends on the server's zone (hours and dates are UTC).
   */
  timezone?: string;
  /** Extra users: name → plaintext password (full access, like `default`). */
  users?: Record<string, string>;
}

export interface ClickHouseServer {
  /** `http://127.0.0.1:PORT` (no credentials, no database). */
  readonly http: string;
  readonly httpPort: number;
  readonly dir: string;
  /** A `--clickhouse-url` for this server: default user, the given database. */
  url(database?: string, auth?: { user: string; password: string }): string;
  start(): Promise<void>;
  /**
   * SIGTERM and wait for the exit. ClickHouse lets running statements and busy keep-alive
   * connections finish first, which takes up to ~25 s while clients keep asking; after
   * `graceMs` (default 3 s) the test stops waiting and kills it.
   */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL: an abrupt outage. */
  kill(): Promise<void>;
  /** One statement over HTTP, for tests that look at ClickHouse directly; returns the body. */
  sql(statement: string): Promise<string>;
  /** stop() and remove the temp dir. */
  destroy(): Promise<void>;
  readonly running: boolean;
}

export function clickhouseAvailable(): boolean {
  return existsSync(CLICKHOUSE_BINARY) && existsSync(join(SYSTEM_CONFIG, 'config.xml'));
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function writeConfig(dir: string, ports: { http: number; tcp: number; interserver: number }, opts: ClickHouseServerOptions): string {
  const data = join(dir, 'data') + '/';
  let config = readFileSync(join(SYSTEM_CONFIG, 'config.xml'), 'utf8');
  const set = (tag: string, value: string) => {
    const re = new RegExp(`<${tag}>[^<]*</${tag}>`);
    if (!re.test(config)) throw new Error(`clickhouse config.xml has no <${tag}>`);
    config = config.replace(re, `<${tag}>${value}</${tag}>`);
  };
  set('log', join(dir, 'log', 'server.log'));
  set('errorlog', join(dir, 'log', 'error.log'));
  set('level', 'warning');
  set('http_port', String(ports.http));
  set('tcp_port', String(ports.tcp));
  set('interserver_http_port', String(ports.interserver));
  set('path', data);
  set('tmp_path', data + 'tmp/');
  set('user_files_path', data + 'user_files/');
  set('format_schema_path', data + 'format_schemas/');
  // Tests need no query log; it would only add background writes on a shared machine.
  config = config.replace(/<query_log>[\s\S]*?<\/query_log>/, '');
  config = config.replace('</yandex>', `    <timezone>${xmlEscape(opts.timezone ?? 'Asia/Kolkata')}</timezone>\n    <listen_host>127.0.0.1</listen_host>\n</yandex>`);
  writeFileSync(join(dir, 'config.xml'), config);

  let users = readFileSync(join(SYSTEM_CONFIG, 'users.xml'), 'utf8');
  const extra = Object.entries(opts.users ?? {})
    .map(
      ([name, password]) =>
        `<${name}><password>${xmlEscape(password)}</password><networks><ip>127.0.0.1</ip></networks>` +
        `<profile>default</profile><quota>default</quota></${name}>`,
    )
    .join('\n');
  users = users.replace('</users>', `${extra}\n</users>`);
  writeFileSync(join(dir, 'users.xml'), users);
  mkdirSync(join(dir, 'log'), { recursive: true });
  return join(dir, 'config.xml');
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export async function startClickHouse(opts: ClickHouseServerOptions = {}): Promise<ClickHouseServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-clickhouse-'));
  // Below the ephemeral range: stop() and start() reuse them (see freePort).
  const picked = new Set<number>();
  const pick = async (): Promise<number> => {
    for (;;) {
      const p = await freePort();
      if (!picked.has(p)) {
        picked.add(p);
        return p;
      }
    }
  };
  const ports = { http: await pick(), tcp: await pick(), interserver: await pick() };
  const configFile = writeConfig(dir, ports, opts);
  const http = `http://127.0.0.1:${ports.http}`;
  let child: ChildProcess | null = null;

  const sql = async (statement: string): Promise<string> => {
    const res = await fetch(http + '/', { method: 'POST', body: statement });
    const body = await res.text();
    if (!res.ok) throw new Error(`ClickHouse ${res.status}: ${body.trim()}`);
    return body;
  };

  const ready = async (): Promise<void> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child === null || child.exitCode !== null) {
        const err = existsSync(join(dir, 'log', 'error.log')) ? readFileSync(join(dir, 'log', 'error.log'), 'utf8').slice(-2000) : '';
        throw new Error(`clickhouse-server exited during start: ${err}`);
      }
      try {
        const res = await fetch(http + '/ping');
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error('clickhouse-server did not answer /ping within 30 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const end = async (signal: NodeJS.Signals, graceMs = 3000): Promise<void> => {
    const c = child;
    if (c === null) return;
    child = null;
    if (c.exitCode === null && c.signalCode === null) {
      const exited = once(c, 'exit');
      c.kill(signal);
      const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }
    live.delete(c);
  };

  const server: ClickHouseServer = {
    http,
    httpPort: ports.http,
    dir,
    url(database = 'ivtd', auth) {
      const cred = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@` : '';
      return `http://${cred}127.0.0.1:${ports.http}/${database}`;
    },
    async start() {
      if (child !== null) return;
      child = spawn(CLICKHOUSE_BINARY, [`--config-file=${configFile}`], { cwd: dir, stdio: ['ignore', 'ignore', 'ignore'] });
      live.add(child);
      await ready();
    },
    stop: (graceMs) => end('SIGTERM', graceMs),
    kill: () => end('SIGKILL'),
    sql,
    async destroy() {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    get running() {
      return child !== null;
    },
  };
  await server.start();
  return server;
}
