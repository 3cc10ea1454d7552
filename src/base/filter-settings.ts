// What one filter is (docs/filter.md): a listener of its own in front of an OpenRTB endpoint,
// acting for one customer. Made from the --filter-* options (one filter) and the config
// file's `filters` array (several); checked here, at start and on reload.
import { isUuid } from './uuid.ts';

export const FILTER_MODES = ['block', 'monitor'] as const;
export const FILTER_NOBIDS = ['204', 'nbr'] as const;
export type FilterMode = (typeof FILTER_MODES)[number];
export type FilterNobid = (typeof FILTER_NOBIDS)[number];

export interface FilterSettings {
  /** Its reporting `node` and its /metrics label. */
  name: string;
  /** Its own port (0: one the kernel picks, for tests). */
  port: number;
  /** Where forwarded requests go: http://host:port/path (the path a prefix of theirs). */
  upstream: string;
  /** The customer (by partner ID, lowercase) whose policy, thresholds, counts and reports apply. */
  partner: string;
  mode: FilterMode;
  /** How a no-bid is answered: 204 No Content, or 200 {"id","nbr"} as Prebid Server answers a rejected request. */
  nobid: FilterNobid;
  /** Longest wait for the upstream's whole answer, ms (a request's smaller tmax wins). */
  timeoutMs: number;
  /** Connections to the upstream at most (kept alive between requests). */
  maxSockets: number;
}

export const FILTER_DEFAULTS = { name: 'filter', mode: 'block', nobid: '204', timeoutMs: 300, maxSockets: 64 } as const;
export const FILTER_TIMEOUT_MAX_MS = 60_000;
export const FILTER_SOCKETS_MAX = 4096;
/** A reporting node is at most this long (longer names would be clipped in reports). */
const NAME_MAX = 64;

/** Why `url` cannot be an upstream, or undefined when it can. */
export function checkUpstream(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `must be an http:// URL such as http://127.0.0.1:8000/openrtb2/auction, got "${url}"`;
  }
  if (u.protocol !== 'http:') return `must be an http:// URL (https upstreams are not supported: put the filter beside the bidder), got "${url}"`;
  if (u.username !== '' || u.password !== '') return 'must not carry a user or password';
  if (u.hash !== '') return `must not have a #fragment, got "${url}"`;
  return undefined;
}

export function checkPartner(id: string): string | undefined {
  return isUuid(id) ? undefined : `must be a partner ID (a UUID, as \`ivtd customer list\` shows), got "${id}"`;
}

export function checkFilterName(name: string): string | undefined {
  return /^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(name) && name.length <= NAME_MAX ? undefined : `must be 1 to ${NAME_MAX} letters, digits, '.', '_', ':' or '-', got ${JSON.stringify(name)}`;
}

/** An entry of the config file's `filters` (or the --filter-* options as one), checked; throws Error naming `from`. */
export function filterFrom(raw: unknown, from: string): FilterSettings {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${from} must be an object such as {"port": 9902, "upstream": "http://127.0.0.1:8000/openrtb2/auction", "partner": "<partner ID>"}`);
  const o = raw as Record<string, unknown>;
  const known = ['name', 'port', 'upstream', 'partner', 'mode', 'nobid', 'timeout', 'maxSockets'];
  for (const k of Object.keys(o)) if (!known.includes(k)) throw new Error(`${from}: unknown key "${k}" (known: ${known.join(', ')})`);
  const str = (k: string, dflt?: string): string => {
    const v = o[k] ?? dflt;
    if (v === undefined) throw new Error(`${from}: "${k}" is required`);
    if (typeof v !== 'string' && typeof v !== 'number') throw new Error(`${from}: "${k}" must be a string, got ${JSON.stringify(v)}`);
    return String(v);
  };
  const int = (k: string, dflt: number | undefined, min: number, max: number): number => {
    const v = o[k] ?? dflt;
    if (v === undefined) throw new Error(`${from}: "${k}" is required`);
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${from}: "${k}" must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
    return n;
  };
  const name = str('name', FILTER_DEFAULTS.name);
  const upstream = str('upstream');
  const partner = str('partner');
  const mode = str('mode', FILTER_DEFAULTS.mode);
  const nobid = str('nobid', FILTER_DEFAULTS.nobid);
  const problem =
    (checkFilterName(name) && `"name" ${checkFilterName(name)}`) ??
    (checkUpstream(upstream) && `"upstream" ${checkUpstream(upstream)}`) ??
    (checkPartner(partner) && `"partner" ${checkPartner(partner)}`) ??
    (!(FILTER_MODES as readonly string[]).includes(mode) ? `"mode" must be one of ${FILTER_MODES.join(', ')}, got "${mode}"` : undefined) ??
    (!(FILTER_NOBIDS as readonly string[]).includes(nobid) ? `"nobid" must be one of ${FILTER_NOBIDS.join(', ')}, got "${nobid}"` : undefined);
  if (problem) throw new Error(`${from}: ${problem}`);
  return {
    name,
    port: int('port', undefined, 0, 65535),
    upstream,
    partner: partner.toLowerCase(),
    mode: mode as FilterMode,
    nobid: nobid as FilterNobid,
    timeoutMs: int('timeout', FILTER_DEFAULTS.timeoutMs, 1, FILTER_TIMEOUT_MAX_MS),
    maxSockets: int('maxSockets', FILTER_DEFAULTS.maxSockets, 1, FILTER_SOCKETS_MAX),
  };
}

/** The --filter-* options as resolved (undefined: not given). */
export interface FilterOptions {
  filterPort: number | undefined;
  filterUpstream: string | undefined;
  filterPartner: string | undefined;
  filterName: string;
  filterMode: string;
  filterNobid: string;
  filterTimeout: number;
}

/** The --filter-* options make a filter (then it is the first of resolveFilters' list). */
export function optionsFilterGiven(o: FilterOptions): boolean {
  return o.filterPort !== undefined && o.filterUpstream !== undefined && o.filterPartner !== undefined;
}

/** The settings a reload changes in a running filter's thread (its name and port are what it is known by). */
export const FILTER_LIVE_FIELDS = ['mode', 'nobid', 'timeoutMs', 'upstream', 'partner', 'maxSockets'] as const;

/** What differs between two settings of one filter, field by field: [before, after]. */
export function filterDifferences(before: FilterSettings, after: FilterSettings): Record<string, [string | number, string | number]> {
  const out: Record<string, [string | number, string | number]> = {};
  for (const k of ['port', ...FILTER_LIVE_FIELDS] as const) if (before[k] !== after[k]) out[k] = [before[k], after[k]];
  return out;
}

/**
 * Why the --filter-* options make no filter although some are given (`ivtd serve` refuses to
 * start), or undefined. (Checked at serve, not when the config resolves: each option alone is
 * a good value, and other commands ignore them.)
 */
export function incompleteFilter(o: FilterOptions): string | undefined {
  const given = [o.filterPort, o.filterUpstream, o.filterPartner].filter((v) => v !== undefined).length;
  return given > 0 && given < 3 ? 'a filter needs --filter-port, --filter-upstream and --filter-partner together (docs/filter.md)' : undefined;
}

/**
 * Every filter: the one of the --filter-* options (when --filter-port, --filter-upstream and
 * --filter-partner are all given; see incompleteFilter), then the config file's `filters`.
 * Names and ports must differ (port 0 may repeat). Throws Error with the sentence to show.
 */
export function resolveFilters(o: FilterOptions, fileFilters: unknown, configPath: string | undefined): FilterSettings[] {
  const out: FilterSettings[] = [];
  if (optionsFilterGiven(o)) {
    out.push(
      filterFrom(
        { name: o.filterName, port: o.filterPort, upstream: o.filterUpstream, partner: o.filterPartner, mode: o.filterMode, nobid: o.filterNobid, timeout: o.filterTimeout },
        'the --filter-* options',
      ),
    );
  }
  if (fileFilters !== undefined) {
    const where = `config file ${configPath ?? ''} key filters`;
    if (!Array.isArray(fileFilters)) throw new Error(`${where} must be an array of filters (docs/filter.md)`);
    fileFilters.forEach((f, i) => out.push(filterFrom(f, `${where}[${i}]`)));
  }
  const fromOptions = optionsFilterGiven(o);
  for (let i = 0; i < out.length; i++) {
    for (let j = i + 1; j < out.length; j++) {
      if (out[i]!.name === out[j]!.name) {
        // The options' filter is fixed for the process's life: the file cannot redefine it (on reload neither).
        if (i === 0 && fromOptions) throw new Error(`config file ${configPath ?? ''} key filters[${j - 1}] is named "${out[i]!.name}" like the --filter-* options' filter, which the config file cannot change (nor a reload: the options hold for the process's life): give the file's filter another name`);
        throw new Error(`two filters are named "${out[i]!.name}": give each its own name`);
      }
      if (out[i]!.port !== 0 && out[i]!.port === out[j]!.port) throw new Error(`filters "${out[i]!.name}" and "${out[j]!.name}" both listen on port ${out[i]!.port}: give each its own port`);
    }
  }
  return out;
}
