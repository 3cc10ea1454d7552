// /v1/policy: the signed-in customer's own allow and deny lists and band thresholds
// (src/policy). Bearer-guarded for the whole path family (api.ts); every handler works on
// the session's customer only, so one customer can neither read nor change another's.
import { HttpError } from '../base/errors.ts';
import { readJsonObject, sendJson, type Router } from '../http/router.ts';
import { addEntries, getPolicy, removeEntries, setPolicy, setThresholds } from '../policy/manage.ts';
import {
  DEFAULT_THRESHOLDS, ENTRY_KINDS, MAX_ENTRIES, MAX_SUBSTRING_CHARS, MAX_VALUE_LENGTH, PolicyError, THRESHOLD_BOUNDS, type EntryKind,
} from '../policy/model.ts';
import type { PolicyService } from '../policy/service.ts';
import type { Store } from '../store/db.ts';
import { FieldError, refuseUnknownFields } from './field-error.ts';
import type { SessionGuard } from './session-guard.ts';

/** A whole policy of MAX_ENTRIES entries as JSON, with room. */
export const POLICY_BODY_LIMIT = 16 * 1024 * 1024;
const GET_PARAMS: ReadonlySet<string> = new Set(['kind', 'search', 'limit', 'offset']);

/** The limits, as GET /v1/policy reports them (the dashboard shows them). */
export const POLICY_LIMITS = {
  max_entries: MAX_ENTRIES,
  max_substring_chars: MAX_SUBSTRING_CHARS,
  max_value_length: MAX_VALUE_LENGTH,
  thresholds: THRESHOLD_BOUNDS,
  defaults: DEFAULT_THRESHOLDS,
};

/** A PolicyError as the HTTP answer: 413 past a cap, else a 422 naming the field. */
class PolicyTooLarge extends HttpError {
  constructor(readonly field: string, message: string) {
    super('payload_too_large', message);
  }
  override body() {
    return { ...super.body(), field: this.field };
  }
}

async function answer<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof PolicyError) throw e.tooLarge ? new PolicyTooLarge(e.field, e.message) : new FieldError(e.field, e.message);
    throw e;
  }
}

function whole(q: URLSearchParams, name: string, dflt: number, max: number): number {
  const raw = q.get(name);
  if (raw === null) return dflt;
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 0 && n <= max)) throw new FieldError(name, `${name} must be a whole number from 0 to ${max}.`);
  return n;
}

export function mountPolicyRoutes(router: Router, deps: { store: Store; sessions: SessionGuard; policies: PolicyService | null }): void {
  const { store, sessions, policies } = deps;

  router.get('/v1/policy', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    for (const k of ctx.query.keys()) {
      if (!GET_PARAMS.has(k)) throw new FieldError(k.slice(0, 100), `Unknown parameter "${k.slice(0, 100)}"; accepted: ${[...GET_PARAMS].join(', ')}.`);
    }
    const kind = ctx.query.get('kind');
    if (kind !== null && !ENTRY_KINDS.includes(kind as EntryKind)) throw new FieldError('kind', `kind must be one of ${ENTRY_KINDS.join(', ')}.`);
    const search = (ctx.query.get('search') ?? '').toLowerCase();
    if (search.length > 1024) throw new FieldError('search', 'search is at most 1024 characters.');
    const limit = whole(ctx.query, 'limit', MAX_ENTRIES, MAX_ENTRIES);
    const offset = whole(ctx.query, 'offset', 0, MAX_ENTRIES);
    const p = await getPolicy(store, s.customer_id);
    const matching = p.entries.filter((e) => (kind === null || e.kind === kind) && (search === '' || e.value.toLowerCase().includes(search)));
    sendJson(ctx.res, 200, {
      medium: p.medium,
      high: p.high,
      version: p.version,
      updated_at: p.updated_at,
      total: p.entries.length,
      matching: matching.length,
      offset,
      entries: matching.slice(offset, offset + limit),
      limits: POLICY_LIMITS,
    });
  });

  router.on('PUT', '/v1/policy', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const body = await readJsonObject(ctx.req, { limit: POLICY_BODY_LIMIT });
    sendJson(ctx.res, 200, await answer(() => setPolicy(store, policies, s.customer_id, body)));
  });

  router.patch('/v1/policy', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const body = await readJsonObject(ctx.req, { limit: 4096 });
    refuseUnknownFields(body, new Set(['medium', 'high']));
    await answer(() => setThresholds(store, policies, s.customer_id, body));
    const p = await getPolicy(store, s.customer_id);
    sendJson(ctx.res, 200, { medium: p.medium, high: p.high, version: p.version });
  });

  router.post('/v1/policy/entries', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const body = await readJsonObject(ctx.req, { limit: POLICY_BODY_LIMIT });
    refuseUnknownFields(body, new Set(['entries']));
    sendJson(ctx.res, 200, await answer(() => addEntries(store, policies, s.customer_id, body.entries)));
  });

  router.post('/v1/policy/entries/remove', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const body = await readJsonObject(ctx.req, { limit: POLICY_BODY_LIMIT });
    refuseUnknownFields(body, new Set(['entries']));
    sendJson(ctx.res, 200, await answer(() => removeEntries(store, policies, s.customer_id, body.entries)));
  });
}
