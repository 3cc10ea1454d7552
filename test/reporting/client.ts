// Helpers for the reporting tests: real lookups through the running server and real
// report requests through the reporting listener.
import { readFileSync } from 'node:fs';
import type { TestServer } from '../helpers/server.ts';
import { fetchConforms } from '../helpers/openapi.ts';

const FIXTURES = new URL('../fixtures/lookup/exemplary/', import.meta.url);

/** The raw query of an exemplary lookup fixture, `{p}`/`{k}` still in place. */
export function fixtureQuery(name: string): string {
  return (JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8')) as { query: string }).query;
}

/**
 * A fixture's query with some parameters replaced (value), removed (null) or added.
 * Order is kept (schain stays first); values are URL-encoded here.
 */
export function withParams(query: string, changes: Record<string, string | null>): string {
  const pairs = query.split('&').map((kv) => {
    const i = kv.indexOf('=');
    return [kv.slice(0, i), kv.slice(i + 1)] as [string, string];
  });
  const out: Array<[string, string]> = [];
  const done = new Set<string>();
  for (const [k, v] of pairs) {
    if (!(k in changes)) out.push([k, v]);
    else {
      done.add(k);
      const nv = changes[k];
      if (nv !== null && nv !== undefined) out.push([k, encodeURIComponent(nv)]);
    }
  }
  for (const [k, v] of Object.entries(changes)) if (!done.has(k) && v !== null) out.push([k, encodeURIComponent(v)]);
  return out.map(([k, v]) => `${k}=${v}`).join('&');
}

export interface LookupAnswer {
  ipReputation: { ipBotActivity: boolean; ipHosting: boolean; ipVpn: boolean };
  botRisk: { score: number; band: 'low' | 'medium' | 'high'; confidence: number };
  components: { p_hard: number; p_givt: number; p_sivt: number; p_hist: number };
}

/** Runs one lookup for `customer`; throws unless it answers 200. */
export async function lookup(srv: TestServer, query: string, customer = srv.customer): Promise<LookupAnswer> {
  const q = query.replace('{p}', customer.partner_id).replace('{k}', customer.prebid_key);
  const url = `${srv.prebid}/api/v1/ivt/lookup?${q}`;
  const res = await fetch(url);
  const text = await res.text();
  fetchConforms('GET', url, res, text, ['prebid']);
  if (res.status !== 200) throw new Error(`lookup answered ${res.status}: ${text}`);
  return JSON.parse(text) as LookupAnswer;
}

export function basic(user: string, password: string): string {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}

export interface ReportReply {
  status: number;
  headers: Headers;
  body: any;
}

/** GET /v1/report on the reporting port (Basic auth with `customer` unless `authorization` is given). */
export async function report(
  srv: TestServer,
  params: Record<string, string> | string,
  opts: { customer?: { customer_id: string; reporting_key: string }; authorization?: string | null; base?: string } = {},
): Promise<ReportReply> {
  const c = opts.customer ?? srv.customer;
  const qs = typeof params === 'string' ? params : new URLSearchParams(params).toString();
  const headers: Record<string, string> = {};
  const auth = opts.authorization === undefined ? basic(c.customer_id, c.reporting_key) : opts.authorization;
  if (auth !== null) headers.authorization = auth;
  const url = `${opts.base ?? srv.reporting}/v1/report?${qs}`;
  const res = await fetch(url, { headers });
  const text = await res.text();
  // Whichever port `base` is (a reporting port, or an account port's Bearer route): the description of either.
  fetchConforms('GET', url, res, text, opts.base === undefined ? ['reporting'] : ['reporting', 'account']);
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

export function todayUtc(): string {
  return new Date().toISOString().slice(0, 10);
}

/** Yesterday to today (UTC): holds every lookup of a test even across midnight. */
export function recentDays(): { start_date: string; end_date: string } {
  return { start_date: new Date(Date.now() - 86_400_000).toISOString().slice(0, 10), end_date: todayUtc() };
}

/**
 * Waits until the lookup threads have handed over at least `expected` transactions of
 * `customer` (they post counts every second), flushing to DuckDB each time.
 */
export async function settle(srv: TestServer, expected: number, customer = srv.customer): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await srv.server.reporting!.flush();
    const r = await report(srv, recentDays(), { customer });
    const total = r.status === 200 ? (r.body.rows[0]?.total_transactions ?? 0) : -1;
    if (total >= expected) return;
    if (Date.now() > deadline) throw new Error(`only ${total} of ${expected} transactions reached the store`);
    await new Promise((res) => setTimeout(res, 250));
  }
}
