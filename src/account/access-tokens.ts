// Access tokens: short-lived HS256 JWTs (jose). They carry who the caller is; whether the
// session and the user are still good is checked against the store on every request.
// A token's age is judged by its `iat` as well as its `exp`: one minted while the clock ran
// ahead (iat in the future) is refused once the clock is right again, and so is one older
// than the lifetime, whatever its `exp` says.
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';

const ISSUER = 'ivtd';
const AUDIENCE = 'ivtd-api';
/** Longer strings are refused before any crypto: a real token is about 400 characters. */
export const ACCESS_TOKEN_MAX_LENGTH = 4096;
/** How far in the future a token's `iat` may be (seconds): clock steps of an NTP correction. */
export const IAT_SKEW_SECONDS = 60;

export interface AccessClaims {
  user_id: string;
  customer_id: string;
  /** The session (refresh-token family) the token was issued for. */
  session_id: string;
}

export class AccessTokens {
  constructor(
    private readonly key: Uint8Array,
    /** Lifetime in seconds (--access-token-ttl). */
    readonly ttl: number,
    /** Milliseconds clock; tests pass their own. */
    private readonly now: () => number = Date.now,
  ) {}

  /** claims: sub = user_id, cid = customer_id, sid = session_id, jti, iat, exp. */
  async issue(c: AccessClaims): Promise<string> {
    const now = Math.floor(this.now() / 1000);
    return new SignJWT({ cid: c.customer_id, sid: c.session_id })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(c.user_id)
      .setJti(randomUUID())
      .setIssuedAt(now)
      .setExpirationTime(now + this.ttl)
      .sign(this.key);
  }

  /**
   * The claims of a genuine, unexpired token; null for anything else, including a token
   * issued more than IAT_SKEW_SECONDS in the future or more than `ttl` seconds ago.
   */
  async verify(token: string): Promise<AccessClaims | null> {
    if (token.length > ACCESS_TOKEN_MAX_LENGTH) return null;
    try {
      const nowMs = this.now();
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: AUDIENCE,
        typ: 'JWT',
        requiredClaims: ['sub', 'cid', 'sid', 'jti', 'iat', 'exp'],
        currentDate: new Date(nowMs),
      });
      const { sub, cid, sid, iat } = payload;
      if (typeof sub !== 'string' || typeof cid !== 'string' || typeof sid !== 'string' || typeof iat !== 'number') return null;
      // Checked here rather than with jose's clockTolerance, which would also stretch `exp`.
      const age = nowMs / 1000 - iat;
      if (age < -IAT_SKEW_SECONDS || age > this.ttl) return null;
      return { user_id: sub, customer_id: cid, session_id: sid };
    } catch {
      return null;
    }
  }
}
