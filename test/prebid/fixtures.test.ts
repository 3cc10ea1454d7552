// Runs every lookup fixture (test/fixtures/lookup/{exemplary,supplemental}/*.json)
// through the real pre-bid listener. A fixture is
//   { "description", "query" | "path"+"query", "status", "expect", "response"?, "headers"?, "padHeader"? }
// where "{p}" and "{k}" in the query are the test customer's partner ID and key, an
// expect string written as "/regex/" is matched as a regular expression, and "NUMBER" /
// "BOOLEAN" match any value of that type. `expect` is the intent, written by hand (a
// subset: "lands high", "uaValid false").
//
// Exemplary fixtures also pin the whole answer in `response`, every field and no more (as
// prebid-server's exemplary fixtures pin the whole bid): the model is deterministic, so a
// changed score fails here. Each exemplary lookup is a first sight of its IP, uid and IFA
// (no two exemplary fixtures share one; checked below) on a fresh server with one lookup
// thread, so no fixture's answer depends on another's or on timing. The lookup id (`lid`),
// new at every lookup, is checked on its own and left out of the pin.
//
// After a deliberate change to scoring or data, regenerate the pins and review the diff:
//   UPDATE_FIXTURES=1 npx tap test/prebid/fixtures.test.ts
// That rewrites `response` only; status and `expect` are still checked, so a regenerated
// pin cannot contradict what the fixture says it shows.
import t from 'tap';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { startTestServer } from '../helpers/server.ts';
import { conformsToOpenApi } from '../helpers/openapi.ts';

interface Fixture {
  description: string;
  path?: string;
  query: string;
  method?: string;
  status: number;
  expect?: unknown;
  /** Exemplary: the whole JSON body, compared exactly (UPDATE_FIXTURES=1 rewrites it). */
  response?: unknown;
  headers?: Record<string, string>;
  /** Adds an x-pad header of this many bytes (request-size tests). */
  padHeader?: number;
  /** Body must be empty (health check). */
  emptyBody?: boolean;
}

const ROOT = join(import.meta.dirname, '..', 'fixtures', 'lookup');
const UPDATE = process.env.UPDATE_FIXTURES === '1';

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

/** The history keys of a lookup query: a fixture sharing one with another would see its traffic. */
function historyKeys(query: string): string[] {
  const q = new URLSearchParams(query);
  return (['ip', 'uid', 'ifa'] as const).flatMap((k) => q.getAll(k).map((v) => `${k}=${v}`));
}

// One lookup thread, and the exemplary group first: its lookups meet an empty history.
const srv = await startTestServer({ threads: 1 });
t.teardown(() => srv.stop());

for (const group of ['exemplary', 'supplemental']) {
  const dir = join(ROOT, group);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  t.test(group, async (t) => {
    t.ok(files.length > 0, `${group} has fixtures`);
    const exemplary = group === 'exemplary';
    const keyOwner = new Map<string, string>();
    for (const file of files) {
      const fx = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Fixture;
      if (exemplary) {
        const shared = historyKeys(fx.query).filter((k) => keyOwner.has(k) && keyOwner.get(k) !== file);
        t.same(shared, [], `${file}: an IP, uid or IFA of its own (shared: ${shared.map((k) => `${k} with ${keyOwner.get(k)}`).join(', ')})`);
        for (const k of historyKeys(fx.query)) keyOwner.set(k, file);
      }
      const query = fx.query.replaceAll('{p}', srv.customer.partner_id).replaceAll('{k}', srv.customer.prebid_key);
      const path = (fx.path ?? '/api/v1/ivt/lookup') + (query ? `?${query}` : '');
      const headers = { ...(fx.headers ?? {}) };
      if (fx.padHeader) headers['x-pad'] = 'a'.repeat(fx.padHeader);
      const res = await get(srv.server.ports.prebid, path, fx.method ?? 'GET', headers);
      t.equal(res.status, fx.status, `${file}: ${fx.description} (status)`);
      let seen: unknown = null;
      try {
        seen = res.body === '' ? null : JSON.parse(res.body);
      } catch {
        seen = res.body;
      }
      const method = fx.method ?? 'GET';
      t.doesNotThrow(() => conformsToOpenApi({ method, path, status: res.status, contentType: String(res.headers['content-type'] ?? ''), body: seen }, ['prebid']), `${file}: as docs/openapi/prebid.json says`);
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
      if (exemplary && !fx.emptyBody) {
        const parsed = JSON.parse(res.body) as Record<string, unknown>;
        // The lookup id differs at every lookup: its own check, then the rest is pinned.
        if (res.status === 200) t.match(parsed.lid, /^[A-Za-z0-9_-]{107}$/, `${file}: a lookup id`);
        delete parsed.lid;
        if (UPDATE) {
          const same = isDeepStrictEqual(fx.response, parsed);
          if (!same) writeFileSync(join(dir, file), JSON.stringify({ ...fx, response: parsed }, null, 2) + '\n');
          t.pass(`${file}: response ${same ? 'unchanged' : 'rewritten'} (UPDATE_FIXTURES=1)`);
        } else {
          t.ok(fx.response !== undefined, `${file}: exemplary fixtures pin the whole response (UPDATE_FIXTURES=1 writes it)`);
          t.strictSame(parsed, fx.response, `${file}: the whole response, every field`);
        }
      }
      if (res.status !== 200 && res.status !== 204 && !fx.emptyBody) {
        t.match(JSON.parse(res.body), { error: String, message: String }, `${file}: error body shape`);
        t.match(res.headers['content-type'], /application\/json/, `${file}: JSON content type`);
      }
    }
  });
}
