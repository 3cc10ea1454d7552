// Login sessions and their refresh tokens in the store. A session is one refresh-token
// family: each use of a refresh token retires it and issues the next; presenting a retired
// token again means it leaked, so the whole session is revoked (reuse detection).
// A session also ends when its user is disabled or changes password: it remembers the
// user's updated_at at login (user_version) and stops matching once that moves.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Queryable, Store } from '../store/db.ts';
import { hashKey } from '../base/secrets.ts';
import { oneAtATime, retryConflicts } from '../store/serial.ts';

export const REFRESH_TOKEN_BYTES = 32;
/** 32 bytes in base64url without padding. */
export const REFRESH_TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

export interface SessionOwner {
  user_id: string;
  customer_id: string;
  session_id: string;
}

export type RefreshRefusal = 'unknown' | 'revoked' | 'reused' | 'expired' | 'user_changed';
export type RefreshOutcome = { ok: true; owner: SessionOwner; refresh_token: string } | { ok: false; reason: RefreshRefusal };

export function newRefreshToken(): string {
  return randomBytes(REFRESH_TOKEN_BYTES).toString('base64url');
}

const ms = (n: string) => `epoch_ms(${n}::BIGINT)`;

async function insertRefreshToken(q: Queryable, sessionId: string, userId: string, now: number, ttlSeconds: number): Promise<string> {
  const token = newRefreshToken();
  await q.run(
    `INSERT INTO refresh_tokens (token_hash, session_id, user_id, issued_at, expires_at) VALUES ($hash, $sid, $uid, ${ms('$now')}, ${ms('$exp')})`,
    { hash: hashKey(token), sid: sessionId, uid: userId, now, exp: now + ttlSeconds * 1000 },
  );
  return token;
}

/**
 * Opens a session for a user who just proved their password; undefined when the user has
 * been disabled or removed since. Returns the first refresh token of the family.
 */
export async function startSession(
  store: Store,
  input: { user_id: string; refreshTtl: number },
): Promise<{ owner: SessionOwner; refresh_token: string } | undefined> {
  return store.tx(async (q) => {
    const u = await q.one<{ customer_id: string; v: bigint }>(
      'SELECT customer_id, epoch_ms(updated_at) AS v FROM users WHERE user_id = $1 AND NOT disabled',
      [input.user_id],
    );
    if (!u) return undefined;
    const now = Date.now();
    const sessionId = randomUUID();
    await q.run(
      `INSERT INTO sessions (session_id, user_id, customer_id, user_version, created_at) VALUES ($sid, $uid, $cid, $v, ${ms('$now')})`,
      { sid: sessionId, uid: input.user_id, cid: u.customer_id, v: u.v, now },
    );
    const token = await insertRefreshToken(q, sessionId, input.user_id, now, input.refreshTtl);
    return { owner: { user_id: input.user_id, customer_id: u.customer_id, session_id: sessionId }, refresh_token: token };
  });
}

async function revoke(q: Queryable, sessionId: string, reason: string, now: number): Promise<void> {
  await q.run(`UPDATE sessions SET revoked_at = ${ms('$now')}, revoked_reason = $reason WHERE session_id = $sid AND revoked_at IS NULL`, {
    sid: sessionId,
    reason,
    now,
  });
}

interface TokenRow {
  session_id: string;
  user_id: string;
  customer_id: string;
  used: boolean;
  expired: boolean;
  revoked: boolean;
  user_ok: boolean;
}

/** Retires `token` and issues its successor, or says why it cannot. */
async function rotateOnce(store: Store, token: string, refreshTtl: number): Promise<RefreshOutcome> {
  return store.tx(async (q) => {
    const now = Date.now();
    const row = await q.one<TokenRow & Record<string, unknown>>(
      `SELECT t.session_id, s.user_id, s.customer_id,
              t.used_at IS NOT NULL AS used,
              t.expires_at <= ${ms('$now')} AS expired,
              s.revoked_at IS NOT NULL AS revoked,
              coalesce(NOT u.disabled AND epoch_ms(u.updated_at) = s.user_version, false) AS user_ok
       FROM refresh_tokens t JOIN sessions s USING (session_id) LEFT JOIN users u ON u.user_id = s.user_id
       WHERE t.token_hash = $hash`,
      { hash: hashKey(token), now },
    );
    if (!row) return { ok: false, reason: 'unknown' };
    if (row.revoked) return { ok: false, reason: 'revoked' };
    if (row.used) {
      await revoke(q, row.session_id, 'reuse', now);
      return { ok: false, reason: 'reused' };
    }
    if (row.expired) return { ok: false, reason: 'expired' };
    if (!row.user_ok) {
      await revoke(q, row.session_id, 'user_changed', now);
      return { ok: false, reason: 'user_changed' };
    }
    await q.run(`UPDATE refresh_tokens SET used_at = ${ms('$now')} WHERE token_hash = $hash`, { hash: hashKey(token), now });
    const next = await insertRefreshToken(q, row.session_id, row.user_id, now, refreshTtl);
    return {
      ok: true,
      owner: { user_id: row.user_id, customer_id: row.customer_id, session_id: row.session_id },
      refresh_token: next,
    };
  });
}

/**
 * Exchanges a refresh token for its successor. Rotations of one process are serialised;
 * a write conflict with another writer is still retried a few times.
 */
export function rotateRefreshToken(store: Store, token: string, refreshTtl: number): Promise<RefreshOutcome> {
  // One rotation at a time per store: two uses of one token then meet in order (the second
  // sees it used and revokes the family) instead of racing into write conflicts that a busy
  // host could retry past their limit (a 500 and a family left alive).
  return oneAtATime(store, 'refresh-token rotation', () => retryConflicts(() => rotateOnce(store, token, refreshTtl)));
}

/** Revokes the session `token` belongs to (logout); false when the token is unknown. */
export async function endSessionOf(store: Store, token: string): Promise<boolean> {
  const row = await store.one<{ session_id: string }>('SELECT session_id FROM refresh_tokens WHERE token_hash = $1', [hashKey(token)]);
  if (!row) return false;
  await revoke(store, row.session_id, 'logout', Date.now());
  return true;
}

/**
 * The username when the session of an access token is still good: not revoked, the user
 * exists, is enabled and unchanged since login, and owns the claimed customer.
 */
export async function liveSessionUser(q: Queryable, owner: SessionOwner): Promise<string | undefined> {
  const row = await q.one<{ username: string }>(
    `SELECT u.username FROM sessions s JOIN users u ON u.user_id = s.user_id
     WHERE s.session_id = $sid AND s.user_id = $uid AND u.customer_id = $cid AND s.customer_id = $cid
       AND s.revoked_at IS NULL AND NOT u.disabled AND epoch_ms(u.updated_at) = s.user_version`,
    { sid: owner.session_id, uid: owner.user_id, cid: owner.customer_id },
  );
  return row?.username;
}

/**
 * Deletes refresh tokens expired for longer than an access token lives, then sessions left
 * without tokens: every access token such a session issued has expired by then.
 */
export async function pruneSessions(store: Store, accessTtl: number): Promise<void> {
  const cutoff = Date.now() - accessTtl * 1000;
  await store.run(`DELETE FROM refresh_tokens WHERE expires_at < ${ms('$cutoff')}`, { cutoff });
  await store.run('DELETE FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.session_id = s.session_id)');
}
