// The first start on a data dir created a customer: its credentials, shown once, and a
// lookup to try.
import type { RunningServer } from './running.ts';

/** Prints the first customer's credentials and a lookup to try (stdout, once). */
/** A customer's credentials as the first start shows them. */
export interface Credentials {
  customer_id: string;
  partner_id: string;
  prebid_key: string;
  reporting_key: string;
  username: string;
  password: string;
}

/** The credentials' lines under a first line that says why they are shown. */
export function credentialLines(c: Credentials, why: string): string[] {
  return [
    '',
    `  ${why} Keep these; they are shown once.`,
    `    customer_id    ${c.customer_id}`,
    `    partner_id     ${c.partner_id}`,
    `    username       ${c.username}`,
    `    password       ${c.password}`,
    `    prebid_key     ${c.prebid_key}`,
    `    reporting_key  ${c.reporting_key}`,
    '',
  ];
}

export function announce(c: Credentials, s: RunningServer): void {
  const host = s.config.host === '0.0.0.0' || s.config.host === '::' ? '127.0.0.1' : s.config.host;
  const base = `http://${host.includes(':') ? `[${host}]` : host}`;
  const apiBase = s.tls ? base.replace(/^http:/, 'https:') : base;
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const q =
    `schain=1.0,1!exchange1.example,1234,1&p=${c.partner_id}&k=${c.prebid_key}&pub=pub-1&node=bidder-1` +
    `&ip=81.2.69.142&ua=${ua}&uid=u-1&sid=exchange1.example&adt=1&dvt=2`;
  process.stdout.write(
    [
      ...credentialLines(c, 'First start on this data dir: created a customer.'),
      '  Try a lookup:',
      `    curl '${base}:${s.ports.prebid}/api/v1/ivt/lookup?${q}'`,
      s.ports.api ? `  Dashboard: ${apiBase}:${s.ports.api}/` : '',
      '',
    ].join('\n') + '\n',
  );
}
