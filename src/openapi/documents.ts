// The three OpenAPI descriptions, built once, and the routes that serve them: on the account
// port GET /openapi.json (its own) and /openapi/{account,prebid,reporting}.json; on the
// reporting port GET /openapi.json. No auth (docs/openapi.md).
import { HttpError } from '../base/errors.ts';
import type { Router } from '../http/router.ts';
import { accountDocument, OPENAPI_FILES } from './account.ts';
import type { JsonObject } from './common.ts';
import { prebidDocument } from './prebid.ts';
import { reportingDocument } from './reporting.ts';

export type ApiName = 'account' | 'prebid' | 'reporting';
export const API_NAMES: readonly ApiName[] = ['account', 'prebid', 'reporting'];

let built: Record<ApiName, JsonObject> | null = null;

/** The documents (a fresh copy is not made: treat them as read-only). */
export function openApiDocuments(): Record<ApiName, JsonObject> {
  built ??= { account: accountDocument(), prebid: prebidDocument(), reporting: reportingDocument() };
  return built;
}

/** A document as the JSON text written to docs/openapi/<name>.json and served. */
export function openApiText(name: ApiName): string {
  return JSON.stringify(openApiDocuments()[name], null, 2) + '\n';
}

const texts = new Map<ApiName, Buffer>();

function send(res: import('node:http').ServerResponse, method: string, name: ApiName): void {
  let body = texts.get(name);
  if (!body) texts.set(name, (body = Buffer.from(openApiText(name))));
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache', 'Content-Length': body.length, 'Access-Control-Allow-Origin': '*' });
  res.end(method === 'HEAD' ? undefined : body);
}

/** GET /openapi.json with the port's own document (and, on the account port, all three under /openapi/). */
export function mountOpenApi(router: Router, own: 'account' | 'reporting'): void {
  router.get('/openapi.json', (ctx) => send(ctx.res, ctx.method, own));
  if (own !== 'account') return;
  router.get('/openapi/:file', (ctx) => {
    const file = ctx.params.file ?? '';
    if (!(OPENAPI_FILES as readonly string[]).includes(file)) throw new HttpError('not_found', `No such description: ${file.slice(0, 100)}; there are ${OPENAPI_FILES.join(', ')}.`);
    send(ctx.res, ctx.method, file.slice(0, -'.json'.length) as ApiName);
  });
}
