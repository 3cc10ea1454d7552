// The OpenAPI descriptions (src/openapi/, docs/openapi/*.json): valid OpenAPI 3.1 by
// @apidevtools/swagger-parser; the committed JSON is what the server serves; every route a
// real server registers is described and every described path and method is served; and
// the response check the HTTP tests use (test/helpers/openapi.ts) does refuse a drifted answer.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Router } from '../../src/http/router.ts';
import { API_NAMES, openApiDocuments, openApiText, type ApiName } from '../../src/openapi/documents.ts';
import { HEALTH_PATH, LOOKUP_PATH, ORTB_PATH } from '../../src/prebid/worker.ts';
import { IMP_PATH } from '../../src/prebid/beacon.ts';
import { call, login } from '../account/client.ts';
import { conformsToOpenApi } from '../helpers/openapi.ts';
import { startTestServer } from '../helpers/server.ts';

const ROOT = join(import.meta.dirname, '..', '..');
type Paths = Record<string, Record<string, unknown>>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const docs = openApiDocuments() as unknown as Record<ApiName, { paths: Paths }>;

/** "METHOD /template" of every operation of a document. */
function operations(name: ApiName): string[] {
  return Object.entries(docs[name].paths).flatMap(([p, item]) => Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${p}`)).sort();
}

t.test('each description is valid OpenAPI 3.1 and the committed docs/openapi/*.json is it', async (t) => {
  for (const name of API_NAMES) {
    const committed = readFileSync(join(ROOT, 'docs', 'openapi', `${name}.json`), 'utf8');
    t.equal(committed, openApiText(name), `docs/openapi/${name}.json is up to date (node --import tsx tools/build-openapi.ts)`);
    const doc = JSON.parse(committed) as { openapi: string };
    t.equal(doc.openapi, '3.1.0');
    await t.resolves(SwaggerParser.validate(structuredClone(doc) as never), `${name}: valid`);
  }
  // The validator can fail: a response without its description, a wrong $ref.
  const broken = JSON.parse(openApiText('reporting')) as { paths: Paths };
  delete (broken.paths['/v1/report']!.get as { responses: Record<string, { description?: string }> }).responses['200']!.description;
  await t.rejects(SwaggerParser.validate(broken as never), 'a response without a description is refused');
  const dangling = JSON.parse(openApiText('account').replace('"#/components/schemas/Tokens"', '"#/components/schemas/NoSuch"'));
  await t.rejects(SwaggerParser.validate(dangling as never), 'a dangling $ref is refused');
});

t.test('the section-5 schemes: Bearer and the password grant, the key k in the query, HTTP Basic', async (t) => {
  const schemes = (n: ApiName) => (openApiDocuments()[n] as { components: { securitySchemes: Record<string, { type: string; scheme?: string; in?: string; name?: string }> } }).components.securitySchemes;
  t.match(schemes('account'), { bearer: { type: 'http', scheme: 'bearer' }, passwordGrant: { type: 'oauth2' } });
  t.match(schemes('prebid'), { prebidKey: { type: 'apiKey', in: 'query', name: 'k' } });
  t.match(schemes('reporting'), { basic: { type: 'http', scheme: 'basic' } });
});

t.test('the routes a real server registers are exactly the described paths, each served', async (t) => {
  // Every route any Router gets, by router (the account, reporting and metrics listeners).
  const registered = new Map<Router, string[]>();
  const on = Router.prototype.on;
  Router.prototype.on = function (this: Router, method: string, pattern: string, handler) {
    const list = registered.get(this) ?? [];
    list.push(`${method.toUpperCase()} ${pattern.replace(/:([a-z_]+)/g, '{$1}')}`);
    registered.set(this, list);
    return on.call(this, method, pattern, handler);
  };
  const srv = await startTestServer();
  Router.prototype.on = on;
  t.teardown(() => srv.stop());
  const routers = [...registered.values()];
  const account = routers.find((r) => r.includes('POST /login'));
  const reporting = routers.find((r) => r.includes('GET /v1/report') && !r.includes('POST /login'));
  t.ok(account && reporting, 'found the account and reporting routers');
  t.strictSame([...new Set(account)].sort(), operations('account'), 'account port: every route described, every description routed');
  t.strictSame([...new Set(reporting)].sort(), operations('reporting'), 'reporting port: the same');

  // The pre-bid port is uWebSockets.js: its routes are the chain in worker-routes.ts (addRoutes).
  const worker = readFileSync(join(ROOT, 'src', 'prebid', 'worker-routes.ts'), 'utf8');
  const consts: Record<string, string> = { LOOKUP_PATH, ORTB_PATH, HEALTH_PATH, IMP_PATH };
  const uws = [...worker.matchAll(/\.(get|post|any)\(([A-Z_]+_PATH)\b/g)].map((m) => `${m[1]} ${consts[m[2]!] ?? `(unknown ${m[2]})`}`);
  t.ok(uws.length >= 6, 'read the uWS routes of worker-routes.ts');
  const prebidPaths = Object.keys(docs.prebid.paths).sort();
  t.strictSame([...new Set(uws.map((r) => r.split(' ')[1]))].sort(), prebidPaths, 'pre-bid port: the same paths');
  for (const r of uws.filter((r) => !r.startsWith('any '))) {
    const [m, p] = r.split(' ');
    t.ok(docs.prebid.paths[p!]![m!], `pre-bid ${r.toUpperCase()} is described`);
  }

  // Every described operation is served: neither the router's "No such endpoint" nor a 405.
  const tokens = await login(srv.api, srv.customer.username, srv.customer.password);
  const basic = 'Basic ' + Buffer.from(`${srv.customer.customer_id}:${srv.customer.reporting_key}`).toString('base64');
  const fill = (p: string) => p.replace('{project_id}', '00000000-0000-4000-8000-000000000000').replace('{file}', 'prebid.json');
  const bases: Record<ApiName, { base: string; headers: Record<string, string> }> = {
    account: { base: srv.api, headers: { authorization: `Bearer ${tokens.access_token}` } },
    reporting: { base: srv.reporting, headers: { authorization: basic } },
    prebid: { base: srv.prebid, headers: {} },
  };
  for (const name of API_NAMES) {
    for (const op of operations(name)) {
      const [method, template] = op.split(' ') as [string, string];
      const { base, headers } = bases[name];
      const body = method === 'GET' || method === 'HEAD' || method === 'DELETE' ? undefined : '{}';
      const res = await fetch(base + fill(template), { method, headers: body ? { ...headers, 'content-type': 'application/json' } : headers, body });
      const text = await res.text();
      const unrouted = res.status === 405 || (res.status === 404 && /No such endpoint/.test(text));
      t.notOk(unrouted, `${name}: ${op} is served (${res.status})`);
    }
  }
});

t.test('/openapi.json on the account and reporting ports, without credentials', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  for (const [base, name] of [[srv.api, 'account'], [srv.reporting, 'reporting']] as const) {
    const r = await call(base, 'GET', '/openapi.json');
    t.equal(r.status, 200, `${name} port`);
    t.match(r.headers.get('content-type'), /^application\/json/);
    t.strictSame(r.body, JSON.parse(openApiText(name)), `${name} port serves its own description`);
  }
  for (const name of API_NAMES) t.strictSame((await call(srv.api, 'GET', `/openapi/${name}.json`)).body, JSON.parse(openApiText(name)), `/openapi/${name}.json`);
  t.match(await call(srv.api, 'GET', '/openapi/other.json'), { status: 404, body: { error: 'not_found' } });
});

t.test('the response check refuses what the descriptions do not say', async (t) => {
  const tokens = { access_token: 'x.y.z', refresh_token: 'a'.repeat(43), token_type: 'bearer', expires_in: 900 };
  const seen = (status: number, body: unknown, path = '/login', method = 'POST') => ({ method, path, status, contentType: 'application/json; charset=utf-8', body });
  t.doesNotThrow(() => conformsToOpenApi(seen(200, tokens)), 'the real shape passes');
  t.throws(() => conformsToOpenApi(seen(200, { ...tokens, token_type: 'Bearer' })), /token_type|const/, 'a changed value');
  t.throws(() => conformsToOpenApi(seen(200, { ...tokens, scope: '' })), /additional/, 'a new member');
  t.throws(() => conformsToOpenApi(seen(418, { error: 'internal', message: 'x' })), /status 418 is not among/, 'an undescribed status');
  t.throws(() => conformsToOpenApi(seen(401, { error: 'invalid_session', message: 'x' })), /must be equal to one of the allowed values/, 'an error code of another status');
  t.throws(() => conformsToOpenApi(seen(200, { meta: {}, rows: [] }, '/v1/report?start_date=x', 'GET'), ['reporting']), /must have required property/, 'a report without its meta');
  t.throws(() => conformsToOpenApi(seen(404, { message: 'no' }, '/nowhere', 'GET')), /not \{"error","message"\}/, 'an undescribed path\'s error body');
  t.throws(() => conformsToOpenApi({ ...seen(200, null, '/health-check', 'GET'), body: 'ok' }, ['prebid']), /without a body/, 'a body where none is described');
});
