// Admin-side debugging of a lookup: GET /v1/account/explain?<the lookup's query string>
// on the account port (Bearer). Runs the lookup on the main thread's engine over the same
// data and keys and returns the response plus the reason codes and raw signals behind it.
// Never served on 9898. A customer may explain only lookups of its own partner ID.
// The reason codes come grouped by category too: the list the reporting dimension
// `category` uses (src/signals/category.ts), so a report's "why" and an explain agree.
import type { SessionGuard } from './session-guard.ts';
import { HttpError } from '../base/errors.ts';
import { readBody, sendJson, type Router } from '../http/router.ts';
import type { Store } from '../store/db.ts';
import { StoreError } from '../store/store-error.ts';
import type { LookupEngine } from '../prebid/pipeline.ts';
import { bidRequestFrom, checkBodyHeaders, ORTB_MAX_BODY_BYTES } from '../prebid/ortb/body.ts';
import { CATEGORIES, REASON_CATEGORY, type Category } from '../signals/category.ts';

export const EXPLAIN_PATH = '/v1/account/explain';
/** The same for an OpenRTB lookup: POST the BidRequest with the ORTB lookup's query string. */
export const EXPLAIN_ORTB_PATH = '/v1/account/explain/ortb';

export interface CategoryReasons {
  category: Category;
  /** The reason codes of this category, as `reasons` lists them (a detail may follow a colon). */
  reasons: string[];
}

/**
 * Reason codes grouped by their category, in the order of CATEGORIES; categories without
 * a reason are left out. `ua_inconsistent:<detail>` counts as `ua_inconsistent`.
 */
export function reasonsByCategory(reasons: readonly string[]): CategoryReasons[] {
  const by = new Map<Category, string[]>();
  for (const reason of reasons) {
    const colon = reason.indexOf(':');
    const cat = REASON_CATEGORY[colon === -1 ? reason : reason.slice(0, colon)] ?? 'none';
    const list = by.get(cat);
    if (list) list.push(reason);
    else by.set(cat, [reason]);
  }
  return CATEGORIES.filter((c) => by.has(c)).map((c) => ({ category: c, reasons: by.get(c)! }));
}

/** `ivtd explain` over the control socket: the lookup (a BidRequest's JSON with `body`) judged by `engine`, as the route answers. */
export function explainLookup(engine: LookupEngine, query: string, body: string | null): object {
  if (body === null) {
    const ex = engine.explain(query, Date.now());
    return { ...ex, categories: reasonsByCategory(ex.reasons) };
  }
  const bid = bidRequestFrom(Buffer.from(body, 'utf8'), false);
  if (!bid.ok) throw new StoreError('invalid', `--file: ${bid.error.message}`);
  const ex = engine.explain(query, Date.now(), bid.bid);
  return { ...ex, categories: reasonsByCategory(ex.reasons) };
}

export function mountExplainRoute(router: Router, deps: { store: Store; sessions: SessionGuard; engine: () => LookupEngine }): void {
  /** The lookup's query string, once the session's customer owns its partner ID. */
  const ownQuery = async (ctx: Parameters<Parameters<Router['get']>[1]>[0]): Promise<string> => {
    const session = await deps.sessions.requireSession(ctx);
    const raw = ctx.req.url ?? '';
    const q = raw.indexOf('?');
    const query = q === -1 ? '' : raw.slice(q + 1);
    const p = /(?:^|&)p=([^&]*)/.exec(query)?.[1]?.toLowerCase() ?? '';
    const own = await deps.store.one<{ partner_id: string }>('SELECT partner_id FROM customers WHERE customer_id = $1', [session.customer_id]);
    if (!own || p !== own.partner_id) {
      throw new HttpError('forbidden', 'Explain only lookups of your own partner ID: pass the lookup query string with p set to it.');
    }
    return query;
  };
  router.get(EXPLAIN_PATH, async (ctx) => {
    const query = await ownQuery(ctx);
    const ex = deps.engine().explain(query, Date.now());
    sendJson(ctx.res, 200, { ...ex, categories: reasonsByCategory(ex.reasons) });
  });
  router.post(EXPLAIN_ORTB_PATH, async (ctx) => {
    const query = await ownQuery(ctx);
    const enc = { gzip: false };
    const h = ctx.req.headers;
    const bad = checkBodyHeaders(String(h['content-type'] ?? ''), String(h['content-encoding'] ?? ''), enc);
    if (bad !== null) throw new HttpError(bad.code, bad.message);
    const body = bidRequestFrom(await readBody(ctx.req, ORTB_MAX_BODY_BYTES), enc.gzip);
    if (!body.ok) throw new HttpError(body.error.code, body.error.message, body.error.status);
    const ex = deps.engine().explain(query, Date.now(), body.bid);
    sendJson(ctx.res, 200, { ...ex, categories: reasonsByCategory(ex.reasons) });
  });
}
