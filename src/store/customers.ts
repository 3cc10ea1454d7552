// Customers: creating one (with its first user and both API keys, in one transaction),
// the first customer of an empty data dir, and the listing the CLI prints. Finding one by
// reference is customer-ref.ts; its users and keys are users.ts and api-keys.ts.
import { randomUUID } from 'node:crypto';
import { listLiveKeys, insertKey, type KeyListing } from './api-keys.ts';
import { CUSTOMER_COLUMNS, toCustomer, type Customer } from './customer-ref.ts';
import type { Queryable, Store } from './db.ts';
import { hashPassword, randomPassword } from '../base/secrets.ts';
import { StoreError } from './store-error.ts';
import { checkPassword, checkUsername, insertUser, insertingUser } from './users.ts';

export interface CreatedCustomer {
  customer_id: string;
  partner_id: string;
  prebid_key: string;
  reporting_key: string;
  username: string;
}

export interface CustomerListing extends Customer {
  users: Array<{ username: string; disabled: boolean }>;
  /** Keys that still work; key_prefix is the first characters of the key, enough to tell keys apart. */
  keys: Array<Omit<KeyListing, 'customer_id'>>;
}

const NAME_MAX = 200;
const FIRST_CUSTOMER = { name: 'default', username: 'admin' } as const;

// Control characters and line separators would garble the CLI's tables and the logs; the
// bidirectional overrides and isolates make a name read as another ("evil\u202egnp.exe");
// U+FFFD, a lone surrogate or a noncharacter is text that was broken before it came here.
// Other format characters stay: Persian writes the zero-width non-joiner inside words.
const NOT_IN_NAME = /[\p{Cc}\p{Zl}\p{Zp}\u202a-\u202e\u2066-\u2069\ufffd\ufdd0-\ufdef\ufffe\uffff]/u;
/** Something that shows: a character that is not a space, a format character or a combining mark. */
const VISIBLE = /[^\s\p{Cf}\p{M}]/u;

function checkName(name: string): void {
  if (name.length > NAME_MAX || !name.isWellFormed() || NOT_IN_NAME.test(name) || !VISIBLE.test(name)) {
    throw new StoreError(
      'invalid',
      `name must be 1 to ${NAME_MAX} characters with one that shows, without control characters, line separators, direction overrides or broken text (U+FFFD)`,
    );
  }
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
  return insertingUser(store, input.username, () =>
    store.tx(async (q) => {
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
    }),
  );
}

/** The first customer, created only when there is none; its generated admin password is returned once. */
export async function ensureFirstCustomer(store: Store): Promise<(CreatedCustomer & { password: string }) | null> {
  const any = await store.one('SELECT 1 AS x FROM customers LIMIT 1');
  if (any) return null;
  const password = randomPassword(20);
  const created = await createCustomer(store, { ...FIRST_CUSTOMER, password });
  return { ...created, password };
}

/** Every customer with its usernames and live key prefixes; never a secret or a hash. */
export async function listCustomers(q: Queryable): Promise<CustomerListing[]> {
  const customers = await q.all(`SELECT ${CUSTOMER_COLUMNS} FROM customers c ORDER BY c.created_at, c.customer_id`);
  const users = await q.all<{ customer_id: string; username: string; disabled: boolean }>(
    'SELECT customer_id, username, disabled FROM users ORDER BY created_at, username',
  );
  const keys = await listLiveKeys(q);
  const byId = new Map<string, CustomerListing>();
  for (const r of customers) {
    const c: CustomerListing = { ...toCustomer(r), users: [], keys: [] };
    byId.set(c.customer_id, c);
  }
  for (const u of users) byId.get(u.customer_id)?.users.push({ username: u.username, disabled: u.disabled });
  for (const { customer_id, ...key } of keys) byId.get(customer_id)?.keys.push(key);
  return [...byId.values()];
}
