// /v1/project/*: Bearer rule, CRUD, validation, pagination and tenancy over real HTTP.
import t from 'tap';
import { SignJWT, UnsecuredJWT, decodeJwt } from 'jose';
import { createCustomer } from '../../src/store/customers.ts';
import { TAG_MAX_BYTES, TIMES_PER_DAY_MAX } from '../../src/account/project-fields.ts';
import { NO_BEARER_MESSAGE, NOT_BEARER_MESSAGE } from '../../src/account/session-guard.ts';
import { startTestServer } from '../helpers/server.ts';
import { INVALID_SESSION, call, login } from './client.ts';

const srv = await startTestServer();
t.teardown(() => srv.stop());
const api = srv.api;
const { access_token: token } = await login(api, srv.customer.username, srv.customer.password);

const VALID = { name: 'Spring campaign', demand_id: 'dsp-42', tag: 'https://ads.example.com/tag.js?c=1' };

t.test('every path under /v1/project needs a valid Bearer token: 400 invalid_session', async (t) => {
  const claims = decodeJwt(token);
  const [h, p, sig] = token.split('.');
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, cid: 'someone-else' })).toString('base64url')}.${sig}`;
  const badSig = `${h}.${p}.${sig!.slice(0, -2)}${sig!.endsWith('AA') ? 'BB' : 'AA'}`;
  const otherKey = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new Uint8Array(32));
  const unsigned = new UnsecuredJWT({ ...claims }).encode();
  const headers: Array<[string, Record<string, string>]> = [
    ['no header', {}],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['basic scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['not a JWT', { authorization: 'Bearer abc.def' }],
    ['tampered payload', { authorization: `Bearer ${tampered}` }],
    ['bad signature', { authorization: `Bearer ${badSig}` }],
    ['signed with another key', { authorization: `Bearer ${otherKey}` }],
    ['alg none', { authorization: `Bearer ${unsigned}` }],
    ['refresh token as bearer', { authorization: `Bearer ${'A'.repeat(43)}` }],
  ];
  const paths: Array<[string, string]> = [
    ['GET', '/v1/project/list'],
    ['POST', '/v1/project/create'],
    ['GET', '/v1/project/2f1b7a3e-1111-4222-8333-444455556666'],
    ['PATCH', '/v1/project/2f1b7a3e-1111-4222-8333-444455556666'],
    ['DELETE', '/v1/project/not-even-an-id'],
    ['GET', '/v1/project/no/such/path'],
    ['PUT', '/v1/project/list'],
    ['GET', '/v1//project/list'],
    ['GET', '/v1/account'],
  ];
  for (const [name, hdrs] of headers) {
    for (const [method, path] of paths) {
      const r = await call(api, method, path, { headers: hdrs, json: method === 'GET' || method === 'DELETE' ? undefined : VALID });
      if (r.status !== 400) t.fail(`${name} ${method} ${path}: ${r.status}`);
      // No token at all, or another scheme, says so (it got "Invalid session!", as an expired token does).
      else if (name === 'no header') t.same(r.body, { error: 'invalid_session', message: NO_BEARER_MESSAGE }, `${name} ${method} ${path}: says no token was sent`);
      else if (name === 'basic scheme') t.same(r.body, { error: 'invalid_session', message: NOT_BEARER_MESSAGE }, `${name} ${method} ${path}: says to send Bearer`);
      else t.same(r.body, INVALID_SESSION, `${name} ${method} ${path}`);
    }
  }
  // with a good token, the same odd paths get their ordinary answers
  t.equal((await call(api, 'GET', '/v1/project/no/such/path', { token })).status, 404);
  const put = await call(api, 'PUT', '/v1/project/list', { token });
  t.equal(put.status, 405);
  // (/v1/project/list is also /v1/project/:project_id, whose methods count too)
  t.equal(put.headers.get('allow'), 'GET, HEAD, PATCH, DELETE', 'the 405 names the methods the path takes (RFC 9110)');
  t.match(put.body, { error: 'method_not_allowed', message: 'PUT is not allowed on /v1/project/list; allowed: GET, HEAD, PATCH, DELETE.' });
  t.equal((await call(api, 'GET', '/v1//project/list', { token })).status, 200);
});

t.test('create, read, list, patch and delete a project', async (t) => {
  const c = await call(api, 'POST', '/v1/project/create', {
    token,
    json: { ...VALID, scan_now: 1, times_per_day: 4, alert_pixel: 'http://pixel.example/p.gif', locations: 'us, gb', creative_id: 'cr-7' },
  });
  t.equal(c.status, 201);
  const p = c.body;
  t.match(p, {
    project_id: /^[0-9a-f-]{36}$/,
    name: VALID.name,
    demand_id: 'dsp-42',
    tag: VALID.tag,
    scan_now: 1,
    times_per_day: 4,
    alert_pixel: 'http://pixel.example/p.gif',
    locations: ['US', 'GB'],
    creative_id: 'cr-7',
  });
  t.equal(p.created_at, p.updated_at);
  t.ok(Math.abs(Date.parse(p.created_at) - Date.now()) < 60_000, 'created_at is now (UTC ISO)');
  t.same(Object.keys(p).sort(), [
    'alert_pixel', 'created_at', 'creative_id', 'demand_id', 'locations', 'name', 'project_id', 'scan_now', 'tag', 'times_per_day', 'updated_at',
  ]);

  const got = await call(api, 'GET', `/v1/project/${p.project_id}`, { token });
  t.equal(got.status, 200);
  t.same(got.body, p);
  t.same((await call(api, 'GET', `/v1/project/${p.project_id.toUpperCase()}`, { token })).body, p, 'id in any case');

  const html = '<script src="https://ads.example.com/t.js"></script>\n<noscript><img src="x"></noscript>';
  const patched = await call(api, 'PATCH', `/v1/project/${p.project_id}`, { token, json: { tag: html, alert_pixel: null, locations: ['fr'] } });
  t.equal(patched.status, 200);
  t.match(patched.body, { ...p, tag: html, alert_pixel: null, locations: ['FR'], updated_at: String });
  t.ok(patched.body.updated_at >= p.updated_at);
  t.equal(patched.body.created_at, p.created_at);

  const del = await call(api, 'DELETE', `/v1/project/${p.project_id}`, { token });
  t.equal(del.status, 204);
  t.equal(del.body, null);
  t.equal((await call(api, 'GET', `/v1/project/${p.project_id}`, { token })).status, 404);
  t.equal((await call(api, 'DELETE', `/v1/project/${p.project_id}`, { token })).status, 404);
  t.equal((await call(api, 'PATCH', `/v1/project/${p.project_id}`, { token, json: { name: 'x' } })).status, 404);
});

t.test('defaults for the optional fields', async (t) => {
  const c = await call(api, 'POST', '/v1/project/create', { token, json: VALID });
  t.equal(c.status, 201);
  t.match(c.body, { scan_now: 0, times_per_day: 1, alert_pixel: null, locations: [], creative_id: null });
});

t.test('invalid fields: 422 naming the field', async (t) => {
  const bad: Array<[string, Record<string, unknown>, string]> = [
    ['no name', { demand_id: 'd', tag: VALID.tag }, 'name'],
    ['no demand_id', { name: 'n', tag: VALID.tag }, 'demand_id'],
    ['no tag', { name: 'n', demand_id: 'd' }, 'tag'],
    ['blank name', { ...VALID, name: '   ' }, 'name'],
    ['name too long', { ...VALID, name: 'n'.repeat(201) }, 'name'],
    ['name with a control character', { ...VALID, name: 'a\u0007b' }, 'name'],
    ['name with a lone surrogate (it would be stored as U+FFFD)', { ...VALID, name: 'x\ud800y' }, 'name'],
    ['tag with a lone surrogate', { ...VALID, tag: '<script>\udc00</script>' }, 'tag'],
    ['numeric demand_id', { ...VALID, demand_id: 42 }, 'demand_id'],
    ['demand_id too long', { ...VALID, demand_id: 'd'.repeat(101) }, 'demand_id'],
    ['http tag', { ...VALID, tag: 'http://ads.example.com/tag.js' }, 'tag'],
    ['javascript: tag', { ...VALID, tag: 'javascript:alert(1)' }, 'tag'],
    ['plain-text tag', { ...VALID, tag: 'just some words' }, 'tag'],
    ['tag over the limit', { ...VALID, tag: `<div>${'x'.repeat(TAG_MAX_BYTES)}</div>` }, 'tag'],
    ['scan_now 2', { ...VALID, scan_now: 2 }, 'scan_now'],
    ['scan_now "1"', { ...VALID, scan_now: '1' }, 'scan_now'],
    ['times_per_day 0', { ...VALID, times_per_day: 0 }, 'times_per_day'],
    ['times_per_day 1.5', { ...VALID, times_per_day: 1.5 }, 'times_per_day'],
    ['times_per_day over max', { ...VALID, times_per_day: TIMES_PER_DAY_MAX + 1 }, 'times_per_day'],
    ['alert_pixel ftp', { ...VALID, alert_pixel: 'ftp://x.example/p' }, 'alert_pixel'],
    ['alert_pixel not a URL', { ...VALID, alert_pixel: 'pixel' }, 'alert_pixel'],
    ['locations unknown code', { ...VALID, locations: 'ZZ' }, 'locations'],
    ['locations alpha-3', { ...VALID, locations: ['USA'] }, 'locations'],
    ['locations number', { ...VALID, locations: 840 }, 'locations'],
    ['locations empty string', { ...VALID, locations: '' }, 'locations'],
    ['creative_id empty', { ...VALID, creative_id: '' }, 'creative_id'],
    ['null name', { ...VALID, name: null }, 'name'],
    ['null times_per_day', { ...VALID, times_per_day: null }, 'times_per_day'],
    ['unknown field', { ...VALID, colour: 'red' }, 'colour'],
    ['read-only field', { ...VALID, project_id: '2f1b7a3e-1111-4222-8333-444455556666' }, 'project_id'],
  ];
  for (const [name, json, field] of bad) {
    const r = await call(api, 'POST', '/v1/project/create', { token, json });
    t.equal(r.status, 422, name);
    t.match(r.body, { error: 'unprocessable', field, message: String }, name);
  }
  const p = (await call(api, 'POST', '/v1/project/create', { token, json: VALID })).body;
  for (const [name, json, field] of [
    ['empty patch', {}, 'body'],
    ['null tag', { tag: null }, 'tag'],
    ['bad scan_now', { scan_now: 'yes' }, 'scan_now'],
    ['unknown field', { owner: 'x' }, 'owner'],
  ] as const) {
    const r = await call(api, 'PATCH', `/v1/project/${p.project_id}`, { token, json });
    t.equal(r.status, 422, `patch: ${name}`);
    t.equal(r.body.field, field, `patch: ${name}`);
  }
  t.same((await call(api, 'GET', `/v1/project/${p.project_id}`, { token })).body, p, 'refused patches changed nothing');

  const notJson = await call(api, 'POST', '/v1/project/create', { token, raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(notJson.status, 422, 'form body');
  const broken = await call(api, 'POST', '/v1/project/create', { token, raw: '{"name":', headers: { 'content-type': 'application/json' } });
  t.equal(broken.status, 422, 'broken JSON');
  const big = await call(api, 'POST', '/v1/project/create', { token, json: { ...VALID, tag: `<p>${'x'.repeat(70_000)}</p>` } });
  t.equal(big.status, 413, 'body over 64 KB');
  t.equal(big.body.error, 'payload_too_large');
  const atLimit = await call(api, 'POST', '/v1/project/create', { token, json: { ...VALID, tag: `<p>${'x'.repeat(TAG_MAX_BYTES - 7)}</p>` } });
  t.equal(atLimit.status, 201, 'a tag of exactly the limit fits in one request');
});

t.test('list: newest first, limit/offset, total', async (t) => {
  const before = (await call(api, 'GET', '/v1/project/list', { token })).body.total as number;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await call(api, 'POST', '/v1/project/create', { token, json: { ...VALID, name: `p${i}` } })).body.project_id);
  }
  const first = await call(api, 'GET', '/v1/project/list?limit=2', { token });
  t.equal(first.status, 200);
  t.equal(first.body.total, before + 5);
  t.equal(first.body.limit, 2);
  t.equal(first.body.offset, 0);
  t.same(first.body.projects.map((p: { project_id: string }) => p.project_id), [ids[4], ids[3]]);
  const second = await call(api, 'GET', '/v1/project/list?limit=2&offset=2', { token });
  t.same(second.body.projects.map((p: { name: string }) => p.name), ['p2', 'p1']);
  const dflt = await call(api, 'GET', '/v1/project/list', { token });
  t.equal(dflt.body.limit, 20);
  t.equal((await call(api, 'GET', `/v1/project/list?offset=${before + 5}`, { token })).body.projects.length, 0, 'past the end');
  for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=-1', 'offset=-1', 'offset=1.5', 'limit=1&limit=2', 'sort=name']) {
    const r = await call(api, 'GET', `/v1/project/list?${q}`, { token });
    t.equal(r.status, 422, q);
    t.type(r.body.field, 'string', q);
  }
});

t.test('tenancy: another customer sees none of these projects', async (t) => {
  const mine = (await call(api, 'POST', '/v1/project/create', { token, json: VALID })).body;
  await createCustomer(srv.server.store, { name: 'Other Co', username: 'other-co-admin', password: 'other-pass-1' });
  const theirs = (await login(api, 'other-co-admin', 'other-pass-1')).access_token;
  const list = await call(api, 'GET', '/v1/project/list', { token: theirs });
  t.equal(list.status, 200);
  t.equal(list.body.total, 0);
  for (const [method, json] of [['GET', undefined], ['PATCH', { name: 'stolen' }], ['DELETE', undefined]] as const) {
    const r = await call(api, method, `/v1/project/${mine.project_id}`, { token: theirs, json });
    t.equal(r.status, 404, method);
    t.same(r.body, { error: 'not_found', message: 'No such project.' });
  }
  t.same((await call(api, 'GET', `/v1/project/${mine.project_id}`, { token })).body, mine, 'untouched');
  for (const id of ['not-a-uuid', '1234', "x'%20OR%201=1"]) {
    t.equal((await call(api, 'GET', `/v1/project/${id}`, { token })).status, 404, `malformed id ${id}`);
  }
});

t.test('concurrent requests on one store connection', async (t) => {
  const rs = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      i % 2 ? call(api, 'GET', '/v1/project/list?limit=5', { token }) : call(api, 'POST', '/v1/project/create', { token, json: { ...VALID, name: `c${i}` } }),
    ),
  );
  t.same(rs.map((r) => r.status), Array.from({ length: 20 }, (_, i) => (i % 2 ? 200 : 201)));
});
