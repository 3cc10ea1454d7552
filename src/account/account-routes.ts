// /v1/account: what the dashboard shows about the signed-in customer, and key rotation.
// Keys are stored hashed, so only their prefixes can ever be shown; a rotated-in key is
// returned once, in the rotation response.
import { OPTIONS } from '../base/config.ts';
import { HttpError } from '../base/errors.ts';
import { log } from '../base/log.ts';
import { readJsonObject, sendJson, type Router } from '../http/router.ts';
import { listLiveKeys, rotateKey } from '../store/api-keys.ts';
import { findCustomer } from '../store/customer-ref.ts';
import type { Queryable, Store } from '../store/db.ts';
import { KEY_KINDS, type KeyKind } from '../base/secrets.ts';
import { StoreError } from '../store/store-error.ts';
import { isWholeNumberIn } from '../base/whole-number.ts';
import { FieldError, refuseUnknownFields } from './field-error.ts';
import type { SessionGuard } from './session-guard.ts';

const ROTATE_FIELDS: ReadonlySet<string> = new Set(['kind', 'grace_seconds']);
const ROTATE_BODY_LIMIT = 4 * 1024;

export interface AccountKey {
  kind: KeyKind;
  prefix: string;
  created_at: string;
  /** null for a current key; set for a rotated-out key still in its grace period. */
  expires_at: string | null;
}

/** The customer's keys that still work, oldest first within each kind. */
async function accountKeys(q: Queryable, customerId: string): Promise<AccountKey[]> {
  const keys = await listLiveKeys(q, customerId);
  return keys.map((k) => ({ kind: k.kind, prefix: k.key_prefix, created_at: k.created_at, expires_at: k.expires_at }));
}

export function mountAccountRoutes(
  router: Router,
  deps: { store: Store; sessions: SessionGuard; defaultGraceSeconds: number; onKeysChanged?: () => Promise<void> },
): void {
  const { store, sessions } = deps;

  router.get('/v1/account', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const c = await findCustomer(store, s.customer_id);
    if (!c) throw new HttpError('not_found', 'The customer of this session no longer exists.');
    sendJson(ctx.res, 200, {
      customer_id: c.customer_id,
      partner_id: c.partner_id,
      name: c.name,
      username: s.username,
      keys: await accountKeys(store, c.customer_id),
    });
  });

  router.post('/v1/account/keys/rotate', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const body = await readJsonObject(ctx.req, { limit: ROTATE_BODY_LIMIT });
    refuseUnknownFields(body, ROTATE_FIELDS);
    const kind = body.kind;
    if (!KEY_KINDS.includes(kind as KeyKind)) throw new FieldError('kind', 'kind must be "prebid" or "reporting".');
    const grace = body.grace_seconds ?? deps.defaultGraceSeconds;
    const max = OPTIONS.keyGrace.max;
    if (!isWholeNumberIn(grace, 0, max)) {
      throw new FieldError('grace_seconds', `grace_seconds must be a whole number from 0 to ${max}.`);
    }
    let r;
    try {
      r = await rotateKey(store, { customer: s.customer_id, kind: kind as KeyKind, graceSeconds: grace });
    } catch (e) {
      if (e instanceof StoreError && e.code === 'invalid') throw new HttpError('unprocessable', e.message);
      throw e;
    }
    // The lookup threads learn the new key now, not at the next periodic refresh, and the
    // answer waits for them: a key handed out is a key every lookup thread takes. (Should
    // that fail, the key is rotated all the same; the 5 s refresh pushes it.)
    await deps.onKeysChanged?.().catch((e: Error) => log.error({ err: e.message }, 'key rotation: pushing the new key to the lookup threads failed; the 5 s refresh retries'));
    sendJson(ctx.res, 200, { kind: r.kind, key: r.key, previous_expires_at: r.previous_expires_at });
  });
}
