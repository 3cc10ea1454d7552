// Checks real responses against the OpenAPI descriptions (src/openapi/, served as
// /openapi.json): the status must be one the operation lists and the body must match its
// schema (ajv 8, JSON Schema 2020-12 as OpenAPI 3.1 uses), so the descriptions cannot drift
// from what the server answers. The HTTP tests call conformsToOpenApi on what they receive.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { API_NAMES, openApiDocuments, type ApiName } from '../../src/openapi/documents.ts';

export interface SeenResponse {
  method: string;
  /** The request path, with or without its query string. */
  path: string;
  status: number;
  /** The Content-Type header ('' when none). */
  contentType: string;
  /** The parsed JSON body; a string when it was not JSON; null when empty. */
  body: unknown;
}

type Doc = { paths: Record<string, Record<string, Operation | unknown>> };
type Operation = { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const docs = openApiDocuments() as unknown as Record<ApiName, Doc>;
for (const name of API_NAMES) ajv.addSchema(docs[name] as object, `urn:ivtd:openapi:${name}`);
const validators = new Map<string, ValidateFunction>();
const errorBody = (name: ApiName) => validator(`urn:ivtd:openapi:${name}#/components/schemas/ErrorBody`);

function validator(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (!v) validators.set(ref, (v = ajv.compile({ $ref: ref })));
  return v;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** The template of `docs[name]` that `path` matches, or null. */
export function pathTemplate(name: ApiName, path: string): string | null {
  const segs = path.split('/');
  for (const t of Object.keys(docs[name].paths)) {
    const parts = t.split('/');
    if (parts.length === segs.length && parts.every((p, i) => (p.startsWith('{') && p.endsWith('}') ? segs[i] !== '' : p === segs[i]))) return t;
  }
  return null;
}

/** Problems of one response against one document ([] when it conforms); null when the path is not described there. */
function problems(name: ApiName, r: SeenResponse): string[] | null {
  const path = r.path.split('?')[0]!;
  const template = pathTemplate(name, path);
  if (template === null) return null;
  const item = docs[name].paths[template]!;
  // HEAD is GET without the body where the description has no HEAD of its own.
  const method = r.method.toLowerCase() === 'head' && !item.head ? 'get' : r.method.toLowerCase();
  const op = item[method] as Operation | undefined;
  const where = `${r.method} ${path} → ${r.status} (${name}: ${template})`;
  if (!op) {
    // A method the path does not take: refused, with the error body (the router's 405, or a
    // check that runs before routing: the Bearer guard of /v1/project/*, the 8 KB limit).
    if (r.status < 400) return [`${where}: ${method.toUpperCase()} is not described, yet the answer is not a refusal`];
    return errorBody(name)(r.body) ? [] : [`${where}: not the error body`];
  }
  const resp = op.responses[String(r.status)] ?? op.responses.default;
  if (!resp) return [`${where}: status ${r.status} is not among the described ${Object.keys(op.responses).join(', ')}`];
  const head = r.method.toUpperCase() === 'HEAD';
  if (!resp.content) return r.body === null || r.body === '' ? [] : [`${where}: described without a body, but one came: ${JSON.stringify(r.body).slice(0, 200)}`];
  if (head) return [];
  const type = r.contentType.split(';')[0]!.trim().toLowerCase();
  const media = resp.content[type];
  if (!media) return [`${where}: Content-Type ${type || '(none)'} is not among ${Object.keys(resp.content).join(', ')}`];
  if (type !== 'application/json') return [];
  const ref = `urn:ivtd:openapi:${name}#/${pointer('paths', template, method, 'responses', String(r.status) in op.responses ? String(r.status) : 'default', 'content', type, 'schema')}`;
  const v = validator(ref);
  if (v(r.body)) return [];
  return [`${where}: body does not match the schema: ${ajv.errorsText(v.errors, { separator: '; ' })}; body ${JSON.stringify(r.body).slice(0, 300)}`];
}

/**
 * Throws unless the response conforms to a description of `apis` (default: any that
 * describes its path). A path none describes (the dashboard's static files, a 404 on purpose)
 * passes when it is not an error, or when its error is the one JSON error body.
 */
export function conformsToOpenApi(r: SeenResponse, apis: readonly ApiName[] = API_NAMES): void {
  const found: string[] = [];
  let described = false;
  for (const name of apis) {
    const p = problems(name, r);
    if (p === null) continue;
    described = true;
    if (p.length === 0) return;
    found.push(...p);
  }
  if (described) throw new Error(`response differs from the OpenAPI description:\n  ${found.join('\n  ')}`);
  if (r.status >= 400 && r.contentType.startsWith('application/json') && !errorBody(apis[0] ?? 'account')(r.body)) {
    throw new Error(`${r.method} ${r.path} → ${r.status}: an undescribed path answered an error that is not {"error","message"}: ${JSON.stringify(r.body).slice(0, 300)}`);
  }
}

/** conformsToOpenApi on a fetch Response whose body was already read as `text`. */
export function fetchConforms(method: string, url: string, res: { status: number; headers: Headers }, text: string, apis?: readonly ApiName[]): void {
  let body: unknown = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  conformsToOpenApi({ method, path: new URL(url).pathname, status: res.status, contentType: res.headers.get('content-type') ?? '', body }, apis);
}
