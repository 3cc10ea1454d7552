// Customers, their dashboard users and their API keys. Plaintext keys and passwords
// leave this module once, at creation or rotation; only hashes are stored.
import { randomUUID } from 'node:crypto';
import type { Queryable, Store } from './db.ts';
import { hashKey, hashPassword, newKey, passwordProblem, randomPassword, type KeyKind } from './secrets.ts';

export type StoreErrorCode = 'not_found' | 'conflict' | 'invalid';
export const STORE_ERROR_CODES: readonly StoreErrorCode[] = ['not_found', 'conflict', 'invalid'];

/** An expected failure of a provisioning operation, with a message fit to show a person. */
export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

export interface CreatedCustomer {
  customer_id: string;
  partner_id: string;
  prebid_key: string;
  reporting_key: string;
  username: string;
}

export interface Customer {
  customer_id: string;
  partner_id: string;
  name: string;
  created_at: string;
}

export interface CustomerListing extends Customer {
  users: Array<{ username: string; disabled: boolean }>;
  /** Keys that still work; key_prefix is the first characters of the key, enough to tell keys apart. */
  keys: Array<{ kind: KeyKind; key_prefix: string; created_at: string; expires_at: string | null }>;
}

export interface User {
  user_id: string;
  customer_id: string;
  username: string;
  disabled: boolean;
  created_at: string;
  updated_at: string;
}

export interface LoginRecord {
  user_id: string;
  customer_id: string;
  password_hash: string;
  disabled: boolean;
}

export interface ActivePrebidKey {
  customer_id: string;
  partner_id: string;
  key_hash: string;
  expires_at_ms: number | null;
}

export interface RotatedKey {
  customer_id: string;
  kind: KeyKind;
  key: string;
  /** When the keys this one replaces stop working; null when there were none. */
  previous_expires_at: string | null;
}

const USERNAME_RE = /^[A-Za-z0-9._@-]{3,64}$/;
const NAME_MAX = 200;
const KEY_PREFIX_LEN = 8; // "ivp_" + 4 characters of the random part
const FIRST_CUSTOMER = { name: 'default', username: 'admin' } as const;

function checkUsername(username: string): void {
  if (!USERNAME_RE.test(username)) {
    throw new StoreError('invalid', 'username must be 3 to 64 characters of letters, digits and . _ @ -');
  }
}

function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new StoreError('invalid', problem);
}

function checkName(name: string): void {
  // Control characters would garble the CLI's tables and the dashboard.
  if (name.trim().length === 0 || name.length > NAME_MAX || /\p{Cc}/u.test(name)) {
    throw new StoreError('invalid', `name must be 1 to ${NAME_MAX} printable characters`);
  }
}

function iso(d: unknown): string {
  return (d as Date).toISOString();
}

/** Keys are live while expires_at is NULL or later than now; `now` is bound as epoch ms. */
const LIVE = '(k.expires_at IS NULL OR k.expires_at > epoch_ms($now::BIGINT))';

// Usernames are unique regardless of case, so `Admin` and `admin` cannot both exist and
// every lookup by username can ignore case.
async function usernameTaken(q: Queryable, username: string): Promise<boolean> {
  return (await q.one('SELECT 1 AS x FROM users WHERE lower(username) = lower($1)', [username])) !== undefined;
}

async function insertUser(q: Queryable, customerId: string, username: string, passwordHash: string): Promise<string> {
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

async function insertKey(q: Queryable, customerId: string, kind: KeyKind): Promise<string> {
  const key = newKey(kind);
  await q.run('INSERT INTO api_keys (key_id, customer_id, kind, key_hash, key_prefix) VALUES ($1, $2, $3, $4, $5)', [
    randomUUID(),
    customerId,
    kind,
    hashKey(key),
    key.slice(0, KEY_PREFIX_LEN),
  ]);
  return key;
}

/** Turns the unique-constraint error of a lost race into the same conflict as the pre-check. */
function asConflict(e: unknown, username: string): unknown {
  if (e instanceof Error && /constraint/i.test(e.message) && /username/i.test(e.message)) {
    return new StoreError('conflict', `username "${username}" is already taken`);
  }
  return e;
}

export async function createCustomer(
  store: Store,
  input: { name: string; username: string; password: string },
): Promise<CreatedCustomer> {
  checkName(input.name);
  checkUsername(input.username);
  checkPassword(input.password);
  const passwordHash = await hashPassword(input.password);
  const customerId = randomUUID();
  const partnerId = randomUUID();
  try {
    return await store.tx(async (q) => {
      await q.run('INSERT INTO customers (customer_id, partner_id, name) VALUES ($1, $2, $3)', [
        customerId,
        partnerId,
        input.name,
      ]);
      await insertUser(q, customerId, input.username, passwordHash);
      const prebidKey = await insertKey(q, customerId, 'prebid');
      const reportingKey = await insertKey(q, customerId, 'reporting');
      return {
        customer_id: customerId,
        partner_id: partnerId,
        prebid_key: prebidKey,
        reporting_key: reportingKey,
        username: input.username,
      };
    });
  } catch (e) {
    throw asConflict(e, input.username);
  }
}

/** The first customer, created only when there is none; its generated admin password is returned once. */
export async function ensureFirstCustomer(store: Store): Promise<(CreatedCustomer & { password: string }) | null> {
  const any = await store.one('SELECT 1 AS x FROM customers LIMIT 1');
  if (any) return null;
  const password = randomPassword(20);
  const created = await createCustomer(store, { ...FIRST_CUSTOMER, password });
  return { ...created, password };
}

const CUSTOMER_COLUMNS = 'c.customer_id, c.partner_id, c.name, c.created_at';

function toCustomer(r: Record<string, unknown>): Customer {
  return {
    customer_id: r.customer_id as string,
    partner_id: r.partner_id as string,
    name: r.name as string,
    created_at: iso(r.created_at),
  };
}

/** A customer by customer_id, partner_id or the username of one of its users (tried in that order). */
export async function findCustomer(q: Queryable, ref: string): Promise<Customer | undefined> {
  const row =
    (await q.one(`SELECT ${CUSTOMER_COLUMNS} FROM customers c WHERE c.customer_id = $1`, [ref])) ??
    (await q.one(`SELECT ${CUSTOMER_COLUMNS} FROM customers c WHERE c.partner_id = lower($1)`, [ref])) ??
    (await q.one(
      `SELECT ${CUSTOMER_COLUMNS} FROM customers c JOIN users u USING (customer_id) WHERE lower(u.username) = lower($1)`,
      [ref],
    ));
  return row ? toCustomer(row) : undefined;
}

async function requireCustomer(q: Queryable, ref: string): Promise<Customer> {
  const c = await findCustomer(q, ref);
  if (!c) throw new StoreError('not_found', `no customer with id, partner id or username "${ref}"`);
  return c;
}

/** Every customer with its usernames and live key prefixes; never a secret or a hash. */
export async function listCustomers(q: Queryable): Promise<CustomerListing[]> {
  const customers = await q.all(`SELECT ${CUSTOMER_COLUMNS} FROM customers c ORDER BY c.created_at, c.customer_id`);
  const users = await q.all<{ customer_id: string; username: string; disabled: boolean }>(
    'SELECT customer_id, username, disabled FROM users ORDER BY created_at, username',
  );
  const keys = await q.all<{ customer_id: string; kind: KeyKind; key_prefix: string; created_at: Date; expires_at: Date | null }>(
    `SELECT k.customer_id, k.kind, k.key_prefix, k.created_at, k.expires_at FROM api_keys k WHERE ${LIVE}
     ORDER BY k.kind, k.created_at`,
    { now: Date.now() },
  );
  const byId = new Map<string, CustomerListing>();
  for (const r of customers) {
    const c: CustomerListing = { ...toCustomer(r), users: [], keys: [] };
    byId.set(c.customer_id, c);
  }
  for (const u of users) byId.get(u.customer_id)?.users.push({ username: u.username, disabled: u.disabled });
  for (const k of keys) {
    byId.get(k.customer_id)?.keys.push({
      kind: k.kind,
      key_prefix: k.key_prefix,
      created_at: iso(k.created_at),
      expires_at: k.expires_at ? iso(k.expires_at) : null,
    });
  }
  return [...byId.values()];
}

/**
 * Issues a new current key of `kind`. Every other live key of that kind stops working
 * `graceSeconds` from now (or sooner, if it was already due to); 0 revokes them at once.
 */
export async function rotateKey(
  store: Store,
  input: { customer: string; kind: KeyKind; graceSeconds: number },
): Promise<RotatedKey> {
  if (input.kind !== 'prebid' && input.kind !== 'reporting') {
    throw new StoreError('invalid', 'key kind must be "prebid" or "reporting"');
  }
  if (!Number.isSafeInteger(input.graceSeconds) || input.graceSeconds < 0) {
    throw new StoreError('invalid', 'grace must be a whole number of seconds, 0 or more');
  }
  return store.tx(async (q) => {
    const c = await requireCustomer(q, input.customer);
    const now = Date.now();
    const expiresMs = now + input.graceSeconds * 1000;
    const live = await q.all<{ key_id: string }>(
      `SELECT k.key_id FROM api_keys k WHERE k.customer_id = $cid AND k.kind = $kind AND ${LIVE}`,
      { cid: c.customer_id, kind: input.kind, now },
    );
    for (const { key_id } of live) {
      await q.run(
        `UPDATE api_keys SET expires_at = least(coalesce(expires_at, epoch_ms($exp::BIGINT)), epoch_ms($exp::BIGINT))
         WHERE key_id = $id`,
        { exp: expiresMs, id: key_id },
      );
    }
    const key = await insertKey(q, c.customer_id, input.kind);
    return {
      customer_id: c.customer_id,
      kind: input.kind,
      key,
      previous_expires_at: live.length > 0 ? new Date(expiresMs).toISOString() : null,
    };
  });
}

/** Pre-bid keys that still work, for the lookup threads' key table. */
export async function activePrebidKeys(q: Queryable): Promise<ActivePrebidKey[]> {
  const rows = await q.all<{ customer_id: string; partner_id: string; key_hash: string; expires_at_ms: bigint | null }>(
    `SELECT k.customer_id, c.partner_id, k.key_hash, epoch_ms(k.expires_at) AS expires_at_ms
     FROM api_keys k JOIN customers c USING (customer_id)
     WHERE k.kind = 'prebid' AND ${LIVE}`,
    { now: Date.now() },
  );
  return rows.map((r) => ({
    customer_id: r.customer_id,
    partner_id: r.partner_id,
    key_hash: r.key_hash,
    expires_at_ms: r.expires_at_ms === null ? null : Number(r.expires_at_ms),
  }));
}

/** True when `key` is a live reporting key of `customerId`. */
export async function verifyReportingKey(q: Queryable, customerId: string, key: string): Promise<boolean> {
  if (key.length === 0 || key.length > 256) return false;
  const row = await q.one(
    `SELECT 1 AS x FROM api_keys k
     WHERE k.customer_id = $cid AND k.kind = 'reporting' AND k.key_hash = $hash AND ${LIVE}`,
    { cid: customerId, hash: hashKey(key), now: Date.now() },
  );
  return row !== undefined;
}

export async function addUser(
  store: Store,
  input: { customer: string; username: string; password: string },
): Promise<{ user_id: string; customer_id: string; username: string }> {
  checkUsername(input.username);
  checkPassword(input.password);
  const passwordHash = await hashPassword(input.password);
  try {
    return await store.tx(async (q) => {
      const c = await requireCustomer(q, input.customer);
      const userId = await insertUser(q, c.customer_id, input.username, passwordHash);
      return { user_id: userId, customer_id: c.customer_id, username: input.username };
    });
  } catch (e) {
    throw asConflict(e, input.username);
  }
}

/** Updates one user found by username (any case); not_found when there is none. Returns the stored username. */
async function updateUser(q: Queryable, username: string, set: string, params: Record<string, string | boolean>): Promise<string> {
  const row = await q.one<{ username: string }>('SELECT username FROM users WHERE lower(username) = lower($u)', {
    u: username,
  });
  if (!row) throw new StoreError('not_found', `no user "${username}"`);
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

/** What a login needs to check credentials; undefined for an unknown username. */
export async function findUserForLogin(q: Queryable, username: string): Promise<LoginRecord | undefined> {
  if (username.length === 0 || username.length > 64) return undefined;
  return q.one<LoginRecord & Record<string, unknown>>(
    'SELECT user_id, customer_id, password_hash, disabled FROM users WHERE lower(username) = lower($1)',
    [username],
  );
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
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}
