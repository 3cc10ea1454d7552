// API keys of a customer: pre-bid keys (lookups) and reporting keys (HTTP Basic on the
// reporting port). Only hashes and a short prefix are stored; a plaintext key leaves this
// module once, when it is created. A key is live until its expires_at; rotation gives the
// keys it replaces a grace period.
import { randomUUID } from 'node:crypto';
import { requireCustomer } from './customer-ref.ts';
import { isoTime, type Queryable, type Store } from './db.ts';
import { hashKey, newKey, type KeyKind } from '../base/secrets.ts';
import { StoreError } from './store-error.ts';
import { oneAtATime, retryConflicts } from './serial.ts';

/**
 * A pre-bid key that works now or until its grace period ends, as the store lists it and
 * the lookup threads receive it (the key table's input; also what a fleet edge reads).
 */
export interface LiveKey {
  customer_id: string;
  partner_id: string;
  key_hash: string; // sha256 hex of the key
  expires_at_ms: number | null;
}

/** The live keys a host serves, and whether it has a key set at all (false: a fleet edge before its first one). */
export interface KeySet {
  keys: LiveKey[];
  known: boolean;
}

/** A live key as people may see it: never the key or its hash. */
export interface KeyListing {
  customer_id: string;
  kind: KeyKind;
  /** The first characters of the key, enough to tell keys apart. */
  key_prefix: string;
  created_at: string;
  /** null for a current key; set for a rotated-out key still in its grace period. */
  expires_at: string | null;
}

export interface RotatedKey {
  customer_id: string;
  kind: KeyKind;
  key: string;
  /** When the keys this one replaces stop working; null when there were none. */
  previous_expires_at: string | null;
}

const KEY_PREFIX_LEN = 8; // "ivp_" + 4 characters of the random part

/** The one rule of a live key (table alias `k`): expires_at NULL or later than `$now` (epoch ms). */
const LIVE = '(k.expires_at IS NULL OR k.expires_at > epoch_ms($now::BIGINT))';

/** Inserts a new key of `kind` (inside the caller's transaction) and returns it in plaintext. */
export async function insertKey(q: Queryable, customerId: string, kind: KeyKind): Promise<string> {
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

/** Live keys of one customer, or of every customer when `customerId` is left out; by kind, oldest first. */
export async function listLiveKeys(q: Queryable, customerId?: string): Promise<KeyListing[]> {
  const rows = await q.all<{ customer_id: string; kind: KeyKind; key_prefix: string; created_at: Date; expires_at: Date | null }>(
    `SELECT k.customer_id, k.kind, k.key_prefix, k.created_at, k.expires_at FROM api_keys k
     WHERE ${LIVE} ${customerId === undefined ? '' : 'AND k.customer_id = $cid'}
     ORDER BY k.kind, k.created_at`,
    customerId === undefined ? { now: Date.now() } : { now: Date.now(), cid: customerId },
  );
  return rows.map((k) => ({
    customer_id: k.customer_id,
    kind: k.kind,
    key_prefix: k.key_prefix,
    created_at: isoTime(k.created_at),
    expires_at: k.expires_at ? isoTime(k.expires_at) : null,
  }));
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
  // One rotation of a customer's keys at a time (side by side, both would update the same
  // rows: a write conflict), and a conflict with another writer retried. Queued by the
  // customer found, not the reference as typed: its id, partner id and users' names are one.
  const c = await requireCustomer(store, input.customer);
  return oneAtATime(store, `keys ${c.customer_id}`, () => retryConflicts(() => store.tx(async (q) => {
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
  })));
}

/** Pre-bid keys that still work, for the lookup threads' key table. */
export async function activePrebidKeys(q: Queryable): Promise<LiveKey[]> {
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
