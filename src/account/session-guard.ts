// Bearer authentication for the dashboard-facing endpoints on the account port. Any
// problem with the token is the one 400 of spec 5 rule 3: the client's cue to refresh and
// retry. A token stops working at once when its session is revoked or its user disabled.
import { HttpError } from '../base/errors.ts';
import type { Ctx } from '../http/router.ts';
import type { Store } from '../store/db.ts';
import type { AccessTokens } from './access-tokens.ts';
import { liveSessionUser } from './sessions.ts';

export const INVALID_SESSION_MESSAGE = 'Invalid session! Please try again.';

export interface Session {
  user_id: string;
  customer_id: string;
  username: string;
  session_id: string;
}

export function invalidSession(message = INVALID_SESSION_MESSAGE): HttpError {
  return new HttpError('invalid_session', message, 400, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
}

/** No Bearer token sent at all: not an expired session, a request that lacks its header. */
export const NO_BEARER_MESSAGE = 'Invalid session: the request has no access token. Send Authorization: Bearer <access_token> (POST /login gives one).';
/** Another scheme (Basic, a bare key): the header is there, the token is not. */
export const NOT_BEARER_MESSAGE = 'Invalid session: the Authorization header is not a Bearer token. Send Authorization: Bearer <access_token> (POST /login gives one).';

const BEARER_RE = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

export class SessionGuard {
  // One check per request even when a router guard and the handler both ask.
  private readonly checked = new WeakMap<Ctx, Promise<Session>>();

  constructor(
    private readonly store: Store,
    private readonly tokens: AccessTokens,
  ) {}

  /** The caller's session from `Authorization: Bearer …`; throws the 400 invalid_session HttpError. */
  requireSession(ctx: Ctx): Promise<Session> {
    let p = this.checked.get(ctx);
    if (!p) {
      p = this.check(ctx);
      this.checked.set(ctx, p);
    }
    return p;
  }

  private async check(ctx: Ctx): Promise<Session> {
    const header = ctx.req.headers.authorization ?? '';
    const m = BEARER_RE.exec(header);
    if (!m) throw invalidSession(header.trim() === '' ? NO_BEARER_MESSAGE : /^Bearer\b/i.test(header) ? INVALID_SESSION_MESSAGE : NOT_BEARER_MESSAGE);
    const claims = await this.tokens.verify(m[1]!);
    if (!claims) throw invalidSession();
    const username = await liveSessionUser(this.store, claims);
    if (username === undefined) throw invalidSession();
    return { ...claims, username };
  }
}
