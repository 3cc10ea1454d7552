// Access tokens judged by their age (`iat`) as well as `exp`: minted while the clock ran
// ahead, or older than the lifetime, they are refused; unit tests with a fake clock, then a
// token minted with the server's own key under a clock a year ahead, sent to the account API.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { AccessTokens, IAT_SKEW_SECONDS } from '../../src/account/access-tokens.ts';
import { loadOrCreateJwtKey } from '../../src/account/jwt-key.ts';
import { startTestServer } from '../helpers/server.ts';
import { INVALID_SESSION, call, login } from './client.ts';

const claims = { user_id: 'u-1', customer_id: 'c-1', session_id: 's-1' };
const YEAR_MS = 365 * 24 * 3600 * 1000;

t.test('a token issued in the future is refused (beyond a small skew)', async (t) => {
  const key = randomBytes(32);
  let now = Date.UTC(2026, 5, 1);
  const tokens = new AccessTokens(key, 900, () => now);
  const ahead = new AccessTokens(key, 900, () => now + YEAR_MS);
  t.same(await tokens.verify(await tokens.issue(claims)), claims, 'a token of now is good');
  t.equal(await tokens.verify(await ahead.issue(claims)), null, 'minted a year ahead: refused, though its exp is a year away');
  const slightly = new AccessTokens(key, 900, () => now + (IAT_SKEW_SECONDS - 5) * 1000);
  t.same(await tokens.verify(await slightly.issue(claims)), claims, 'within the skew: good');
  const beyond = new AccessTokens(key, 900, () => now + (IAT_SKEW_SECONDS + 5) * 1000);
  t.equal(await tokens.verify(await beyond.issue(claims)), null, 'past the skew: refused');
});

t.test('a token older than the lifetime by iat is refused, whatever its exp', async (t) => {
  const key = randomBytes(32);
  let now = Date.UTC(2026, 5, 1);
  const long = new AccessTokens(key, 3600, () => now); // e.g. issued before --access-token-ttl was lowered
  const short = new AccessTokens(key, 900, () => now);
  const token = await long.issue(claims);
  now += 600_000;
  t.same(await short.verify(token), claims, '10 minutes old, lifetime 15: good');
  now += 400_000;
  t.equal(await short.verify(token), null, '16 minutes old: refused though exp is 44 minutes away');
  t.same(await long.verify(token), claims, 'under the longer lifetime it is still good');
  now += 3600_000;
  t.equal(await long.verify(token), null, 'and expires as before');
});

t.test('over HTTP: a token minted while the clock ran a year ahead is refused', async (t) => {
  const srv = await startTestServer();
  t.teardown(() => srv.stop());
  const { username, password } = srv.customer;
  const pair = await login(srv.api, username, password);
  const real = await call(srv.api, 'GET', '/v1/account', { token: pair.access_token });
  t.equal(real.status, 200, 'the token the server issued works');
  // Same key, same session, same claims: only the clock differs.
  const [, payload] = pair.access_token.split('.');
  const c = JSON.parse(Buffer.from(payload!, 'base64url').toString());
  const ahead = new AccessTokens(loadOrCreateJwtKey(srv.dataDir), 900, () => Date.now() + YEAR_MS);
  const token = await ahead.issue({ user_id: c.sub, customer_id: c.cid, session_id: c.sid });
  const r = await call(srv.api, 'GET', '/v1/account', { token });
  t.equal(r.status, 400);
  t.same(r.body, INVALID_SESSION);
});
