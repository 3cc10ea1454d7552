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
  const q =
    `schain=1.0,1!exchange1.example,1234,1&p=${encodeURIComponent(partnerId)}&k=${key ? encodeURIComponent(key) : '${IVTD_PREBID_KEY}'}` +
    `&pub=pub-1&node=bidder-1&ip=81.2.69.142&ua=${encodeURIComponent(EXAMPLE_UA)}&uid=u-1&sid=exchange1.example&adt=1&dvt=2`;
  const url = `${prebidUrl}/api/v1/ivt/lookup?${q}`;
  // Double quotes when the key is a variable, so the shell expands it.
  return key ? `curl ${shellQuote(url)}` : `curl "${url}"`;
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
