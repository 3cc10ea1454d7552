// A customer as an operator names it (the CLI's REF, the control socket, a session's
// customer_id): its customer_id, its partner_id, or the username of one of its users.
import { isoTime, type Queryable } from './db.ts';
import { StoreError } from './store-error.ts';
import { quoted } from '../base/text.ts';

export interface Customer {
  customer_id: string;
  partner_id: string;
  name: string;
  created_at: string;
}

export const CUSTOMER_COLUMNS = 'c.customer_id, c.partner_id, c.name, c.created_at';

export function toCustomer(r: Record<string, unknown>): Customer {
  return {
    customer_id: r.customer_id as string,
    partner_id: r.partner_id as string,
    name: r.name as string,
    created_at: isoTime(r.created_at),
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

/** findCustomer, or the not_found StoreError naming the reference. */
export async function requireCustomer(q: Queryable, ref: string): Promise<Customer> {
  const c = await findCustomer(q, ref);
  if (!c) throw new StoreError('not_found', `no customer with id, partner id or username ${quoted(ref)}`);
  return c;
}
