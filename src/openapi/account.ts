// The account port (default 9899): login and tokens (OAuth2 password grant), the Bearer
// endpoints (projects, account, keys, explain, policy, feedback), the dashboard's reports
// and its config, and these descriptions (docs/account-api.md, docs/policy.md).
import { BANDS } from '../base/enums.ts';
import { ACTIONS, DEFAULT_THRESHOLDS, ENTRY_KINDS, MAX_ENTRIES, THRESHOLD_BOUNDS } from '../policy/model.ts';
import { CATEGORIES } from '../signals/category.ts';
import { ERROR_BODY, errorResponse, info, jsonResponse, JSON_TYPE, openApiPath, OPENAPI_VERSION, PATH_NOT_FOUND, ref, SECURITY_SCHEMES, type JsonObject } from './common.ts';
import { reportPaths, reportSchemas } from './report-paths.ts';

/** The documents the account port serves under /openapi/{file}. */
export const OPENAPI_FILES = ['account.json', 'prebid.json', 'reporting.json'] as const;

const BEARER = [{ bearer: [] }];
const ISO_TIME = { type: 'string', format: 'date-time' };
const INVALID_SESSION = errorResponse(400, 'invalid_session: the access token is missing, malformed, expired or its session ended (refresh and retry); or a request that is not readable HTTP.');
const TOO_LARGE = (limit: string) => errorResponse(413, `The body is over ${limit}.`);
const UNPROCESSABLE = (what: string) => errorResponse(422, what);
const JSON_BODY = (schema: JsonObject, required = true): JsonObject => ({ required, content: { [JSON_TYPE]: { schema } } });

function bearerOp(op: JsonObject, responses: Record<string, JsonObject>): JsonObject {
  return { ...op, security: BEARER, responses: { ...responses, '400': responses['400'] ?? INVALID_SESSION } };
}

const REFRESH_BODY: JsonObject = {
  type: 'object',
  description: 'The refresh token under `refresh_token`, or `refreshToken` (spec 4.2: the key depends on the deployment); not both. Other keys are ignored.',
  properties: {
    refresh_token: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
    refreshToken: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
  },
};

const PROJECT_FIELDS: Record<string, JsonObject> = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  demand_id: { type: 'string', minLength: 1, maxLength: 100 },
  tag: { type: 'string', description: 'An https:// URL of the ad tag, or the tag\'s HTML; at most 60 KB.' },
  scan_now: { type: 'integer', enum: [0, 1] },
  times_per_day: { type: 'integer', minimum: 1, maximum: 96 },
  alert_pixel: { type: ['string', 'null'], maxLength: 2048 },
  locations: { type: 'array', items: { type: 'string', pattern: '^[A-Z]{2}$' }, description: 'ISO 3166-1 alpha-2 codes; [] means no restriction.' },
  creative_id: { type: ['string', 'null'], minLength: 1, maxLength: 100 },
};

const PROJECT_INPUT: Record<string, JsonObject> = {
  ...PROJECT_FIELDS,
  scan_now: { oneOf: [{ type: 'integer', enum: [0, 1] }, { type: 'boolean' }] },
  locations: {
    oneOf: [{ type: 'string', description: 'One code or a comma-separated list.' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }],
  },
};

function schemas(): Record<string, JsonObject> {
  const entry = {
    type: 'object',
    required: ['kind', 'value', 'action'],
    additionalProperties: false,
    properties: { kind: { type: 'string', enum: [...ENTRY_KINDS] }, value: { type: 'string' }, action: { type: 'string', enum: [...ACTIONS] } },
  };
  const threshold = (k: 'medium' | 'high') => ({ type: ['number', 'null'], minimum: THRESHOLD_BOUNDS[k].min, maximum: THRESHOLD_BOUNDS[k].max, description: `null: the default (${DEFAULT_THRESHOLDS[k]}).` });
  return {
    ErrorBody: ERROR_BODY,
    Tokens: {
      type: 'object',
      description: 'Spec 2.1, plus the access token\'s lifetime.',
      required: ['access_token', 'refresh_token', 'token_type', 'expires_in'],
      additionalProperties: false,
      properties: {
        access_token: { type: 'string', description: 'A JWT (HS256): send it as `Authorization: Bearer …`.' },
        refresh_token: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$', description: 'Works once: each refresh answers its successor.' },
        token_type: { type: 'string', const: 'bearer' },
        expires_in: { type: 'integer', minimum: 1, description: 'Seconds the access token lives (--access-token-ttl).' },
      },
    },
    Project: {
      type: 'object',
      required: ['project_id', ...Object.keys(PROJECT_FIELDS), 'created_at', 'updated_at'],
      additionalProperties: false,
      properties: { project_id: { type: 'string', format: 'uuid' }, ...PROJECT_FIELDS, created_at: ISO_TIME, updated_at: ISO_TIME },
    },
    ProjectCreate: { type: 'object', required: ['name', 'demand_id', 'tag'], additionalProperties: false, properties: PROJECT_INPUT },
    ProjectPatch: { type: 'object', minProperties: 1, additionalProperties: false, properties: PROJECT_INPUT },
    ProjectList: {
      type: 'object',
      required: ['projects', 'total', 'limit', 'offset'],
      additionalProperties: false,
      properties: { projects: { type: 'array', items: ref('Project') }, total: { type: 'integer', minimum: 0 }, limit: { type: 'integer' }, offset: { type: 'integer' } },
    },
    Account: {
      type: 'object',
      required: ['customer_id', 'partner_id', 'name', 'username', 'keys'],
      additionalProperties: false,
      properties: {
        customer_id: { type: 'string', format: 'uuid' },
        partner_id: { type: 'string', format: 'uuid' },
        name: { type: 'string' },
        username: { type: 'string' },
        keys: {
          type: 'array',
          description: 'The keys that work now; only their prefixes (keys are stored hashed). A rotated-out key in its grace period has expires_at.',
          items: {
            type: 'object',
            required: ['kind', 'prefix', 'created_at', 'expires_at'],
            additionalProperties: false,
            properties: { kind: { type: 'string', enum: ['prebid', 'reporting'] }, prefix: { type: 'string' }, created_at: ISO_TIME, expires_at: { oneOf: [ISO_TIME, { type: 'null' }] } },
          },
        },
      },
    },
    KeyRotation: {
      type: 'object',
      required: ['kind', 'key', 'previous_expires_at'],
      additionalProperties: false,
      properties: {
        kind: { type: 'string', enum: ['prebid', 'reporting'] },
        key: { type: 'string', description: 'The new key, shown only this once.' },
        previous_expires_at: { oneOf: [ISO_TIME, { type: 'null' }], description: 'When the replaced keys stop working.' },
      },
    },
    Explanation: {
      type: 'object',
      description: 'The lookup as run on the main thread over the same data: its answer, the reason codes and the raw signals behind it (signals\' fields are internal and may grow).',
      required: ['status', 'response', 'reasons', 'transaction', 'category', 'leadingReason', 'signals', 'policy', 'categories'],
      additionalProperties: false,
      properties: {
        status: { type: 'integer', description: 'What the lookup would answer.' },
        response: { description: 'The lookup\'s body: the prediction (200) or the error body.', type: 'object' },
        reasons: { type: 'array', items: { type: 'string' } },
        transaction: { type: ['string', 'null'], enum: ['valid', 'givt', 'sivt', 'policy', null] },
        category: { type: ['string', 'null'], enum: [...CATEGORIES, 'none', null] },
        leadingReason: { type: 'string' },
        signals: { type: ['object', 'null'] },
        policy: {
          oneOf: [
            { type: 'null' },
            {
              type: 'object',
              required: ['medium', 'high', 'matches', 'decision', 'model'],
              properties: {
                medium: { type: 'number' },
                high: { type: 'number' },
                matches: { type: 'array', items: { type: 'object', required: ['kind', 'action'], properties: { kind: { type: 'string', enum: [...ENTRY_KINDS] }, action: { type: 'string', enum: [...ACTIONS] } } } },
                decision: { enum: [...ACTIONS, null] },
                model: { type: 'object', required: ['score', 'band', 'confidence'], properties: { score: { type: 'number' }, band: { type: 'string', enum: [...BANDS] }, confidence: { type: 'number' } } },
              },
            },
          ],
        },
        categories: {
          type: 'array',
          items: { type: 'object', required: ['category', 'reasons'], additionalProperties: false, properties: { category: { type: 'string' }, reasons: { type: 'array', items: { type: 'string' } } } },
        },
      },
    },
    PolicyEntry: entry,
    Policy: {
      type: 'object',
      required: ['medium', 'high', 'version', 'updated_at', 'total', 'matching', 'offset', 'entries', 'limits'],
      additionalProperties: false,
      properties: {
        medium: threshold('medium'),
        high: threshold('high'),
        version: { type: 'integer', minimum: 0 },
        updated_at: { oneOf: [ISO_TIME, { type: 'null' }] },
        total: { type: 'integer', minimum: 0 },
        matching: { type: 'integer', minimum: 0 },
        offset: { type: 'integer', minimum: 0 },
        entries: { type: 'array', items: ref('PolicyEntry') },
        limits: { type: 'object', required: ['max_entries', 'max_substring_chars', 'max_value_length', 'thresholds', 'defaults'] },
      },
    },
    PolicyReplace: {
      type: 'object',
      additionalProperties: false,
      properties: { medium: threshold('medium'), high: threshold('high'), entries: { type: 'array', maxItems: MAX_ENTRIES, items: ref('PolicyEntry') } },
    },
    Thresholds: { type: 'object', additionalProperties: false, properties: { medium: threshold('medium'), high: threshold('high') } },
    ThresholdsAnswer: {
      type: 'object',
      required: ['medium', 'high', 'version'],
      additionalProperties: false,
      properties: { medium: threshold('medium'), high: threshold('high'), version: { type: 'integer' } },
    },
    FeedbackLabels: {
      type: 'object',
      required: ['labels'],
      additionalProperties: false,
      properties: {
        labels: {
          type: 'array',
          minItems: 1,
          maxItems: 1000,
          items: {
            type: 'object',
            required: ['lid', 'label', 'source'],
            additionalProperties: false,
            properties: { lid: { type: 'string' }, label: { type: 'string', enum: ['invalid', 'valid'] }, source: { type: 'string', minLength: 1, maxLength: 100 } },
          },
        },
      },
    },
    DashboardConfig: {
      type: 'object',
      required: ['prebid_url', 'reporting_url', 'api_url'],
      additionalProperties: false,
      properties: { prebid_url: { type: 'string', format: 'uri' }, reporting_url: { type: 'string', format: 'uri' }, api_url: { type: 'string', format: 'uri' } },
    },
    ...reportSchemas(),
  };
}

export function accountDocument(): JsonObject {
  const count = { type: 'integer', minimum: 0 };
  const explainRefusals = {
    '400': errorResponse(400, 'invalid_session (refresh and retry); the lookup\'s own refusals are answered inside `response` with status 200.'),
    '403': errorResponse(403, 'The query\'s partner ID `p` is not the session customer\'s.'),
  };
  return {
    openapi: OPENAPI_VERSION,
    info: info(
      'ivtd account API',
      'The account port (default 9899, HTTPS with --tls-cert) beside the dashboard: tokens, projects, account and keys, explain, policy, feedback, and the dashboard\'s reports. ' +
        'Every error body is JSON `{"error","message"}`, with `field` when one request field is at fault. Requests not readable as HTTP/1.1 get 400 `invalid_request`, ' +
        'headers over 16 KB 431 `header_too_large`, requests slower than 30 s 408 `request_timeout`.',
    ),
    servers: [{ url: 'http://127.0.0.1:9899', description: 'The default --api-port.' }],
    tags: [{ name: 'auth' }, { name: 'projects' }, { name: 'account' }, { name: 'policy' }, { name: 'feedback' }, { name: 'reports' }, { name: 'dashboard' }, { name: 'meta' }],
    paths: {
      '/login': {
        post: {
          operationId: 'login',
          summary: 'Credentials for tokens (OAuth2 password grant, spec 4.1)',
          tags: ['auth'],
          security: [],
          requestBody: {
            required: true,
            content: {
              'application/x-www-form-urlencoded': {
                schema: {
                  type: 'object',
                  required: ['username', 'password'],
                  properties: {
                    username: { type: 'string', minLength: 3, maxLength: 64, pattern: '^[A-Za-z0-9._@-]+$' },
                    password: { type: 'string', minLength: 1 },
                    grant_type: { type: 'string', const: 'password' },
                  },
                },
              },
            },
          },
          responses: {
            '200': jsonResponse('The tokens.', ref('Tokens')),
            '400': errorResponse(400, 'A request that is not readable HTTP.'),
            '401': errorResponse(401, 'Unknown user, wrong password or disabled user (one message for all three).'),
            '413': TOO_LARGE('8 KB'),
            '422': UNPROCESSABLE('username or password missing, empty, repeated, too long or not UTF-8; a username of the wrong format; not form-encoded; another grant_type.'),
            '429': errorResponse(429, 'Too many failed logins, or too many logins being checked at once; wait Retry-After seconds.', { headers: ['Retry-After'] }),
          },
        },
      },
      '/refresh_token': {
        post: {
          operationId: 'refreshToken',
          summary: 'A refresh token for new tokens (spec 4.2); each refresh token works once',
          tags: ['auth'],
          security: [],
          requestBody: JSON_BODY(REFRESH_BODY),
          responses: {
            '200': jsonResponse('A new access token and the rotated refresh token.', ref('Tokens')),
            '400': errorResponse(400, 'A request that is not readable HTTP.'),
            '401': errorResponse(401, 'invalid_grant: unknown, expired, already used (the session is now revoked) or ended; the message says which.'),
            '413': TOO_LARGE('4 KB'),
            '422': UNPROCESSABLE('The token missing, not a string, or not 43 base64url characters; a body not JSON.'),
          },
        },
      },
      '/logout': {
        post: {
          operationId: 'logout',
          summary: 'Ends the session of a refresh token',
          tags: ['auth'],
          security: [],
          requestBody: JSON_BODY(REFRESH_BODY),
          responses: {
            '204': { description: 'Ended (also when unknown or already ended).' },
            '400': errorResponse(400, 'A request that is not readable HTTP.'),
            '413': TOO_LARGE('4 KB'),
            '422': UNPROCESSABLE('The token missing or malformed.'),
          },
        },
      },
      '/v1/project/create': {
        post: bearerOp(
          { operationId: 'createProject', summary: 'Creates a project', tags: ['projects'], requestBody: JSON_BODY(ref('ProjectCreate')) },
          { '201': jsonResponse('The project.', ref('Project')), '413': TOO_LARGE('64 KB'), '422': UNPROCESSABLE('A field breaks its rule (`field` names it) or is unknown; a body not a JSON object.') },
        ),
      },
      '/v1/project/list': {
        get: bearerOp(
          {
            operationId: 'listProjects',
            summary: 'The customer\'s projects, newest first',
            tags: ['projects'],
            parameters: [
              { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
              { name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, default: 0 } },
            ],
          },
          { '200': jsonResponse('A page of projects.', ref('ProjectList')), '422': UNPROCESSABLE('A bad limit or offset, or another parameter.') },
        ),
      },
      '/v1/project/{project_id}': {
        parameters: [{ name: 'project_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
        get: bearerOp({ operationId: 'getProject', summary: 'One project', tags: ['projects'] }, { '200': jsonResponse('The project.', ref('Project')), '404': PATH_NOT_FOUND }),
        patch: bearerOp(
          { operationId: 'updateProject', summary: 'Changes some fields of a project', tags: ['projects'], requestBody: JSON_BODY(ref('ProjectPatch')) },
          { '200': jsonResponse('The whole project.', ref('Project')), '404': PATH_NOT_FOUND, '413': TOO_LARGE('64 KB'), '422': UNPROCESSABLE('A field breaks its rule, is unknown, or the body is empty.') },
        ),
        delete: bearerOp({ operationId: 'deleteProject', summary: 'Deletes a project', tags: ['projects'] }, { '204': { description: 'Deleted.' }, '404': PATH_NOT_FOUND }),
      },
      '/v1/account': {
        get: bearerOp({ operationId: 'getAccount', summary: 'The signed-in customer and its keys\' prefixes', tags: ['account'] }, { '200': jsonResponse('The account.', ref('Account')), '404': PATH_NOT_FOUND }),
      },
      '/v1/account/keys/rotate': {
        post: bearerOp(
          {
            operationId: 'rotateKey',
            summary: 'A new pre-bid or reporting key',
            tags: ['account'],
            requestBody: JSON_BODY({
              type: 'object',
              required: ['kind'],
              additionalProperties: false,
              properties: { kind: { type: 'string', enum: ['prebid', 'reporting'] }, grace_seconds: { type: 'integer', minimum: 0, maximum: 7776000, description: 'How long the replaced keys keep working (default --key-grace).' } },
            }),
          },
          { '200': jsonResponse('The new key, shown only this once.', ref('KeyRotation')), '413': TOO_LARGE('4 KB'), '422': UNPROCESSABLE('A bad kind or grace_seconds, or an unknown field.') },
        ),
      },
      '/v1/account/explain': {
        get: bearerOp(
          {
            operationId: 'explainLookup',
            summary: 'Why a lookup answers what it does (the lookup\'s query string, with p the customer\'s own partner ID)',
            tags: ['account'],
            parameters: [{ name: 'p', in: 'query', required: true, description: 'The customer\'s partner ID; every other lookup parameter as in the lookup.', schema: { type: 'string', format: 'uuid' } }],
          },
          { '200': jsonResponse('The explanation.', ref('Explanation')), ...explainRefusals },
        ),
      },
      '/v1/account/explain/ortb': {
        post: bearerOp(
          {
            operationId: 'explainOrtbLookup',
            summary: 'The same for an OpenRTB lookup: its BidRequest as the body',
            tags: ['account'],
            parameters: [{ name: 'p', in: 'query', required: true, schema: { type: 'string', format: 'uuid' } }],
            requestBody: JSON_BODY({ type: 'object', required: ['id', 'imp'] }),
          },
          {
            '200': jsonResponse('The explanation.', ref('Explanation')),
            '400': errorResponse(400, 'invalid_session; a body that is not one BidRequest object.'),
            '403': explainRefusals['403'],
            '411': errorResponse(411, 'A body without Content-Length or Transfer-Encoding.'),
            '413': TOO_LARGE('64 KB'),
            '415': errorResponse(415, 'A body that is not JSON.'),
            '501': errorResponse(501, 'A content or transfer coding other than gzip / chunked.'),
          },
        ),
      },
      '/v1/policy': {
        get: bearerOp(
          {
            operationId: 'getPolicy',
            summary: 'The customer\'s thresholds and allow/deny entries (docs/policy.md)',
            tags: ['policy'],
            parameters: [
              { name: 'kind', in: 'query', required: false, schema: { type: 'string', enum: [...ENTRY_KINDS] } },
              { name: 'search', in: 'query', required: false, description: 'A case-insensitive substring of the value.', schema: { type: 'string', maxLength: 1024 } },
              { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: MAX_ENTRIES } },
              { name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: MAX_ENTRIES, default: 0 } },
            ],
          },
          { '200': jsonResponse('The policy.', ref('Policy')), '422': UNPROCESSABLE('A bad kind, search, limit or offset, or another parameter.') },
        ),
        put: bearerOp(
          { operationId: 'replacePolicy', summary: 'Replaces the whole policy (what is left out is emptied or back to the default)', tags: ['policy'], requestBody: JSON_BODY(ref('PolicyReplace')) },
          {
            '200': jsonResponse('How many entries the policy now has.', { type: 'object', required: ['entries'], additionalProperties: false, properties: { entries: count } }),
            '413': errorResponse(413, 'Past the per-customer cap or the memory budget\'s policy share; `field` names what.'),
            '422': UNPROCESSABLE('A bad value; `field` names it (e.g. `entries[3].value`).'),
          },
        ),
        patch: bearerOp(
          { operationId: 'setThresholds', summary: 'Changes the band thresholds only', tags: ['policy'], requestBody: JSON_BODY(ref('Thresholds')) },
          { '200': jsonResponse('The thresholds now.', ref('ThresholdsAnswer')), '413': TOO_LARGE('4 KB'), '422': UNPROCESSABLE('A threshold out of its bounds, medium not below high, or an unknown field.') },
        ),
      },
      '/v1/policy/entries': {
        post: bearerOp(
          {
            operationId: 'addPolicyEntries',
            summary: 'Adds entries; an existing (kind, value) takes the new action',
            tags: ['policy'],
            requestBody: JSON_BODY({ type: 'object', required: ['entries'], additionalProperties: false, properties: { entries: { type: 'array', items: ref('PolicyEntry') } } }),
          },
          {
            '200': jsonResponse('Added, and the entries now.', { type: 'object', required: ['added', 'entries'], additionalProperties: false, properties: { added: count, entries: count } }),
            '413': errorResponse(413, 'Past the per-customer cap or the memory budget\'s policy share.'),
            '422': UNPROCESSABLE('A bad entry; `field` names it.'),
          },
        ),
      },
      '/v1/policy/entries/remove': {
        post: bearerOp(
          {
            operationId: 'removePolicyEntries',
            summary: 'Removes entries by (kind, value)',
            tags: ['policy'],
            requestBody: JSON_BODY({
              type: 'object',
              required: ['entries'],
              additionalProperties: false,
              properties: { entries: { type: 'array', items: { type: 'object', required: ['kind', 'value'], properties: { kind: { type: 'string', enum: [...ENTRY_KINDS] }, value: { type: 'string' }, action: { type: 'string', enum: [...ACTIONS] } } } } },
            }),
          },
          {
            '200': jsonResponse('Removed, and the entries now.', { type: 'object', required: ['removed', 'entries'], additionalProperties: false, properties: { removed: count, entries: count } }),
            '413': errorResponse(413, 'The body is over its limit.'),
            '422': UNPROCESSABLE('A bad entry; `field` names it.'),
          },
        ),
      },
      '/v1/feedback': {
        post: bearerOp(
          { operationId: 'postFeedback', summary: 'Labels learnt after the fact for the customer\'s own lookups, by lid', tags: ['feedback'], requestBody: JSON_BODY(ref('FeedbackLabels')) },
          {
            '200': jsonResponse('Taken whole.', { type: 'object', required: ['accepted', 'invalid', 'valid'], additionalProperties: false, properties: { accepted: count, invalid: count, valid: count } }),
            '413': TOO_LARGE('512 KB'),
            '422': UNPROCESSABLE('An item\'s lid malformed, forged or another customer\'s, or its label or source wrong (the message names it); nothing is kept.'),
          },
        ),
      },
      ...reportPaths({ security: BEARER, refusals: { '400': INVALID_SESSION }, tag: 'reports', idSuffix: 'Bearer' }),
      '/dashboard-config.json': {
        get: {
          operationId: 'dashboardConfig',
          summary: 'The addresses the dashboard shows (the bound ports)',
          tags: ['dashboard'],
          security: [],
          responses: { '200': jsonResponse('The three base addresses.', ref('DashboardConfig')) },
        },
      },
      '/openapi.json': openApiPath('account'),
      '/openapi/{file}': {
        get: {
          operationId: 'openapiFile',
          summary: 'The three descriptions: this port\'s, the pre-bid port\'s and the reporting port\'s',
          tags: ['meta'],
          security: [],
          parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string', enum: [...OPENAPI_FILES] } }],
          responses: { '200': jsonResponse('An OpenAPI 3.1 document.', { type: 'object', required: ['openapi', 'info', 'paths'] }), '404': PATH_NOT_FOUND },
        },
      },
    },
    components: {
      schemas: schemas(),
      securitySchemes: { bearer: SECURITY_SCHEMES.bearer!, passwordGrant: SECURITY_SCHEMES.passwordGrant! },
    },
  };
}
