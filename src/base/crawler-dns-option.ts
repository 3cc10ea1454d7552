// The --crawler-dns option's values: `system`, `off`, or resolver addresses (the check runs
// in src/signals/crawler-dns.ts and src/data/crawler-dns-resolver.ts).
import { isIP } from 'node:net';

/** `--crawler-dns`: `off`, `system`, or a comma-separated list of resolvers. Returns an error sentence or null. */
export function checkCrawlerDns(v: string): string | undefined {
  if (v === 'off' || v === 'system') return undefined;
  for (const s of v.split(',').map((x) => x.trim())) {
    const m = /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(s) ?? /^([0-9.]+)(?::(\d{1,5}))?$/.exec(s) ?? /^([0-9a-fA-F:]+)()$/.exec(s);
    if (!m || isIP(m[1]!) === 0 || (m[2] && (Number(m[2]) < 1 || Number(m[2]) > 65535))) {
      return `"${s.slice(0, 60)}" is not a resolver address (ip, ip:port or [ipv6]:port); or use off or system`;
    }
  }
  return undefined;
}

/** The servers of a `--crawler-dns` value (null: the system's), or 'off'. */
export function crawlerDnsServers(v: string): string[] | null | 'off' {
  if (v === 'off') return 'off';
  if (v === 'system') return null;
  return v.split(',').map((x) => x.trim());
}
