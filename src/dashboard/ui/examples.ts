// Ready-to-paste curl commands for the integrations page. Secrets the page does not know
// (keys are stored hashed) appear as shell variables the user sets once.
import { lastDays } from './dates.ts';

/** Single-quotes a word for POSIX shells. */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

const EXAMPLE_UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

/** A complete, valid lookup (desktop web banner) for this partner. */
export function lookupCurl(prebidUrl: string, partnerId: string, key: string | null): string {
  const before = `${prebidUrl}/api/v1/ivt/lookup?schain=1.0,1!exchange1.example,1234,1&p=${encodeURIComponent(partnerId)}&k=`;
  const after = `&pub=pub-1&node=bidder-1&ip=81.2.69.142&ua=${encodeURIComponent(EXAMPLE_UA)}&uid=u-1&sid=exchange1.example&adt=1&dvt=2`;
  return `curl ${keyed(before, key, after)}`;
}

/**
 * A URL with the pre-bid key in it, single-quoted: inside double quotes the schain's `!`
 * is history expansion in an interactive bash ("event not found"). Without the key, the
 * quotes open around "${IVTD_PREBID_KEY}" so the shell puts it in.
 */
function keyed(before: string, key: string | null, after: string): string {
  return key ? shellQuote(before + encodeURIComponent(key) + after) : `${shellQuote(before)}"\${IVTD_PREBID_KEY}"${shellQuote(after)}`;
}

/** An OpenRTB 2.6 bid request (desktop web banner, with its supply chain) for the same verdict over POST. */
export const EXAMPLE_BID_REQUEST = {
  id: 'req-1',
  imp: [{ id: '1', banner: { w: 300, h: 250 } }],
  site: { domain: 'news.example', publisher: { id: 'pub-1' } },
  device: { ip: '81.2.69.142', ua: EXAMPLE_UA, devicetype: 2 },
  user: { id: 'u-1' },
  source: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange1.example', sid: '1234', hp: 1 }] } },
};

/** The OpenRTB lookup: the bid request as the body, partner, key and node in the query. */
export function ortbCurl(prebidUrl: string, partnerId: string, key: string | null): string {
  const url = keyed(`${prebidUrl}/api/v1/ivt/ortb?p=${encodeURIComponent(partnerId)}&k=`, key, '&node=bidder-1');
  return `curl -H 'Content-Type: application/json' --data-binary ${shellQuote(JSON.stringify(EXAMPLE_BID_REQUEST))} \\\n  ${url}`;
}

/** Last 7 days by date, over HTTP Basic with customer ID and reporting key. */
export function reportCurl(reportingUrl: string, customerId: string, key: string | null, nowMs: number): string {
  const r = lastDays(nowMs, 7);
  const url = `${reportingUrl}/v1/report?start_date=${r.start}&end_date=${r.end}&group_by=date`;
  const user = key ? shellQuote(`${customerId}:${key}`) : `"${customerId}:\${IVTD_REPORTING_KEY}"`;
  return `curl -u ${user} ${shellQuote(url)}`;
}

export function healthCurl(prebidUrl: string): string {
  return `curl -i ${shellQuote(`${prebidUrl}/health-check`)}`;
}
