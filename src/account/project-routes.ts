// /v1/project/*: the customer's ad-verification scanning projects. The Bearer check for
// the whole path family is a router guard (api.ts); handlers only read the session.
import { HttpError } from '../base/errors.ts';
import { readJsonObject, sendJson, type Ctx, type Router } from '../http/router.ts';
import type { Store } from '../store/db.ts';
import { FieldError } from './field-error.ts';
import { parseProjectCreate, parseProjectPatch } from './project-fields.ts';
import { createProject, deleteProject, getProject, listProjects, projectId, updateProject } from './project-store.ts';
import type { SessionGuard } from './session-guard.ts';

export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
const OFFSET_MAX = 1_000_000_000;
const LIST_PARAMS: ReadonlySet<string> = new Set(['limit', 'offset']);

/** A whole-number query parameter in [min, max], `dflt` when absent; 422 naming it otherwise. */
function intParam(query: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const all = query.getAll(name);
  if (all.length === 0) return dflt;
  if (all.length > 1) throw new FieldError(name, `${name} is given more than once.`);
  const raw = all[0]!;
  const n = /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max)) throw new FieldError(name, `${name} must be a whole number from ${min} to ${max}.`);
  return n;
}

function notFound(): HttpError {
  return new HttpError('not_found', 'No such project.');
}

export function mountProjectRoutes(router: Router, deps: { store: Store; sessions: SessionGuard }): void {
  const { store, sessions } = deps;

  /** The id in the path, or a 404: a malformed id names no project. */
  const idOf = (ctx: Ctx): string => {
    const id = projectId(ctx.params.project_id ?? '');
    if (!id) throw notFound();
    return id;
  };

  router.post('/v1/project/create', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const fields = parseProjectCreate(await readJsonObject(ctx.req));
    sendJson(ctx.res, 201, await createProject(store, s.customer_id, fields));
  });

  router.get('/v1/project/list', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    for (const k of ctx.query.keys()) {
      if (!LIST_PARAMS.has(k)) throw new FieldError(k.slice(0, 100), `Unknown parameter "${k.slice(0, 100)}"; accepted: limit, offset.`);
    }
    const limit = intParam(ctx.query, 'limit', LIST_LIMIT_DEFAULT, 1, LIST_LIMIT_MAX);
    const offset = intParam(ctx.query, 'offset', 0, 0, OFFSET_MAX);
    const page = await listProjects(store, s.customer_id, { limit, offset });
    sendJson(ctx.res, 200, { ...page, limit, offset });
  });

  router.get('/v1/project/:project_id', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const p = await getProject(store, s.customer_id, idOf(ctx));
    if (!p) throw notFound();
    sendJson(ctx.res, 200, p);
  });

  router.patch('/v1/project/:project_id', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    const id = idOf(ctx);
    const fields = parseProjectPatch(await readJsonObject(ctx.req));
    const p = await updateProject(store, s.customer_id, id, fields);
    if (!p) throw notFound();
    sendJson(ctx.res, 200, p);
  });

  router.delete('/v1/project/:project_id', async (ctx) => {
    const s = await sessions.requireSession(ctx);
    if (!(await deleteProject(store, s.customer_id, idOf(ctx)))) throw notFound();
    ctx.res.writeHead(204, { 'Cache-Control': 'no-store' });
    ctx.res.end();
  });
}
