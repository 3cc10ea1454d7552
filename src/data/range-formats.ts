// Readers for the published IP-range formats the refresher fetches. Each turns one
// downloaded body into CIDRs, or throws RangeFormatError saying why the body is not that
// format: the refresher then keeps the previous data. A body may contain a few
// unreadable entries (counted); more than MAX_BAD_SHARE of them and the body is refused.
import { parseCidr, type Cidr, type RangeCategory } from '../signals/ip-ranges.ts';
import { withoutBom } from '../base/text.ts';

export const RANGE_FORMATS = [
  'aws-ip-ranges', // https://ip-ranges.amazonaws.com/ip-ranges.json
  'gcp-cloud', // https://www.gstatic.com/ipranges/cloud.json
  'azure-service-tags', // ServiceTags_Public_<date>.json from Microsoft's download page
  'oracle-ip-ranges', // https://docs.oracle.com/iaas/tools/public_ip_ranges.json
  'cidr-list', // one CIDR per line, or a CSV whose first column is a CIDR (RFC 8805 geofeeds)
  'tor-exit-list', // https://check.torproject.org/torbulkexitlist (or the exit-addresses form)
  'apple-private-relay', // https://mask-api.icloud.com/egress-ip-ranges.csv (RFC 8805 geofeed)
  // Crawler operators' own lists, all {"creationTime", "prefixes": [{"ipv4Prefix"|"ipv6Prefix"}]}:
  // Google's common-crawlers.json, special-crawlers.json, user-triggered-fetchers*.json; Bing's
  // bingbot.json; OpenAI's gptbot.json, searchbot.json, chatgpt-user.json; Apple's applebot.json;
  // DuckDuckGo's duckduckbot.json; Perplexity's perplexitybot.json, perplexity-user.json.
  'crawler-ipranges',
] as const;
export type RangeFormat = (typeof RANGE_FORMATS)[number];

/** The category each format's ranges get unless the source names one (cidr-list must). */
export const FORMAT_CATEGORY: Readonly<Record<RangeFormat, RangeCategory | null>> = {
  'aws-ip-ranges': 'hosting',
  'gcp-cloud': 'hosting',
  'azure-service-tags': 'hosting',
  'oracle-ip-ranges': 'hosting',
  'cidr-list': null,
  'tor-exit-list': 'tor',
  'apple-private-relay': 'relay',
  'crawler-ipranges': 'crawler',
};

/** Share of unreadable entries above which a body is refused rather than partly used. */
export const MAX_BAD_SHARE = 0.001;

export class RangeFormatError extends Error {
  override name = 'RangeFormatError';
}

export interface RangeFilter {
  /** aws-ip-ranges: keep only these `service` values (e.g. ["EC2"]); default all. */
  services?: string[];
  /** azure-service-tags: keep only tags whose name is one of these or starts with one + "." (e.g. ["AzureCloud"]). */
  tags?: string[];
}

export interface ParsedRanges {
  cidrs: Cidr[];
  /** Entries seen (lines or JSON prefixes after filtering). */
  entries: number;
  /** Entries that were not a usable CIDR. */
  bad: number;
  /** First few bad entries, for the log. */
  examples: string[];
}

class Collector {
  readonly out: ParsedRanges = { cidrs: [], entries: 0, bad: 0, examples: [] };
  add(value: unknown): void {
    this.out.entries++;
    const c = typeof value === 'string' ? parseCidr(value) : 'not a string';
    if (typeof c === 'string') {
      this.out.bad++;
      if (this.out.examples.length < 3) this.out.examples.push(`${JSON.stringify(value)?.slice(0, 60)}: ${c}`);
    } else {
      this.out.cidrs.push(c);
    }
  }
  done(what: string): ParsedRanges {
    const o = this.out;
    if (o.cidrs.length === 0) throw new RangeFormatError(`no usable range in the ${what}${o.examples.length ? ` (e.g. ${o.examples[0]})` : ''}`);
    if (o.bad > Math.floor(o.entries * MAX_BAD_SHARE)) {
      throw new RangeFormatError(`${o.bad} of ${o.entries} entries are not CIDRs (e.g. ${o.examples.join('; ')})`);
    }
    return o;
  }
}

function json(body: string, what: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(withoutBom(body));
  } catch (e) {
    throw new RangeFormatError(`not JSON, so not ${what} (${(e as Error).message.slice(0, 120)})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new RangeFormatError(`not a JSON object, so not ${what}`);
  return doc as Record<string, unknown>;
}

function arrayField(doc: Record<string, unknown>, key: string, what: string): unknown[] {
  const v = doc[key];
  if (!Array.isArray(v)) throw new RangeFormatError(`no "${key}" array: not ${what}`);
  return v;
}

function objects(list: unknown[]): Array<Record<string, unknown>> {
  return list.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x));
}

/** A JSON value of a file for a message, as JSON (String() throws on an object whose toString is not a function); cut to 60 characters. */
function shown(v: unknown): string {
  const text = JSON.stringify(v) ?? 'nothing';
  return text.length > 60 ? text.slice(0, 60) + '…' : text;
}

function aws(body: string, f: RangeFilter): ParsedRanges {
  const what = 'AWS ip-ranges.json';
  const doc = json(body, what);
  if (typeof doc.syncToken !== 'string' && typeof doc.createDate !== 'string') throw new RangeFormatError(`no syncToken/createDate: not ${what}`);
  const c = new Collector();
  const keep = (e: Record<string, unknown>) => !f.services || (typeof e.service === 'string' && f.services.includes(e.service));
  for (const e of objects(arrayField(doc, 'prefixes', what))) if (keep(e)) c.add(e.ip_prefix);
  for (const e of objects(Array.isArray(doc.ipv6_prefixes) ? doc.ipv6_prefixes : [])) if (keep(e)) c.add(e.ipv6_prefix);
  return c.done(what);
}

function gcp(body: string): ParsedRanges {
  const what = 'Google Cloud cloud.json';
  const doc = json(body, what);
  if (typeof doc.syncToken !== 'string' && typeof doc.creationTime !== 'string') throw new RangeFormatError(`no syncToken/creationTime: not ${what}`);
  const c = new Collector();
  for (const e of objects(arrayField(doc, 'prefixes', what))) c.add(e.ipv4Prefix ?? e.ipv6Prefix);
  return c.done(what);
}

function crawlerPrefixes(body: string): ParsedRanges {
  const what = "a crawler operator's prefixes JSON";
  const doc = json(body, what);
  const c = new Collector();
  for (const e of objects(arrayField(doc, 'prefixes', what))) c.add(e.ipv4Prefix ?? e.ipv6Prefix);
  return c.done(what);
}

function azure(body: string, f: RangeFilter): ParsedRanges {
  const what = 'Azure Service Tags JSON';
  const doc = json(body, what);
  const c = new Collector();
  const wanted = (name: string) => !f.tags || f.tags.some((t) => name === t || name.startsWith(`${t}.`));
  for (const v of objects(arrayField(doc, 'values', what))) {
    if (!wanted(typeof v.name === 'string' ? v.name : typeof v.id === 'string' ? v.id : '')) continue;
    const props = v.properties as { addressPrefixes?: unknown } | undefined;
    if (!props || !Array.isArray(props.addressPrefixes)) throw new RangeFormatError(`tag ${shown(v.name)} has no properties.addressPrefixes: not ${what}`);
    for (const p of props.addressPrefixes) c.add(p);
  }
  return c.done(what);
}

function oracle(body: string): ParsedRanges {
  const what = 'Oracle public_ip_ranges.json';
  const doc = json(body, what);
  const c = new Collector();
  for (const r of objects(arrayField(doc, 'regions', what))) {
    if (!Array.isArray(r.cidrs)) throw new RangeFormatError(`region ${shown(r.region)} has no cidrs array: not ${what}`);
    for (const e of objects(r.cidrs)) c.add(e.cidr);
  }
  return c.done(what);
}

/** Lines of text; `#` comments and blank lines skipped; `pick` extracts the value or null to skip. */
function lines(body: string, what: string, pick: (line: string) => string | null): ParsedRanges {
  // An HTML page (a login wall, an error page served with 200) is not a list.
  const head = body.slice(0, 512).trimStart().toLowerCase();
  if (head.startsWith('<!doctype') || head.startsWith('<html') || head.startsWith('<?xml') || head.startsWith('{')) {
    throw new RangeFormatError(`the body is ${head.startsWith('{') ? 'JSON' : 'HTML/XML'}, not a ${what}`);
  }
  const c = new Collector();
  for (const raw of body.split('\n')) {
    const hash = raw.indexOf('#');
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    if (line === '') continue;
    if (line.length > 300) {
      c.add(line.slice(0, 60));
      continue;
    }
    const v = pick(line);
    if (v !== null) c.add(v);
  }
  return c.done(what);
}

const firstField = (line: string): string => {
  const comma = line.indexOf(',');
  return (comma >= 0 ? line.slice(0, comma) : line.split(/[ \t]/, 1)[0]!).trim();
};

/** Tor's bulk list is one address per line; the older exit-addresses file says `ExitAddress <ip> <date>`. */
function torLine(line: string): string | null {
  if (/^(ExitNode|Published|LastStatus)\b/.test(line)) return null;
  if (line.startsWith('ExitAddress ')) return line.split(/\s+/)[1] ?? '';
  return line;
}

/** Parses one downloaded body in `format`. Throws RangeFormatError when it is not that format. */
export function parseRangeSource(format: RangeFormat, body: string, filter: RangeFilter = {}): ParsedRanges {
  switch (format) {
    case 'aws-ip-ranges':
      return aws(body, filter);
    case 'gcp-cloud':
      return gcp(body);
    case 'azure-service-tags':
      return azure(body, filter);
    case 'oracle-ip-ranges':
      return oracle(body);
    case 'cidr-list':
      return lines(body, 'CIDR list', firstField);
    case 'tor-exit-list':
      return lines(body, 'Tor exit list', torLine);
    case 'apple-private-relay':
      return lines(body, 'iCloud Private Relay egress CSV', firstField);
    case 'crawler-ipranges':
      return crawlerPrefixes(body);
  }
}

/**
 * Microsoft publishes Service Tags under a new file name every week, linked from a download
 * page. Given that page's HTML, returns the first http(s) link to a ServiceTags_*.json, or null.
 */
export function findServiceTagsLink(html: string): string | null {
  const marker = 'ServiceTags_';
  let at = html.indexOf(marker);
  while (at >= 0) {
    // Pages embed the link in HTML or in script data (where "/" may be written "\/").
    const plain = Math.max(html.lastIndexOf('https://', at), html.lastIndexOf('http://', at));
    const escaped = Math.max(html.lastIndexOf('https:\\/\\/', at), html.lastIndexOf('http:\\/\\/', at));
    const start = Math.max(plain, escaped);
    const end = html.indexOf('.json', at);
    if (start >= 0 && end > at && end - start < 300 && at - start < 250) {
      const url = html.slice(start, end + 5).replaceAll('\\/', '/');
      if (!/["'\s<>\\]/.test(url)) return url;
    }
    at = html.indexOf(marker, at + marker.length);
  }
  return null;
}
