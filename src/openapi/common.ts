// Pieces the three OpenAPI 3.1 descriptions share: the one error body (DESIGN.md contracts),
// a response per status whose `error` codes are those ERROR_CODES gives that status, and the
// authentication schemes of the interface spec's section 5. Plain objects: the documents are
// data (docs/openapi/*.json is written from them by tools/build-openapi.ts).
import { ERROR_CODES, type ErrorCode } from '../base/errors.ts';
import pkg from '../../package.json' with { type: 'json' };

/** A JSON value (the documents are built from literals and written with JSON.stringify). */
export type Json = unknown;
export type JsonObject = { [k: string]: Json };

/** The OpenAPI version every description declares. */
export const OPENAPI_VERSION = '3.1.0';
export const JSON_TYPE = 'application/json';

export function info(title: string, description: string): JsonObject {
  return { title, version: pkg.version, description, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } };
}

/** The error codes answered with `status`. */
export function codesOf(status: number): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((c) => ERROR_CODES[c] === status);
}

/** `{"error","message"}`, plus `field` on a refusal about one request field. */
export const ERROR_BODY: JsonObject = {
  type: 'object',
  required: ['error', 'message'],
  additionalProperties: false,
  properties: {
    error: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'A code from a fixed list (src/base/errors.ts).' },
    message: { type: 'string', description: 'A sentence for a person: what was wrong and what to do.' },
    field: { type: 'string', description: 'The request field the refusal is about (e.g. `labels[3].lid`, `entries[0].value`).' },
  },
};

const HEADER_DESCRIPTIONS: Record<string, JsonObject> = {
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 } },
  Allow: { description: 'The methods this path takes (RFC 9110 15.5.6).', schema: { type: 'string' } },
  'WWW-Authenticate': { description: 'The scheme to authenticate with.', schema: { type: 'string' } },
};

/**
 * A JSON error response for `status`: the ErrorBody with `error` narrowed to that status's
 * codes (or `codes` when given).
 */
export function errorResponse(status: number, description: string, opts: { codes?: ErrorCode[]; headers?: string[] } = {}): JsonObject {
  const codes = opts.codes ?? codesOf(status);
  const out: JsonObject = {
    description,
    content: {
      [JSON_TYPE]: {
        schema: { allOf: [{ $ref: '#/components/schemas/ErrorBody' }, { properties: { error: { enum: codes } } }] },
      },
    },
  };
  if (opts.headers) out.headers = Object.fromEntries(opts.headers.map((h) => [h, HEADER_DESCRIPTIONS[h]!]));
  return out;
}

export function jsonResponse(description: string, schema: Json, headers?: string[]): JsonObject {
  const out: JsonObject = { description, content: { [JSON_TYPE]: { schema } } };
  if (headers) out.headers = Object.fromEntries(headers.map((h) => [h, HEADER_DESCRIPTIONS[h]!]));
  return out;
}

export const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });

/** The section-5 schemes, by the names the documents use. */
export const SECURITY_SCHEMES: Record<string, JsonObject> = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'The access token of `POST /login` (OAuth2 password grant) as `Authorization: Bearer <access_token>`. ' +
      'An expired or invalid token gets 400 `invalid_session`: call `POST /refresh_token` and retry (spec 5, rule 3).',
  },
  passwordGrant: {
    type: 'oauth2',
    description: 'How the Bearer token is obtained: OAuth2 password grant, credentials form-encoded; refreshed with a refresh token in a JSON body.',
    flows: { password: { tokenUrl: '/login', refreshUrl: '/refresh_token', scopes: {} } },
  },
  prebidKey: {
    type: 'apiKey',
    in: 'query',
    name: 'k',
    description: 'The customer\'s pre-bid key in the query parameter `k` (with its partner ID in `p`). No header authentication, no token refresh.',
  },
  basic: {
    type: 'http',
    scheme: 'basic',
    description: 'HTTP Basic: the username is the customer ID, the password the reporting API key (the dashboard\'s Integrations page shows both).',
  },
};

/** The document that describes where this one is served: `GET /openapi.json`, no auth. */
export function openApiPath(which: string): JsonObject {
  return {
    get: {
      operationId: `openapi_${which}`,
      summary: 'This description, as JSON',
      tags: ['meta'],
      security: [],
      responses: { '200': jsonResponse('The OpenAPI 3.1 document.', { type: 'object', required: ['openapi', 'info', 'paths'] }) },
    },
  };
}

export const PATH_NOT_FOUND = errorResponse(404, 'No such endpoint (or no such resource for this customer).');
export const WRONG_METHOD = errorResponse(405, 'The path takes other methods; `Allow` names them.', { headers: ['Allow'] });
