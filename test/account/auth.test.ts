// POST /login, /refresh_token and /logout through the real account listener.
import t from 'tap';
import { decodeJwt } from 'jose';
import { setPassword, setUserDisabled, addUser } from '../../src/store/users.ts';
import { SCRYPT, hashPassword, needsRehash } from '../../src/base/secrets.ts';
import { startTestServer } from '../helpers/server.ts';
import { INVALID_SESSION, call, login } from './client.ts';

const srv = await startTestServer();
t.teardown(() => srv.stop());
const api = srv.api;
const { username, password } = srv.customer;

t.test('login returns a bearer token pair', async (t) => {
  const r = await call(api, 'POST', '/login', { form: { username, password } });
  t.equal(r.status, 200);
  t.match(r.headers.get('cache-control'), /no-store/);
  t.equal(r.body.token_type, 'bearer');
  t.equal(r.body.expires_in, 900);
  t.match(r.body.refresh_token, /^[A-Za-z0-9_-]{43}$/);
  const claims = decodeJwt(r.body.access_token);
  t.equal(claims.cid, srv.customer.customer_id);
  t.type(claims.sub, 'string');
  t.type(claims.jti, 'string');
  t.equal((claims.exp as number) - (claims.iat as number), 900);
  // usernames are case-insensitive; OAuth2 clients send grant_type=password
  const again = await call(api, 'POST', '/login', { form: { username: username.toUpperCase(), password, grant_type: 'password' } });
  t.equal(again.status, 200);
  t.not(again.body.refresh_token, r.body.refresh_token);
  t.not(again.body.access_token, r.body.access_token);
});

t.test('login: 422 for missing, empty or badly sent fields', async (t) => {
  const cases: Array<[string, Parameters<typeof call>[3], string]> = [
    ['missing username', { form: { password } }, 'username'],
    ['missing password', { form: { username } }, 'password'],
    ['empty password', { form: { username, password: '' } }, 'password'],
    ['empty username', { form: { username: '', password } }, 'username'],
    ['repeated username', { raw: `username=${username}&username=x&password=${password}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 'username'],
    ['undecodable percent-escape', { raw: `username=${username}&password=%FF%FE`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 'password'],
    ['other grant type', { form: { username, password, grant_type: 'client_credentials' } }, 'grant_type'],
    ['over-long password', { form: { username, password: 'x'.repeat(1025) } }, 'password'],
    // Spec 4.1: the wrong format is a 422 (no account can have such a name).
    ['username with a space', { form: { username: 'ad min', password } }, 'username'],
    ['username of two characters', { form: { username: 'ad', password } }, 'username'],
    ['username of 65 characters', { form: { username: 'a'.repeat(65), password } }, 'username'],
    ['username past ASCII', { form: { username: 'adminé', password } }, 'username'],
  ];
  for (const [name, opts, field] of cases) {
    const r = await call(api, 'POST', '/login', opts);
    t.equal(r.status, 422, name);
    t.equal(r.body.error, 'unprocessable', name);
    t.equal(r.body.field, field, name);
    t.type(r.body.message, 'string', name);
  }
  const asJson = await call(api, 'POST', '/login', { json: { username, password } });
  t.equal(asJson.status, 422, 'JSON instead of a form');
  t.match(asJson.body, { error: 'unprocessable', message: /x-www-form-urlencoded/ });
  const noType = await call(api, 'POST', '/login', { raw: `username=${username}&password=x` });
  t.equal(noType.status, 422, 'no content type');
  const big = await call(api, 'POST', '/login', { form: { username, password: 'x'.repeat(9000) } });
  t.equal(big.status, 413, 'body over the login limit');
  const get = await call(api, 'GET', '/login');
  t.equal(get.status, 405);
  t.equal(get.headers.get('allow'), 'POST', 'Allow: the login takes POST only');
});

t.test('wrong credentials: one 401 for unknown user, wrong password and disabled user', async (t) => {
  const other = await addUser(srv.server.store, { customer: srv.customer.customer_id, username: 'soon-disabled', password: 'pass-word-1' });
  await setUserDisabled(srv.server.store, { username: other.username, disabled: true });
  const unknown = await call(api, 'POST', '/login', { form: { username: 'nobody-here', password } });
  const wrong = await call(api, 'POST', '/login', { form: { username, password: 'not the password' } });
  const disabled = await call(api, 'POST', '/login', { form: { username: 'soon-disabled', password: 'pass-word-1' } });
  for (const r of [unknown, wrong, disabled]) {
    t.equal(r.status, 401);
    t.same(r.body, { error: 'unauthorized', message: 'Incorrect username or password.' });
  }
  // Same work for a user that does not exist: both run one scrypt. Compare medians, loosely.
  const time = async (u: string) => {
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await call(api, 'POST', '/login', { form: { username: u, password: `wrong-${i}` } });
      ms.push(performance.now() - t0);
    }
    return ms.sort((a, b) => a - b)[1]!;
  };
  const tUnknown = await time('ghost-user');
  const tKnown = await time('soon-disabled');
  t.ok(tUnknown > tKnown / 3 && tUnknown < tKnown * 3, `unknown ${tUnknown.toFixed(1)} ms vs known ${tKnown.toFixed(1)} ms`);
});

t.test('refresh rotates the token; a reused token revokes the whole session', async (t) => {
  const first = await login(api, username, password);
  const r1 = await call(api, 'POST', '/refresh_token', { json: { refresh_token: first.refresh_token } });
  t.equal(r1.status, 200);
  t.equal(r1.body.token_type, 'bearer');
  t.not(r1.body.refresh_token, first.refresh_token, 'rotated');
  t.equal((await call(api, 'GET', '/v1/project/list', { token: r1.body.access_token })).status, 200, 'new access token works');

  // camelCase key accepted too
  const r2 = await call(api, 'POST', '/refresh_token', { json: { refreshToken: r1.body.refresh_token } });
  t.equal(r2.status, 200);

  // the first token again: refused, and the family is revoked
  const reuse = await call(api, 'POST', '/refresh_token', { json: { refresh_token: first.refresh_token } });
  t.equal(reuse.status, 401);
  t.match(reuse.body, { error: 'invalid_grant', message: /already used/ });
  const latest = await call(api, 'POST', '/refresh_token', { json: { refresh_token: r2.body.refresh_token } });
  t.equal(latest.status, 401, 'the newest token of the family is revoked too');
  t.match(latest.body.message, /ended|revoked/);
  const access = await call(api, 'GET', '/v1/project/list', { token: r2.body.access_token });
  t.equal(access.status, 400, 'access tokens of the revoked session stop at once');
  t.same(access.body, INVALID_SESSION);

  // other sessions of the same user are untouched
  const other = await login(api, username, password);
  t.equal((await call(api, 'POST', '/refresh_token', { json: { refresh_token: other.refresh_token } })).status, 200);
});

t.test('two concurrent uses of one refresh token: at most one wins', async (t) => {
  const s = await login(api, username, password);
  const rs = await Promise.all([0, 1, 2].map(() => call(api, 'POST', '/refresh_token', { json: { refresh_token: s.refresh_token } })));
  const ok = rs.filter((r) => r.status === 200);
  t.ok(ok.length <= 1, `${ok.length} succeeded`);
  t.ok(rs.every((r) => r.status === 200 || r.status === 401), rs.map((r) => r.status).join(','));
  // the reuse revoked the family, so even the winner's token is dead
  for (const r of ok) t.equal((await call(api, 'POST', '/refresh_token', { json: { refresh_token: r.body.refresh_token } })).status, 401);
});

t.test('refresh_token: 422 for a missing or malformed token, 401 for an unknown one', async (t) => {
  const bad: Array<[string, Parameters<typeof call>[3]]> = [
    ['no token', { json: {} }],
    ['a number', { json: { refresh_token: 42 } }],
    ['too short', { json: { refresh_token: 'abc' } }],
    ['bad characters', { json: { refresh_token: `${'a'.repeat(42)}!` } }],
    ['both keys', { json: { refresh_token: 'a'.repeat(43), refreshToken: 'a'.repeat(43) } }],
    ['not JSON', { raw: '{"refresh_token":', headers: { 'content-type': 'application/json' } }],
    ['a JSON array', { raw: '["x"]', headers: { 'content-type': 'application/json' } }],
    ['form-encoded', { form: { refresh_token: 'a'.repeat(43) } }],
  ];
  for (const [name, opts] of bad) {
    const r = await call(api, 'POST', '/refresh_token', opts);
    t.equal(r.status, 422, name);
    t.equal(r.body.error, 'unprocessable', name);
  }
  const unknown = await call(api, 'POST', '/refresh_token', { json: { refresh_token: 'A'.repeat(43) } });
  t.equal(unknown.status, 401);
  t.match(unknown.body.message, /not recognised/);
});

t.test('logout ends the session: its refresh and access tokens stop working', async (t) => {
  const s = await login(api, username, password);
  const out = await call(api, 'POST', '/logout', { json: { refresh_token: s.refresh_token } });
  t.equal(out.status, 204);
  t.equal(out.body, null);
  t.equal((await call(api, 'POST', '/refresh_token', { json: { refresh_token: s.refresh_token } })).status, 401);
  t.same((await call(api, 'GET', '/v1/account', { token: s.access_token })).body, INVALID_SESSION);
  t.equal((await call(api, 'POST', '/logout', { json: { refresh_token: s.refresh_token } })).status, 204, 'twice is fine');
  t.equal((await call(api, 'POST', '/logout', { json: { refresh_token: 'short' } })).status, 422);
});

t.test('disabling a user or changing the password ends their sessions at once', async (t) => {
  const u = await addUser(srv.server.store, { customer: srv.customer.customer_id, username: 'will-change', password: 'first-pass-1' });
  const s = await login(api, u.username, 'first-pass-1');
  t.equal((await call(api, 'GET', '/v1/account', { token: s.access_token })).status, 200);

  await setPassword(srv.server.store, { username: u.username, password: 'second-pass-2' });
  t.same((await call(api, 'GET', '/v1/account', { token: s.access_token })).body, INVALID_SESSION, 'access token ends');
  const rr = await call(api, 'POST', '/refresh_token', { json: { refresh_token: s.refresh_token } });
  t.equal(rr.status, 401, 'refresh token ends');
  t.match(rr.body.message, /changed/);

  const s2 = await login(api, u.username, 'second-pass-2');
  await setUserDisabled(srv.server.store, { username: u.username, disabled: true });
  const after = await call(api, 'GET', '/v1/project/list', { token: s2.access_token });
  t.equal(after.status, 400);
  t.same(after.body, INVALID_SESSION);
  t.equal((await call(api, 'POST', '/refresh_token', { json: { refresh_token: s2.refresh_token } })).status, 401);
  t.equal((await call(api, 'POST', '/login', { form: { username: u.username, password: 'second-pass-2' } })).status, 401);

  // enabling again does not revive the old session, but allows a new login
  await setUserDisabled(srv.server.store, { username: u.username, disabled: false });
  t.equal((await call(api, 'GET', '/v1/project/list', { token: s2.access_token })).status, 400);
  const s3 = await login(api, u.username, 'second-pass-2');
  t.equal((await call(api, 'GET', '/v1/project/list', { token: s3.access_token })).status, 200);
});

t.test('a password hashed at the old cost is upgraded at login; the sessions it has stay valid', async (t) => {
  const user = `legacy-${Date.now()}`;
  const pw = 'an old enough password';
  await addUser(srv.server.store, { customer: srv.customer.customer_id, username: user, password: pw });
  const old = await hashPassword(pw, { N: 16384, r: 8, p: 1 });
  await srv.server.store.run('UPDATE users SET password_hash = $1 WHERE username = $2', [old, user]);
  const stored = async () => (await srv.server.store.one<{ h: string }>('SELECT password_hash AS h FROM users WHERE username = $1', [user]))!.h;

  const first = await login(api, user, pw);
  const upgraded = await stored();
  t.not(upgraded, old);
  t.match(upgraded, new RegExp(`^scrypt\\$${SCRYPT.N}\\$${SCRYPT.r}\\$${SCRYPT.p}\\$`), 'now at the current cost');
  t.equal(needsRehash(upgraded), false);
  const refreshed = await call(api, 'POST', '/refresh_token', { json: { refresh_token: first.refresh_token } });
  t.equal(refreshed.status, 200, 'the session started by that login is not ended by the upgrade');
  await login(api, user, pw);
  t.equal(await stored(), upgraded, 'upgraded once');
  t.equal((await call(api, 'POST', '/login', { form: { username: user, password: 'not the password' } })).status, 401);
});
