// POST /login (OAuth2 password grant, form-encoded), POST /refresh_token and POST /logout
// (JSON refresh token). Token responses: {access_token, refresh_token, token_type, expires_in}.
import type { Config } from '../base/config.ts';
import { HttpError } from '../base/errors.ts';
import { log } from '../base/log.ts';
import { readForm, readJsonObject, sendJson, type Ctx, type Router } from '../http/router.ts';
import { tooManyRequests } from '../http/throttle.ts';
import { findUserForLogin, upgradePasswordHash } from '../store/logins.ts';
import type { Store } from '../store/db.ts';
import { USERNAME_RULE, usernameFormOk } from '../store/users.ts';
import { PASSWORD_MAX, hashPassword, needsRehash, verifyPasswordOrDummy } from '../base/secrets.ts';
import type { AccessTokens } from './access-tokens.ts';
import { FieldError } from './field-error.ts';
import type { LoginThrottle } from './login-throttle.ts';
import { REFRESH_TOKEN_RE, endSessionOf, rotateRefreshToken, startSession, type RefreshRefusal, type SessionOwner } from './sessions.ts';

const LOGIN_BODY_LIMIT = 8 * 1024;
const TOKEN_BODY_LIMIT = 4 * 1024;
/** Longer usernames cannot exist (stored ones are at most 64); refused as a wrong format. */
const USERNAME_INPUT_MAX = 256;
/** The JSON keys a refresh token is accepted under (spec 4.2: the key depends on the deployment). */
export const REFRESH_TOKEN_KEYS = ['refresh_token', 'refreshToken'] as const;

export const BAD_CREDENTIALS_MESSAGE = 'Incorrect username or password.';

const REFUSALS: Record<RefreshRefusal, string> = {
  unknown: 'The refresh token is not recognised (or has been cleaned up after expiring); log in again.',
  revoked: 'The session of this refresh token has ended (logged out or revoked); log in again.',
  reused: 'This refresh token was already used once; as a precaution the whole session is now revoked. Log in again.',
  expired: 'The refresh token has expired; log in again.',
  user_changed: "The user's password or status has changed since this session began; log in again.",
};

export interface AuthDeps {
  store: Store;
  config: Config;
  tokens: AccessTokens;
  throttle: LoginThrottle;
}

async function tokenResponse(tokens: AccessTokens, owner: SessionOwner, refreshToken: string) {
  return { access_token: await tokens.issue(owner), refresh_token: refreshToken, token_type: 'bearer', expires_in: tokens.ttl };
}

/** One non-empty occurrence of a form field, else a 422 naming it. */
function formField(form: URLSearchParams, name: string, max: number): string {
  const all = form.getAll(name);
  if (all.length === 0) throw new FieldError(name, `${name} is required.`);
  if (all.length > 1) throw new FieldError(name, `${name} is given more than once.`);
  const v = all[0]!;
  if (v === '') throw new FieldError(name, `${name} must not be empty.`);
  if (v.length > max) throw new FieldError(name, `${name} is longer than ${max} characters.`);
  // URLSearchParams turns undecodable percent-escapes into U+FFFD instead of failing.
  if (v.includes('\uFFFD')) throw new FieldError(name, `${name} is not valid UTF-8.`);
  return v;
}

/** The refresh token of a JSON body under either accepted key; 422 when missing or malformed. */
export function refreshTokenFrom(body: Record<string, unknown>): string {
  const present = REFRESH_TOKEN_KEYS.filter((k) => body[k] !== undefined);
  if (present.length === 0) throw new FieldError('refresh_token', 'refresh_token is required.');
  if (present.length > 1) throw new FieldError('refresh_token', 'Send the token as refresh_token or refreshToken, not both.');
  const key = present[0]!;
  const v = body[key];
  if (typeof v !== 'string') throw new FieldError(key, `${key} must be a string.`);
  if (!REFRESH_TOKEN_RE.test(v)) throw new FieldError(key, `${key} is malformed: expected the 43-character token returned by /login.`);
  return v;
}

export function mountAuthRoutes(router: Router, deps: AuthDeps): void {
  const { store, config, tokens, throttle } = deps;

  router.post('/login', async (ctx: Ctx) => {
    const form = await readForm(ctx.req, LOGIN_BODY_LIMIT);
    const grant = form.getAll('grant_type');
    if (grant.length > 1 || (grant.length === 1 && grant[0] !== 'password')) {
      throw new FieldError('grant_type', 'grant_type must be "password" (or left out).');
    }
    const username = formField(form, 'username', USERNAME_INPUT_MAX);
    // Spec 4.1: a field of the wrong format is a 422. No account has such a name, and the
    // form is public, so saying so tells nothing about who has an account.
    if (!usernameFormOk(username)) throw new FieldError('username', `username has the wrong format: ${USERNAME_RULE}.`);
    const password = formField(form, 'password', PASSWORD_MAX);

    // Counted as a failure before the check (a success takes it back), and may wait its
    // turn for a check; a client that leaves meanwhile gives up its place: see login-throttle.ts.
    const left = new AbortController();
    const onClose = () => left.abort();
    ctx.res.once('close', onClose);
    const admission = await throttle.enter(username, ctx.ip, left.signal).finally(() => ctx.res.off('close', onClose));
    if (!admission.ok) {
      const wait = admission.retryAfter;
      throw tooManyRequests(
        admission.reason === 'locked'
          ? `Too many failed logins; try again in ${wait} seconds.`
          : `Too many logins are being checked at once; try again in ${wait} second${wait === 1 ? '' : 's'}.`,
        wait,
      );
    }
    let session: Awaited<ReturnType<typeof startSession>> | undefined;
    try {
      // Unknown users are checked against a dummy hash: the same work and the same answer.
      const user = await findUserForLogin(store, username);
      const ok = await verifyPasswordOrDummy(password, user?.password_hash);
      session = ok && user && !user.disabled ? await startSession(store, { user_id: user.user_id, refreshTtl: config.refreshTokenTtl }) : undefined;
      // Within the attempt's place in flight: the upgrade is one more check's worth of scrypt.
      // A failed upgrade leaves the old hash (it still verifies) and the login stands.
      if (session && user && needsRehash(user.password_hash)) {
        const stored = user.password_hash;
        await hashPassword(password)
          .then((upgraded) => upgradePasswordHash(store, user.user_id, stored, upgraded))
          .catch((e: Error) => log.warn({ err: e.message }, 'login: could not upgrade a password hash; will try at the next login'));
      }
    } finally {
      if (session) admission.attempt.succeeded();
      else admission.attempt.failed();
    }
    if (!session) throw new HttpError('unauthorized', BAD_CREDENTIALS_MESSAGE);
    sendJson(ctx.res, 200, await tokenResponse(tokens, session.owner, session.refresh_token));
  });

  router.post('/refresh_token', async (ctx: Ctx) => {
    const token = refreshTokenFrom(await readJsonObject(ctx.req, { limit: TOKEN_BODY_LIMIT }));
    const r = await rotateRefreshToken(store, token, config.refreshTokenTtl);
    if (!r.ok) throw new HttpError('invalid_grant', REFUSALS[r.reason]);
    sendJson(ctx.res, 200, await tokenResponse(tokens, r.owner, r.refresh_token));
  });

  // Ends the whole session (every refresh token of the family and its access tokens).
  // Unknown or already-ended sessions also get 204: logging out twice is not an error.
  router.post('/logout', async (ctx: Ctx) => {
    const token = refreshTokenFrom(await readJsonObject(ctx.req, { limit: TOKEN_BODY_LIMIT }));
    await endSessionOf(store, token);
    ctx.res.writeHead(204, { 'Cache-Control': 'no-store' });
    ctx.res.end();
  });
}
