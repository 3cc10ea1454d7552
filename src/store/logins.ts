// What a password login is checked against: the user's hash and state, found by username
// in any case. The check itself (same time for unknown users) is verifyPasswordOrDummy
// in secrets.ts.
import type { Queryable } from './db.ts';

export interface LoginRecord {
  user_id: string;
  customer_id: string;
  password_hash: string;
  disabled: boolean;
}

/** What a login needs to check credentials; undefined for an unknown username. */
export async function findUserForLogin(q: Queryable, username: string): Promise<LoginRecord | undefined> {
  if (username.length === 0 || username.length > 64) return undefined;
  return q.one<LoginRecord & Record<string, unknown>>(
    'SELECT user_id, customer_id, password_hash, disabled FROM users WHERE lower(username) = lower($1)',
    [username],
  );
}

/**
 * Replaces a user's password hash by one of the same password at the current cost, after a
 * login proved the password. Only if the hash is still the one checked (a password change
 * in between wins), and without touching updated_at: sessions stay valid.
 */
export async function upgradePasswordHash(q: Queryable, userId: string, checked: string, upgraded: string): Promise<void> {
  await q.run('UPDATE users SET password_hash = $1 WHERE user_id = $2 AND password_hash = $3', [upgraded, userId, checked]);
}
