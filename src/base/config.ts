// Service configuration. Precedence: command-line flag > IVTD_* environment variable >
// JSON config file (--config / IVTD_CONFIG) > default. OPTIONS is the one table that
// the flag parser, the environment reader, `ivtd --help` and docs/configuration.md all follow.
// the flag parser, the environment reader, `ivtd --help` and README all follow.
import { checkCrawlerDns } from './crawler-dns-option.ts';
import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { DEFAULT_PORTS } from './enums.ts';
import { parseDuration } from './time.ts';
import { ROLES } from './fleet-roles.ts';
import { parseClickHouseUrl } from './clickhouse-url.ts';
import { LOG_LEVELS } from './log.ts';
import { parseWholeNumber } from './whole-number.ts';
import { withoutBom } from './text.ts';
import { DOCUMENT_LIMITS, jsonFault, type JsonValue } from './bounded-json.ts';
import { FILTER_HELD_MB, FILTER_NATIVE_MB, FILTER_RUNTIME_MB, minimumBudgetMb, NATIVE_MAIN_MB, NATIVE_THREAD_MB, RUNTIME_MAIN_MB, RUNTIME_THREAD_MB, STORE_MIN_MB, TABLES_MIN_MB } from '../memory/budget.ts';
import { checkFilterName, checkPartner, checkUpstream, FILTER_DEFAULTS, FILTER_MODES, FILTER_NOBIDS, FILTER_TIMEOUT_MAX_MS, resolveFilters, type FilterOptions, type FilterSettings } from './filter-settings.ts';

/** `duration`: `90s`, `30m`, `6h`, `1d` (a bare number is seconds) or `off`; held as seconds, 0 = off. */
type Kind = 'string' | 'int' | 'path' | 'duration';

interface OptionSpec {
  /** Flag name without dashes; env var is IVTD_ + upper snake; config-file key is the camelCase key. */
  flag: string;
  kind: Kind;
  default: string | number | undefined;
  help: string;
  min?: number;
  max?: number;
  /** A credential: `ivtd systemd-unit` refuses to write it into the unit file. */
  secret?: boolean;
  /** The only values a string option takes. */
  choices?: readonly string[];
  /** Why a (non-empty) string value is not acceptable, or undefined when it is. */
  check?: (value: string) => string | undefined;
  /** An `int` held as seconds: also takes a duration (`90s`, `15m`, `1h`, `30d`), as --imp-ttl does. */
  seconds?: true;
}

/** Default port of the /metrics listener (next to DEFAULT_PORTS' 9898-9900). */
const METRICS_PORT = 9901;

/** A DNS name of letters, digits and hyphens (RFC 1123 labels), as a bind address. */
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

function checkHost(v: string): string | undefined {
  return isIP(v) !== 0 || HOSTNAME.test(v) ? undefined : `must be an IP address or a host name (such as 127.0.0.1, :: or localhost), got "${v}"`;
}

function checkClickHouseUrl(v: string): string | undefined {
  try {
    parseClickHouseUrl(v);
    return undefined;
  } catch (e) {
    return (e as Error).message.replace(/^--clickhouse-url /, '');
  }
}

/** A comma-separated list of IP addresses and CIDR blocks (--trusted-proxies). */
function checkCidrList(v: string): string | undefined {
  for (const item of v.split(',')) {
    const s = item.trim();
    const slash = s.indexOf('/');
    const addr = slash < 0 ? s : s.slice(0, slash);
    const family = isIP(addr);
    const bits = slash < 0 ? null : s.slice(slash + 1);
    const max = family === 6 ? 128 : 32;
    if (family === 0 || (bits !== null && !(/^\d{1,3}$/.test(bits) && Number(bits) <= max))) {
      return `must be IP addresses or CIDR blocks separated by commas (such as 127.0.0.0/8,::1 or 10.0.0.0/8), got "${s}"`;
    }
  }
  return undefined;
}

export const OPTIONS = {
  dataDir: { flag: 'data-dir', kind: 'path', default: './ivtd-data', help: 'State directory: DuckDB file, keys, control socket, operator data (sellers/, lists).' },
  host: { flag: 'host', kind: 'string', default: '127.0.0.1', help: 'Bind address for all listeners (0.0.0.0 or :: to listen on every interface).', check: checkHost },
  prebidPort: { flag: 'prebid-port', kind: 'int', default: DEFAULT_PORTS.prebid, help: 'Pre-bid lookup + /health-check port.', min: 0, max: 65535 },
  apiPort: { flag: 'api-port', kind: 'int', default: DEFAULT_PORTS.api, help: 'Account API + dashboard port.', min: 0, max: 65535 },
  reportingPort: { flag: 'reporting-port', kind: 'int', default: DEFAULT_PORTS.reporting, help: 'Reporting API port.', min: 0, max: 65535 },
  metricsHost: { flag: 'metrics-host', kind: 'string', default: '127.0.0.1', help: 'Bind address of GET /metrics (Prometheus); loopback unless set, whatever --host is.', check: checkHost },
  metricsPort: { flag: 'metrics-port', kind: 'int', default: METRICS_PORT, help: 'GET /metrics port (every role; nothing else is served there).', min: 0, max: 65535 },
  threads: { flag: 'threads', kind: 'int', default: 1, help: 'Lookup worker threads sharing the pre-bid port.', min: 1, max: 64 },
  memoryBudget: { flag: 'memory-budget', kind: 'int', default: 256, help: 'MB that the JS heaps, lookup history, verdict caches, reporting counts and DuckDB\'s buffer pool take together, whatever the traffic (split in docs/memory.md); at least 184 + 36 per lookup thread + 80 per filter, the default rising to that with --threads 3 and up or with filters.', min: 32, max: 1048576 },
  config: { flag: 'config', kind: 'path', default: undefined, help: 'JSON config file (keys are the camelCase option names).' },
  mmdbCountry: { flag: 'mmdb-country', kind: 'path', default: undefined, help: 'MaxMind GeoIP2/GeoLite2-Country (or compatible) MMDB instead of the embedded country db.' },
  mmdbAsn: { flag: 'mmdb-asn', kind: 'path', default: undefined, help: 'MaxMind GeoIP2/GeoLite2-ASN MMDB instead of the embedded ASN range table.' },
  mmdbAnonymousIp: { flag: 'mmdb-anonymous-ip', kind: 'path', default: undefined, help: 'MaxMind GeoIP2-Anonymous-IP MMDB (hosting, VPN, proxy, Tor flags).' },
  flushInterval: { flag: 'flush-interval', kind: 'int', default: 5, help: 'Seconds between writes of reporting rollups to the store (or a duration: 30s, 1m).', min: 1, max: 3600 , seconds: true },
  retentionDays: { flag: 'retention-days', kind: 'int', default: 400, help: 'Days of reporting rollups kept.', min: 1, max: 36500 },
  accessTokenTtl: { flag: 'access-token-ttl', kind: 'int', default: 900, help: 'Access-token lifetime in seconds (or a duration: 15m, 1h).', min: 1, max: 86400 , seconds: true },
  refreshTokenTtl: { flag: 'refresh-token-ttl', kind: 'int', default: 30 * 86400, help: 'Refresh-token lifetime in seconds (or a duration: 7d, 30d).', min: 60, max: 365 * 86400 , seconds: true },
  keyGrace: { flag: 'key-grace', kind: 'int', default: 86400, help: 'Default seconds (or a duration: 12h, 1d) an old key keeps working after `ivtd key rotate`.', min: 0, max: 90 * 86400 , seconds: true },
  reportRate: { flag: 'report-rate', kind: 'int', default: 10, help: 'Reporting API requests per second per customer (token bucket refill).', min: 1, max: 100000 },
  reportBurst: { flag: 'report-burst', kind: 'int', default: 20, help: 'Reporting API burst size per customer (token bucket capacity).', min: 1, max: 100000 },
  logLevel: { flag: 'log-level', kind: 'string', default: 'info', help: `Log level: ${LOG_LEVELS.join(', ')}.`, choices: LOG_LEVELS },
  dataRefresh: { flag: 'data-refresh', kind: 'duration', default: 'off', help: 'While serving, refresh the --data-sources every INTERVAL (e.g. 6h; at least 5m) and crawl ads.txt; off by default.', min: 300, max: 30 * 86400 },
  dataSources: { flag: 'data-sources', kind: 'path', default: undefined, help: 'JSON file naming the data sources to refresh (default <data-dir>/sources.json; see docs/data-sources.md).' },
  maxmindAccountId: { flag: 'maxmind-account-id', kind: 'string', default: undefined, help: 'MaxMind account ID for GeoIP2/GeoLite2 downloads by the data refresh.' },
  maxmindLicenseKey: { flag: 'maxmind-license-key', kind: 'string', default: undefined, secret: true, help: 'MaxMind licence key for those downloads; prefer the environment or config file (a flag shows in ps).' },
  clickhouseUrl: { flag: 'clickhouse-url', kind: 'string', default: undefined, help: 'Fleet mode: http(s)://[user[:password]@]host:port[/database] of the ClickHouse shared by the fleet (database default ivtd, created if missing; https default port 8443). docs/fleet.md.', check: checkClickHouseUrl },
  tlsCert: { flag: 'tls-cert', kind: 'path', default: undefined, help: 'PEM certificate (chain) to serve HTTPS on the account and reporting ports; with --tls-key. Re-read on SIGHUP.' },
  tlsKey: { flag: 'tls-key', kind: 'path', default: undefined, help: 'PEM private key of --tls-cert. Re-read on SIGHUP.' },
  impTtl: { flag: 'imp-ttl', kind: 'duration', default: '1h', help: 'An impression beacon later than this after its lookup counts as expired (e.g. 30m, 1h; from 1m to 1d; off: none expires).', min: 60, max: 86400 },
  trustedProxies: { flag: 'trusted-proxies', kind: 'string', default: '127.0.0.0/8,::1', help: 'Peers (addresses, CIDR blocks, comma-separated) whose X-Device-IP, X-Forwarded-For and X-Device-User-Agent name the device of an impression beacon.', check: checkCidrList },
  crawlerDns: { flag: 'crawler-dns', kind: 'string', default: 'system', help: 'Reverse DNS that confirms crawlers whose published list is a whole network (Yandex, Meta): system (the resolvers of /etc/resolv.conf), off, or resolver addresses (ip, ip:port, [ipv6]:port; comma-separated). docs/scoring.md "Who is really asking".', check: checkCrawlerDns },
  crawlerDnsQps: { flag: 'crawler-dns-qps', kind: 'int', default: 20, help: 'Most DNS queries per second that reverse DNS check sends, over all checks.', min: 1, max: 10000 },
  filterPort: { flag: 'filter-port', kind: 'int', default: undefined, help: 'Filter mode: the port of a filter in front of an OpenRTB endpoint (with --filter-upstream and --filter-partner; several filters: the config file\'s `filters`). docs/filter.md.', min: 0, max: 65535 },
  filterUpstream: { flag: 'filter-upstream', kind: 'string', default: undefined, help: 'Filter mode: where clean bid requests go, e.g. http://127.0.0.1:8000/openrtb2/auction.', check: checkUpstream },
  filterPartner: { flag: 'filter-partner', kind: 'string', default: undefined, help: 'Filter mode: the partner ID of the customer whose policy, thresholds, counts and reports apply.', check: checkPartner },
  filterName: { flag: 'filter-name', kind: 'string', default: FILTER_DEFAULTS.name, help: 'Filter mode: the filter\'s name, its reporting node and /metrics label.', check: checkFilterName },
  filterMode: { flag: 'filter-mode', kind: 'string', default: FILTER_DEFAULTS.mode, help: 'Filter mode: block (no-bid for the blocking band) or monitor (forward all, count what would be blocked).', choices: FILTER_MODES },
  filterNobid: { flag: 'filter-nobid', kind: 'string', default: FILTER_DEFAULTS.nobid, help: 'Filter mode: a no-bid is 204 No Content, or nbr: 200 with {"id","nbr"} as Prebid Server answers.', choices: FILTER_NOBIDS },
  filterTimeout: { flag: 'filter-timeout', kind: 'int', default: FILTER_DEFAULTS.timeoutMs, help: 'Filter mode: milliseconds the upstream has to answer (a bid request\'s smaller tmax wins); past it, a no-bid.', min: 1, max: FILTER_TIMEOUT_MAX_MS },
  role: { flag: 'role', kind: 'string', default: 'all', help: 'all: lookups, accounts, dashboard and reporting; edge: lookups only (and /metrics), keys from ClickHouse; needs --clickhouse-url.', choices: ROLES },
} as const satisfies Record<string, OptionSpec>;

export type OptionKey = keyof typeof OPTIONS;

export interface Config extends FilterOptions {
  dataDir: string;
  host: string;
  prebidPort: number;
  apiPort: number;
  reportingPort: number;
  metricsHost: string;
  metricsPort: number;
  threads: number;
  memoryBudget: number;
  /**
   * No option gave --memory-budget: it is the default, risen to the least the threads and
   * filters take (checkBudget). A reload then does not count a change of it (the filters it
   * rose with may differ; the plan made at start stays).
   */
  memoryBudgetDefault?: boolean;
  config: string | undefined;
  mmdbCountry: string | undefined;
  mmdbAsn: string | undefined;
  mmdbAnonymousIp: string | undefined;
  flushInterval: number;
  retentionDays: number;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  keyGrace: number;
  reportRate: number;
  reportBurst: number;
  logLevel: string;
  /** Seconds between data refresh passes while serving; 0 = off. */
  dataRefresh: number;
  dataSources: string | undefined;
  maxmindAccountId: string | undefined;
  maxmindLicenseKey: string | undefined;
  clickhouseUrl: string | undefined;
  /** PEM files: HTTPS on the account and reporting ports when both are set. */
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  /** Seconds after its lookup an impression beacon is still on time. */
  impTtl: number;
  trustedProxies: string;
  /** `system`, `off`, or resolver addresses: src/data/crawler-dns-resolver.ts. */
  crawlerDns: string;
  crawlerDnsQps: number;
  role: string;
  /** Every filter (src/prebid/filter/): the --filter-* options' and the config file's `filters`. */
  filters: FilterSettings[];
}

export class ConfigError extends Error {}

export function envName(key: OptionKey): string {
  return 'IVTD_' + OPTIONS[key].flag.toUpperCase().replace(/-/g, '_');
}

function coerce(key: OptionKey, raw: unknown, from: string): string | number | undefined {
  const spec: OptionSpec = OPTIONS[key];
  if (raw === undefined || raw === null) return undefined;
  // A config file is JSON: numbers for whole-number options (or their text), strings for the rest.
  const fine = typeof raw === 'string' || (spec.kind === 'int' && typeof raw === 'number');
  if (!fine) throw new ConfigError(`${from}: ${spec.flag} must be ${spec.kind === 'int' ? 'a whole number' : 'a string'}, got ${JSON.stringify(raw)}`);
  if (spec.kind === 'int') {
    const s = String(raw);
    const ms = spec.seconds && typeof raw === 'string' && /[smhd]$/i.test(s.trim()) ? parseDuration(s) : null;
    const n = ms !== null && ms % 1000 === 0 ? ms / 1000 : parseWholeNumber(s);
    if (n === undefined) throw new ConfigError(`${from}: ${spec.flag} must be a whole number${spec.seconds ? ' of seconds or a duration such as 90s, 15m, 1h or 30d' : ''}, got "${s}"`);
    if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
      throw new ConfigError(`${from}: ${spec.flag} must be between ${spec.min} and ${spec.max}, got ${n}`);
    }
    return n;
  }
  const s = String(raw);
  if (s === '') throw new ConfigError(`${from}: ${spec.flag} must not be empty`);
  if (spec.kind === 'duration') {
    if (s === 'off' || s === '0') return 0;
    const ms = parseDuration(s);
    const secs = ms === null ? NaN : ms / 1000;
    if (!(secs >= (spec.min ?? 1) && secs <= (spec.max ?? Infinity))) {
      throw new ConfigError(`${from}: ${spec.flag} must be "off" or a duration such as 30m, 6h or 1d (from ${spec.min ?? 1} s to ${spec.max ?? '∞'} s), got "${s}"`);
    }
    return secs;
  }
  if (spec.choices && !spec.choices.includes(s)) throw new ConfigError(`${from}: ${spec.flag} must be one of ${spec.choices.join(', ')}, got "${s}"`);
  const problem = spec.check?.(s);
  if (problem !== undefined) throw new ConfigError(`${from}: ${spec.flag} ${problem}`);
  return spec.kind === 'path' ? resolve(s) : s;
}

const BY_FLAG = new Map<string, OptionKey>(
  (Object.keys(OPTIONS) as OptionKey[]).map((k) => [OPTIONS[k].flag, k]),
);

/** Splits `--flag value` / `--flag=value` pairs of known options out of argv; returns the rest. */
export function parseOptionFlags(argv: string[]): { flags: Partial<Record<OptionKey, string>>; rest: string[] } {
  const flags: Partial<Record<OptionKey, string>> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
    const key = m ? BY_FLAG.get(m[1]!) : undefined;
    if (!m || !key) {
      rest.push(a);
      continue;
    }
    let value = m[2];
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new ConfigError(`--${m[1]} needs a value`);
    }
    // As a command's own flags: which of two values was meant is not for ivtd to guess.
    if (flags[key] !== undefined) throw new ConfigError(`--${m[1]} given more than once`);
    flags[key] = value;
  }
  return { flags, rest };
}

/** The config file's one key that is no option: an array of filters (src/filter/settings.ts). */
const FILTERS_KEY = 'filters';

/** How long a reload waits for the config file to be read (a FIFO or a hung mount never answers). */
export const CONFIG_READ_TIMEOUT_MS = 5000;

/**
 * resolveConfig for a running server (SIGHUP, `ivtd reload`): the config file is read off the
 * event loop, within CONFIG_READ_TIMEOUT_MS, so a path that blocks never freezes the main
 * thread (account API, metrics, flushes).
 */
export async function resolveConfigAsync(
  flags: Partial<Record<OptionKey, string>> = {},
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = CONFIG_READ_TIMEOUT_MS,
): Promise<Config> {
  const configPath = flags.config ?? env[envName('config')];
  if (!configPath) return resolveConfig(flags, env);
  let timer: NodeJS.Timeout | undefined;
  const read = async () => {
    // A FIFO or a device would block the read (and Node's exit, which waits for the thread
    // doing it): only a regular file is read.
    const st = await stat(configPath).catch((e: Error) => {
      throw new ConfigError(`cannot read config file ${configPath}: ${e.message}`);
    });
    if (!st.isFile()) throw new ConfigError(`cannot read config file ${configPath}: not a regular file`);
    return readFile(configPath, 'utf8').catch((e: Error) => {
      throw new ConfigError(`cannot read config file ${configPath}: ${e.message}`);
    });
  };
  const text = await Promise.race([
    read(),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ConfigError(`cannot read config file ${configPath}: no answer within ${timeoutMs / 1000} s (a FIFO, or a hung mount?)`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  return resolveConfig(flags, env, text);
}

/**
 * Resolves the configuration from flags, environment and config file. `fileText` is the
 * config file's content when the caller read it already (resolveConfigAsync).
 */
export function resolveConfig(
  flags: Partial<Record<OptionKey, string>> = {},
  env: NodeJS.ProcessEnv = process.env,
  fileText?: string,
): Config {
  const configPath = flags.config ?? env[envName('config')];
  let file: Record<string, unknown> = {};
  if (configPath) {
    let text: string;
    try {
      if (fileText === undefined && !statSync(configPath).isFile()) throw new Error('not a regular file');
      text = fileText ?? readFileSync(configPath, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read config file ${configPath}: ${(e as Error).message}`);
    }
    try {
      text = withoutBom(text);
      const parsed: unknown = JSON.parse(text);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
      file = parsed as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError(`config file ${configPath} is not valid JSON: ${(e as Error).message}`);
    }
    for (const k of Object.keys(file)) {
      // (Own keys only: `in` would take "constructor" or "__proto__" for an option.)
      if (!Object.hasOwn(OPTIONS, k) && k !== FILTERS_KEY) throw new ConfigError(`config file ${configPath}: unknown key "${k}" (known: ${Object.keys(OPTIONS).join(', ')})`);
    }
    // JSON.parse keeps the last of a key written twice: an edit made to the first would be ignored.
    const fault = jsonFault(text, file as JsonValue, DOCUMENT_LIMITS);
    if (fault !== null) throw new ConfigError(`config file ${configPath}: ${fault}`);
  }
  const out: Record<string, unknown> = {};
  /** Where each option given came from (as its errors name it); an option left at its default has none. */
  const given: Partial<Record<OptionKey, string>> = {};
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    const spec: OptionSpec = OPTIONS[key];
    let v: string | number | undefined;
    if (flags[key] !== undefined) v = coerce(key, flags[key], (given[key] = `--${spec.flag}`));
    else if (env[envName(key)] !== undefined && env[envName(key)] !== '') v = coerce(key, env[envName(key)], (given[key] = envName(key)));
    else if (file[key] !== undefined) v = coerce(key, file[key], (given[key] = `config file key ${key}`));
    else v = spec.default === undefined ? undefined : coerce(key, spec.default, 'default');
    out[key] = v;
  }
  // systemd's StateDirectory= sets STATE_DIRECTORY; use it when nothing else chose a data dir.
  if (flags.dataDir === undefined && !env[envName('dataDir')] && file.dataDir === undefined && env.STATE_DIRECTORY) {
    out.dataDir = resolve(env.STATE_DIRECTORY.split(':')[0]!);
  }
  try {
    out.filters = resolveFilters(out as unknown as Config, file[FILTERS_KEY], configPath);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  checkFleet(out.role as string, out.clickhouseUrl as string | undefined);
  checkPorts(out as unknown as Config);
  checkBudget(out as unknown as Config, given.memoryBudget ?? null);
  out.memoryBudgetDefault = given.memoryBudget === undefined;
  return out as unknown as Config;
}

/**
 * The budget must hold what the process takes before any traffic, which grows with --threads
 * and with the filters (minimumBudgetMb): the default rises to it, a budget given lower is
 * refused (the process outgrew it: with --threads 8 and 256 MB it peaked at 500 MB under
 * bench:flood, past the budget + 150).
 */
function checkBudget(c: Config, from: string | null): void {
  const filters = c.filters.length;
  const need = minimumBudgetMb(c.threads, filters);
  if (c.memoryBudget >= need) return;
  if (from === null) {
    c.memoryBudget = need;
    return;
  }
  const withFilters = filters === 0 ? '' : ` and ${filters} filter${filters === 1 ? '' : 's'}`;
  const perFilter = filters === 0 ? '' : `, per filter ${FILTER_RUNTIME_MB + FILTER_NATIVE_MB + FILTER_HELD_MB} (its thread's V8 heap ${FILTER_RUNTIME_MB}, C heap ${FILTER_NATIVE_MB}, requests and answers held ${FILTER_HELD_MB})`;
  throw new ConfigError(
    `${from}: memory-budget ${c.memoryBudget} MB is less than ivtd takes with --threads ${c.threads}${withFilters} before any traffic: ` +
      `${need} MB (V8 heaps ${RUNTIME_MAIN_MB} + ${RUNTIME_THREAD_MB} per lookup thread, C heaps ${NATIVE_MAIN_MB} + ${NATIVE_THREAD_MB} per lookup thread, ` +
      `DuckDB's pool ${STORE_MIN_MB}, the smallest tables ${TABLES_MIN_MB}${perFilter}). Give --memory-budget ${need} or more, or fewer --threads${filters === 0 ? '' : ' or filters'}.`,
  );
}

/**
 * Two of the listeners this role opens on one port of one address: the second would fail
 * at start, after the store and the data had opened, so it is refused here, naming both.
 * Port 0 (one the kernel picks) may repeat. --metrics-host may be another address, where
 * the same port is free: an address clashes with itself, and a wildcard with what it covers
 * (`::` with every address, `0.0.0.0` with every IPv4 one).
 */
function checkPorts(c: Config): void {
  const keys: OptionKey[] = c.role === 'edge' ? ['prebidPort', 'metricsPort'] : ['prebidPort', 'apiPort', 'reportingPort', 'metricsPort'];
  const hostOf = (k: OptionKey) => (k === 'metricsPort' ? c.metricsHost : c.host);
  for (let i = 0; i < keys.length; i++) {
    for (let j = i + 1; j < keys.length; j++) {
      const a = keys[i]!, b = keys[j]!;
      const port = c[a] as number;
      if (port === 0 || port !== c[b] || !addressesOverlap(hostOf(a), hostOf(b))) continue;
      throw new ConfigError(`--${OPTIONS[a].flag} and --${OPTIONS[b].flag} (${envName(a)}, ${envName(b)}) are both ${port}: each listener needs a port of its own`);
    }
  }
}

function addressesOverlap(x: string, y: string): boolean {
  if (x === y || x === '::' || y === '::') return true;
  return (x === '0.0.0.0' && isIP(y) !== 6) || (y === '0.0.0.0' && isIP(x) !== 6);
}

/** An edge takes its keys from the fleet and sends its counts there: it needs --clickhouse-url. */
function checkFleet(role: string, url: string | undefined): void {
  if (role === 'edge' && url === undefined) {
    throw new ConfigError('--role edge needs --clickhouse-url: an edge takes its keys from the fleet and sends its counts there');
  }
}

/** Help text for every option, generated from OPTIONS. */
export function optionsHelp(): string {
  return (Object.keys(OPTIONS) as OptionKey[])
    .map((k) => {
      const s: OptionSpec = OPTIONS[k];
      const d = s.default === undefined ? '' : ` (default ${s.default})`;
      return `  --${s.flag.padEnd(20)} ${envName(k).padEnd(24)} ${s.help}${d}`;
    })
    .join('\n');
}

/**
 * Options a running server applies on SIGHUP; every other change needs a restart. The TLS
 * pair is live only while TLS stays on: turning it on or off needs a restart.
 */
export const LIVE_OPTIONS: readonly OptionKey[] = ['logLevel', 'mmdbCountry', 'mmdbAsn', 'mmdbAnonymousIp', 'tlsCert', 'tlsKey'];

/** Which options differ between two configs, split into live-applicable and restart-only. */
export function diffConfig(current: Config, next: Config): { live: OptionKey[]; restart: OptionKey[] } {
  const live: OptionKey[] = [];
  const restart: OptionKey[] = [];
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    if (current[key] === next[key]) continue;
    (LIVE_OPTIONS.includes(key) ? live : restart).push(key);
  }
  return { live, restart };
}
