// `--clickhouse-url http(s)://[user[:password]@]host:port[/database]`: where the fleet's
// shared state lives (https: @clickhouse/client checks the certificate against Node's CAs,
// plus NODE_EXTRA_CA_CERTS). Parsed once at start; a malformed URL stops the start with a
// message that says what is wrong, never a half-configured fleet. config.ts parses the
// option with it, so it sits below src/fleet/ (whose SQL text checks names with isIdentifier too).

export const DEFAULT_CLICKHOUSE_DATABASE = 'ivtd';

const IDENTIFIER_RE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** True for a name ivtd accepts as a ClickHouse database name (used unquoted). */
export function isIdentifier(name: string): boolean {
  return IDENTIFIER_RE.test(name);
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 8123, 'https:': 8443 };

export interface ClickHouseTarget {
  /** Scheme, host and port only: `http://host:8123`. */
  origin: string;
  username: string;
  password: string;
  database: string;
  /** The URL with the password masked, for logs and errors. */
  display: string;
}

export class ClickHouseUrlError extends Error {
  override name = 'ClickHouseUrlError';
}

export function parseClickHouseUrl(raw: string): ClickHouseTarget {
  const shape = 'expected http(s)://[user[:password]@]host:port[/database]';
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ClickHouseUrlError(`--clickhouse-url "${raw}" is not a URL; ${shape}`);
  }
  if (!(u.protocol in DEFAULT_PORTS)) throw new ClickHouseUrlError(`--clickhouse-url must start with http:// or https://; ${shape}`);
  if (u.hostname === '') throw new ClickHouseUrlError(`--clickhouse-url has no host; ${shape}`);
  if (u.search !== '' || u.hash !== '') throw new ClickHouseUrlError(`--clickhouse-url takes no ?query or #fragment; ${shape}`);
  const segments = u.pathname.split('/').filter(Boolean);
  if (segments.length > 1) throw new ClickHouseUrlError(`--clickhouse-url names one database at most, got "${u.pathname}"; ${shape}`);
  let database = DEFAULT_CLICKHOUSE_DATABASE;
  if (segments.length === 1) {
    database = decodeURIComponent(segments[0]!);
    if (!isIdentifier(database)) {
      throw new ClickHouseUrlError(`--clickhouse-url database "${database}" must be letters, digits and _ (not starting with a digit)`);
    }
  }
  let username: string;
  let password: string;
  try {
    username = u.username === '' ? 'default' : decodeURIComponent(u.username);
    password = decodeURIComponent(u.password);
  } catch {
    throw new ClickHouseUrlError('--clickhouse-url has a malformed %-escape in its user or password');
  }
  const port = u.port === '' ? DEFAULT_PORTS[u.protocol]! : Number(u.port);
  const origin = `${u.protocol}//${u.hostname}:${port}`;
  const who = u.username === '' ? '' : `${encodeURIComponent(username)}${password === '' ? '' : ':***'}@`;
  return { origin, username, password, database, display: `${u.protocol}//${who}${u.hostname}:${port}/${database}` };
}
