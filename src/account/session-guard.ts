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

export function invalidSession(): HttpError {
  return new HttpError('invalid_session', INVALID_SESSION_MESSAGE, 400, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
}

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
    const m = BEARER_RE.exec(ctx.req.headers.authorization ?? '');
    if (!m) throw invalidSession();
    const claims = await this.tokens.verify(m[1]!);
    if (!claims) throw invalidSession();
    const username = await liveSessionUser(this.store, claims);
    if (username === undefined) throw invalidSession();
    return { ...claims, username };
  }
}
