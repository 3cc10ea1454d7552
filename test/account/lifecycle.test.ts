// Token expiry with short lifetimes, the signing-key file, and that sessions and projects
// survive a restart on the same data dir.
import t from 'tap';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JWT_KEY_BYTES, JwtKeyError, jwtKeyPath, loadOrCreateJwtKey } from '../../src/account/jwt-key.ts';
import { startTestServer } from '../helpers/server.ts';
import { INVALID_SESSION, call, login, sleep } from './client.ts';

const VALID = { name: 'Persisted', demand_id: 'dsp-1', tag: '<iframe src="https://ads.example/x"></iframe>' };

t.test('expired access and refresh tokens', async (t) => {
  // 2 s access tokens: a token refreshed late in a second keeps at least a second of life for
  // the retry on a busy CI host (1 s tokens left it milliseconds there).
  const srv = await startTestServer({ accessTokenTtl: 2, refreshTokenTtl: 4 });
  t.teardown(() => srv.stop());
  // exp is whole seconds (iat rounded down): log in just after a second starts, so the
  // 2 s token is surely alive for the first check.
  await sleep(1020 - (Date.now() % 1000));
  const s = await login(srv.api, srv.customer.username, srv.customer.password);
  t.equal(s.expires_in, 2);
  t.equal((await call(srv.api, 'GET', '/v1/project/list', { token: s.access_token })).status, 200, 'fresh token works');
  await sleep(2100);
  const expired = await call(srv.api, 'GET', '/v1/project/list', { token: s.access_token });
  t.equal(expired.status, 400, 'expired access token');
  t.same(expired.body, INVALID_SESSION);

  // the client's cue: refresh and retry
  const r = await call(srv.api, 'POST', '/refresh_token', { json: { refresh_token: s.refresh_token } });
  t.equal(r.status, 200);
  t.equal((await call(srv.api, 'GET', '/v1/project/list', { token: r.body.access_token })).status, 200, 'retry works');

  await sleep(4100);
  const late = await call(srv.api, 'POST', '/refresh_token', { json: { refresh_token: r.body.refresh_token } });
  t.equal(late.status, 401, 'expired refresh token');
  t.match(late.body.message, /expired/);
});

t.test('jwt.key: created 0600 with 32 bytes; refused when loose or the wrong size', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-jwtkey-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = loadOrCreateJwtKey(dir);
  t.equal(key.length, JWT_KEY_BYTES);
  const path = jwtKeyPath(dir);
  t.equal(statSync(path).mode & 0o777, 0o600);
  t.same(loadOrCreateJwtKey(dir), key, 'the same key on the next start');

  chmodSync(path, 0o644);
  t.throws(() => loadOrCreateJwtKey(dir), { name: 'JwtKeyError', message: /mode 0644.*chmod 600/ });
  chmodSync(path, 0o600);
  writeFileSync(path, Buffer.alloc(16));
  t.throws(() => loadOrCreateJwtKey(dir), JwtKeyError);
  t.throws(() => loadOrCreateJwtKey(dir), { message: /16 bytes, expected 32/ });

  // and the server refuses to start on it, with that message
  await t.rejects(startTestServer({}, dir), { message: /jwt\.key is 16 bytes/ });
});

t.test('sessions, tokens and projects survive a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = await startTestServer({}, dir);
  const { username, password } = first.customer;
  const s = await login(first.api, username, password);
  const p = (await call(first.api, 'POST', '/v1/project/create', { token: s.access_token, json: VALID })).body;
  t.match(p, VALID);
  await first.stop();

  const second = await startTestServer({}, dir);
  t.teardown(() => second.stop());
  t.same((await call(second.api, 'GET', `/v1/project/${p.project_id}`, { token: s.access_token })).body, p, 'old access token and project');
  const r = await call(second.api, 'POST', '/refresh_token', { json: { refresh_token: s.refresh_token } });
  t.equal(r.status, 200, 'old refresh token');
  const list = await call(second.api, 'GET', '/v1/project/list', { token: r.body.access_token });
  t.equal(list.body.total, 1);
  t.same(list.body.projects[0], p);
  t.equal((await call(second.api, 'POST', '/refresh_token', { json: { refresh_token: s.refresh_token } })).status, 401, 'reuse still detected');
  t.equal((await login(second.api, username, password)).token_type, 'bearer', 'the password too');
});
