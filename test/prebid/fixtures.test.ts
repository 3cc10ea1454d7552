// Runs every lookup fixture (test/fixtures/lookup/{exemplary,supplemental}/*.json)
// through the real pre-bid listener. A fixture is
//   { "description", "query" | "path"+"query", "status", "expect", "headers"?, "padHeader"? }
// where "{p}" and "{k}" in the query are the test customer's partner ID and key, an
// expect string written as "/regex/" is matched as a regular expression, and "NUMBER" /
// "BOOLEAN" match any value of that type.
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { startTestServer } from '../helpers/server.ts';

interface Fixture {
  description: string;
  path?: string;
  query: string;
  method?: string;
  status: number;
  expect?: unknown;
  headers?: Record<string, string>;
  /** Adds an x-pad header of this many bytes (request-size tests). */
  padHeader?: number;
  /** Body must be empty (health check). */
  emptyBody?: boolean;
}

const ROOT = join(import.meta.dirname, '..', 'fixtures', 'lookup');

function reviveRegex(v: unknown): unknown {
  if (v === 'NUMBER') return Number;
  if (v === 'BOOLEAN') return Boolean;
  if (typeof v === 'string' && v.length > 2 && v.startsWith('/') && v.endsWith('/')) return new RegExp(v.slice(1, -1));
  if (Array.isArray(v)) return v.map(reviveRegex);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, reviveRegex(x)]));
  return v;
}

function get(port: number, path: string, method: string, headers: Record<string, string>): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

const srv = await startTestServer();
t.teardown(() => srv.stop());

for (const group of ['exemplary', 'supplemental']) {
  const dir = join(ROOT, group);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  t.test(group, async (t) => {
    t.ok(files.length > 0, `${group} has fixtures`);
    for (const file of files) {
      const fx = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Fixture;
      const query = fx.query.replaceAll('{p}', srv.customer.partner_id).replaceAll('{k}', srv.customer.prebid_key);
      const path = (fx.path ?? '/api/v1/ivt/lookup') + (query ? `?${query}` : '');
      const headers = { ...(fx.headers ?? {}) };
      if (fx.padHeader) headers['x-pad'] = 'a'.repeat(fx.padHeader);
      const res = await get(srv.server.ports.prebid, path, fx.method ?? 'GET', headers);
      t.equal(res.status, fx.status, `${file}: ${fx.description} (status)`);
      if (fx.emptyBody) t.equal(res.body, '', `${file}: empty body`);
      if (fx.expect !== undefined) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(res.body);
        } catch {
          t.fail(`${file}: body is not JSON: ${res.body.slice(0, 200)}`);
          continue;
        }
        t.match(parsed, reviveRegex(fx.expect), `${file}: ${fx.description} (body)`);
      }
      if (res.status !== 200 && res.status !== 204 && !fx.emptyBody) {
        t.match(JSON.parse(res.body), { error: String, message: String }, `${file}: error body shape`);
        t.match(res.headers['content-type'], /application\/json/, `${file}: JSON content type`);
      }
    }
  });
}
