// Dashboard users of a customer: one row each, the password stored as a scrypt hash.
// Usernames are unique regardless of case, so `Admin` and `admin` cannot both exist and
// every lookup by username can ignore case.
import { randomUUID } from 'node:crypto';
import { requireCustomer } from './customer-ref.ts';
import { isoTime, type Queryable, type Store } from './db.ts';
import { hashPassword, passwordProblem } from '../base/secrets.ts';
import { StoreError } from './store-error.ts';
import { oneAtATime } from './serial.ts';
import { quoted } from '../base/text.ts';

export interface User {
  user_id: string;
  customer_id: string;
  username: string;
  disabled: boolean;
  created_at: string;
  updated_at: string;
}

const USERNAME_RE = /^[A-Za-z0-9._@-]{3,64}$/;
/** What a username may be (USERNAME_RE in words). */
export const USERNAME_RULE = '3 to 64 characters of letters, digits and . _ @ -';

/** The username has a username's form (no stored username has another: every one was checked at its creation). */
export function usernameFormOk(username: string): boolean {
  return USERNAME_RE.test(username);
}

export function checkUsername(username: string): void {
  if (!usernameFormOk(username)) throw new StoreError('invalid', `username must be ${USERNAME_RULE}`);
}

export function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new StoreError('invalid', problem);
}

async function usernameTaken(q: Queryable, username: string): Promise<boolean> {
  return (await q.one('SELECT 1 AS x FROM users WHERE lower(username) = lower($1)', [username])) !== undefined;
}

/** Inserts a user of `customerId` (inside the caller's transaction); conflict when the username is taken. */
export async function insertUser(q: Queryable, customerId: string, username: string, passwordHash: string): Promise<string> {
  if (await usernameTaken(q, username)) throw new StoreError('conflict', `username "${username}" is already taken`);
  const userId = randomUUID();
  await q.run('INSERT INTO users (user_id, customer_id, username, password_hash) VALUES ($1, $2, $3, $4)', [
    userId,
    customerId,
    username,
    passwordHash,
  ]);
  return userId;
}

/** Turns the unique-constraint error of a lost race into the same conflict as the pre-check (DuckDB names the duplicate key, not always the column). */
export function asUsernameConflict(e: unknown, username: string): unknown {
  if (e instanceof Error && !(e instanceof StoreError) && /constraint/i.test(e.message) && /username|duplicate key/i.test(e.message)) {
    return new StoreError('conflict', `username "${username}" is already taken`);
  }
  return e;
}

/**
 * `fn` (a transaction that inserts a user) once no other such transaction of this store runs.
 * The check that a name is free ignores case and DuckDB's UNIQUE does not, and its
 * transactions do not see each other: run side by side, `alice` and `ALICE` both passed the
 * check and both were stored, and a reference by that name then found either customer.
 * This process is the database's only writer, so one queue here closes the race.
 */
export function insertingUser<T>(store: Store, username: string, fn: () => Promise<T>): Promise<T> {
  return oneAtATime(store, 'usernames', fn).catch((e: unknown) => {
    throw asUsernameConflict(e, username);
  });
}

export async function addUser(
  store: Store,
  input: { customer: string; username: string; password: string },
): Promise<{ user_id: string; customer_id: string; username: string }> {
  checkUsername(input.username);
  checkPassword(input.password);
  const passwordHash = await hashPassword(input.password);
  return insertingUser(store, input.username, () =>
    store.tx(async (q) => {
      const c = await requireCustomer(q, input.customer);
      const userId = await insertUser(q, c.customer_id, input.username, passwordHash);
      return { user_id: userId, customer_id: c.customer_id, username: input.username };
    }),
  );
}

/** Updates one user found by username (any case); not_found when there is none. Returns the stored username. */
async function updateUser(q: Queryable, username: string, set: string, params: Record<string, string | boolean>): Promise<string> {
  const row = await q.one<{ username: string }>('SELECT username FROM users WHERE lower(username) = lower($u)', {
    u: username,
  });
  if (!row) throw new StoreError('not_found', `no user ${quoted(username)}`);
  await q.run(`UPDATE users SET ${set}, updated_at = epoch_ms($now::BIGINT) WHERE username = $u`, {
    ...params,
    u: row.username,
    now: Date.now(),
  });
  return row.username;
}

export async function setPassword(q: Queryable, input: { username: string; password: string }): Promise<{ username: string }> {
  checkPassword(input.password);
  const hash = await hashPassword(input.password);
  return { username: await updateUser(q, input.username, 'password_hash = $hash', { hash }) };
}

export async function setUserDisabled(
  q: Queryable,
  input: { username: string; disabled: boolean },
): Promise<{ username: string; disabled: boolean }> {
  const username = await updateUser(q, input.username, 'disabled = $disabled', { disabled: input.disabled });
  return { username, disabled: input.disabled };
}

export async function getUser(q: Queryable, userId: string): Promise<User | undefined> {
  const r = await q.one('SELECT user_id, customer_id, username, disabled, created_at, updated_at FROM users WHERE user_id = $1', [
    userId,
  ]);
  if (!r) return undefined;
  return {
    user_id: r.user_id as string,
    customer_id: r.customer_id as string,
    username: r.username as string,
    disabled: r.disabled as boolean,
    created_at: isoTime(r.created_at),
    updated_at: isoTime(r.updated_at),
  };
}
