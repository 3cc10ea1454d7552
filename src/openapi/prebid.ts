// The pre-bid port (9898, plain HTTP/1.1, uWebSockets.js): the GET lookup, the OpenRTB
// lookup, the impression beacon and the health check (spec 4.4, 4.5; docs/integrations.md,
// docs/post-bid.md). The parameters come from PARAM_NAMES, the lookup's own list.
import { AD_TYPES, BANDS, DEVICE_TYPES } from '../base/enums.ts';
import { PARAM_NAMES, type ParamName } from '../prebid/params.ts';
import { REASON_CLASS } from '../signals/category.ts';
import { ERROR_BODY, errorResponse, info, jsonResponse, JSON_TYPE, OPENAPI_VERSION, PATH_NOT_FOUND, ref, SECURITY_SCHEMES, WRONG_METHOD, type JsonObject } from './common.ts';

const PARAMS: Record<ParamName, { required?: boolean; description: string; schema?: JsonObject }> = {
  p: { required: true, description: 'Partner ID identifying the account (a UUID).', schema: { type: 'string', format: 'uuid' } },
  k: { required: true, description: 'The pre-bid API key (the `prebidKey` scheme).' },
  pub: { required: true, description: 'Publisher ID: field 2 of the ads.txt entry.' },
  node: { required: true, description: 'Bidder or prebid instance/server identifier.' },
  ip: { required: true, description: 'Client IP address (IPv4 or IPv6).' },
  ua: { required: true, description: 'User agent, URL-encoded.' },
  uid: { required: true, description: 'Unique user ID: cookie ID on web, IFA on mobile and CTV.' },
  ifa: { description: 'Device IFA (IDFA/AAID); expected on mobile and CTV.' },
  app: { description: 'App ID / bundle ID (case-sensitive); expected for in-app and CTV traffic.' },
  sid: { required: true, description: 'Supplier ID: the domain of the supplier/exchange, field 1 of ads.txt.' },
  adt: { required: true, description: `Ad type: ${Object.entries(AD_TYPES).map(([k, v]) => `${k} ${v}`).join(', ')}.`, schema: { type: 'integer', enum: Object.keys(AD_TYPES).map(Number) } },
  dvt: { required: true, description: `Device type: ${Object.entries(DEVICE_TYPES).map(([k, v]) => `${k} ${v}`).join(', ')}.`, schema: { type: 'integer', enum: Object.keys(DEVICE_TYPES).map(Number) } },
  rat: { description: 'Rendered ad type (spec 2.4); its meaning depends on adt.', schema: { type: 'integer', minimum: 0, maximum: 8 } },
  adv: { description: 'Advertiser ID.' },
  plc: { description: 'Placement ID.' },
  cre: { description: 'Creative ID.' },
  cb: { description: 'Cache buster.' },
  dim: { description: 'Creative dimensions, `{Width}x{Height}`.', schema: { type: 'string', pattern: '^\\d+x\\d+$' } },
  aid: { description: 'Ad ID: unique identifier of the creative.' },
  geo: { description: 'Two-letter ISO 3166-1 country code.', schema: { type: 'string', pattern: '^[A-Za-z]{2}$' } },
  p1: { description: 'Custom reporting dimension 1.' },
  p2: { description: 'Custom reporting dimension 2.' },
  p3: { description: 'Custom reporting dimension 3.' },
  p4: { description: 'Custom reporting dimension 4.' },
  p5: { description: 'Custom reporting dimension 5.' },
  schain: { description: 'Supply chain, `<version>,<complete>!<node>!…`, each node `asi,sid,hp,rid,name,domain` (the OpenRTB supply-chain string). Put it first in the query string.' },
  dmn: { description: 'Domain of the page (a reporting dimension).' },
  cmp: { description: 'Campaign ID (a reporting dimension).' },
};

const LOOKUP_RULES =
  'Rules (spec 4.4): the whole request at most 8 KB (413); the path and parameter names lowercase; values URL-encoded and free of `#`, `@`, `=` and `;` ' +
  '(400 `forbidden_character`); each parameter at most once. Unknown parameters (such as `rid`) are ignored.';

function lookupParameters(names: readonly ParamName[]): JsonObject[] {
  return names.map((n) => {
    const p = PARAMS[n];
    return { name: n, in: 'query', required: p.required ?? false, description: p.description, schema: p.schema ?? { type: 'string' } };
  });
}

const ANSWER_REFUSALS = (what: string): Record<string, JsonObject> => ({
  '400': errorResponse(400, `A required parameter missing, a value malformed or with a forbidden character, a parameter repeated or in upper case${what}.`),
  '401': errorResponse(401, 'The partner ID `p` or the key `k` missing or wrong.'),
  '404': errorResponse(404, 'No such endpoint.'),
  '405': WRONG_METHOD,
  '413': errorResponse(413, 'The request (URL and headers, or the OpenRTB body) is over its limit.'),
  '503': errorResponse(503, 'The server is starting (data not loaded yet) or draining: no verdict; go on without one.'),
});

const VERDICT = ['botRisk', 'components', 'ipReputation', 'uaValid', 'schain'];

export function prebidDocument(): JsonObject {
  const verdict: Record<string, JsonObject> = {
    botRisk: {
      type: 'object',
      required: ['score', 'band', 'confidence'],
      additionalProperties: false,
      properties: {
        score: { type: 'number', minimum: 0, maximum: 1, description: 'Combined risk, 0 to 1: higher is more likely invalid.' },
        band: { type: 'string', enum: [...BANDS] },
        confidence: { type: 'number', minimum: 0, maximum: 1, description: '0: not enough data yet; higher is more confident.' },
      },
    },
    components: {
      type: 'object',
      required: ['p_hard', 'p_givt', 'p_sivt', 'p_hist'],
      additionalProperties: false,
      properties: Object.fromEntries(['p_hard', 'p_givt', 'p_sivt', 'p_hist'].map((k) => [k, { type: 'number', minimum: 0, maximum: 1 }])),
    },
    ipReputation: {
      type: 'object',
      required: ['ipBotActivity', 'ipHosting', 'ipVpn'],
      additionalProperties: false,
      properties: { ipBotActivity: { type: 'boolean' }, ipHosting: { type: 'boolean' }, ipVpn: { type: 'boolean' } },
    },
    uaValid: { type: 'boolean', description: 'false: the user agent is malformed, spoofed, or inconsistent with the other signals.' },
    schain: {
      type: 'object',
      required: ['valid', 'verified', 'complete'],
      additionalProperties: false,
      properties: { valid: { type: 'boolean' }, verified: { type: 'boolean' }, complete: { type: 'integer', enum: [0, 1] } },
    },
    lid: { type: 'string', pattern: '^[A-Za-z0-9_-]+$', description: 'The lookup id (base64url, signed): put it in the impression tracker (docs/post-bid.md).' },
  };
  const schemas: Record<string, JsonObject> = {
    LookupResponse: {
      type: 'object',
      description: 'Spec 2.2: four sections plus uaValid, and the lookup id `lid` for the impression beacon.',
      required: VERDICT,
      additionalProperties: false,
      properties: verdict,
    },
    OrtbResponse: {
      description: 'The lookup response plus the OpenRTB answer\'s members.',
      type: 'object',
      required: [...VERDICT, 'id', 'reasons', 'missing'],
      additionalProperties: false,
      properties: {
        ...verdict,
        id: { type: 'string', description: 'The BidRequest id.' },
        nbr: { type: 'integer', description: 'The OpenRTB no-bid reason to use; present only in the high band.' },
        reasons: {
          type: 'array',
          items: {
            type: 'object',
            required: ['code', 'class'],
            additionalProperties: false,
            properties: { code: { type: 'string', enum: Object.keys(REASON_CLASS) }, class: { type: 'string', enum: [...new Set(Object.values(REASON_CLASS))] } },
          },
        },
        missing: { type: 'array', items: { type: 'string' }, description: 'Recommended BidRequest fields that were absent (they lower confidence; never a 400).' },
        unusable: {
          type: 'array',
          items: { type: 'object', required: ['field', 'why'], additionalProperties: false, properties: { field: { type: 'string' }, why: { type: 'string' } } },
        },
      },
    },
  };
  return {
    openapi: OPENAPI_VERSION,
    info: info(
      'ivtd pre-bid lookups',
      'The lookup port (default 9898, plain HTTP/1.1) on the bidder host: one bid request in, a bot/IVT prediction out. ' +
        'Every refusal is JSON `{"error","message"}`, except /health-check, which has no body. Any status but 200 means no verdict: fail open.',
    ),
    servers: [{ url: 'http://127.0.0.1:9898', description: 'The default --prebid-port.' }],
    tags: [{ name: 'lookup' }, { name: 'beacon' }, { name: 'health' }],
    security: [{ prebidKey: [] }],
    paths: {
      '/api/v1/ivt/lookup': {
        get: {
          operationId: 'lookup',
          summary: 'One bid request in, a prediction out (spec 4.4)',
          description: LOOKUP_RULES,
          tags: ['lookup'],
          parameters: lookupParameters(PARAM_NAMES),
          responses: { '200': jsonResponse('The prediction.', ref('LookupResponse')), ...ANSWER_REFUSALS('') },
        },
      },
      '/api/v1/ivt/ortb': {
        post: {
          operationId: 'lookupOrtb',
          summary: 'A lookup from an OpenRTB 2.4–2.6 BidRequest, sent unchanged (docs/integrations.md)',
          description: 'The query names the customer, its key and the node; any lookup parameter given in the query is taken over the body\'s. Body at most 64 KB (`Content-Encoding: gzip` accepted).',
          tags: ['lookup'],
          parameters: lookupParameters(PARAM_NAMES),
          requestBody: {
            required: true,
            content: { [JSON_TYPE]: { schema: { type: 'object', required: ['id', 'imp'], properties: { id: { type: 'string' }, imp: { type: 'array', minItems: 1, items: { type: 'object' } } } } } },
          },
          responses: {
            '200': jsonResponse('The prediction with the OpenRTB members.', ref('OrtbResponse')),
            ...ANSWER_REFUSALS(', or a body that is not one JSON object with `id` and a non-empty `imp`'),
            '411': errorResponse(411, 'A body without Content-Length or Transfer-Encoding.'),
            '415': errorResponse(415, 'A body that is not JSON (Content-Type).'),
            '501': errorResponse(501, 'A transfer coding other than chunked.'),
          },
        },
      },
      '/api/v1/ivt/imp': Object.fromEntries(
        (['get', 'post'] as const).map((m) => [
          m,
          {
            operationId: m === 'get' ? 'impressionBeacon' : 'impressionBeaconPost',
            summary: m === 'get' ? 'The impression beacon (docs/post-bid.md)' : 'The impression beacon as navigator.sendBeacon sends it (the body is never read)',
            tags: ['beacon'],
            security: [],
            parameters: [
              { name: 'lid', in: 'query', required: true, description: 'The `lid` of the lookup answer.', schema: { type: 'string' } },
              { name: 'fmt', in: 'query', required: false, description: '`gif`: answer a 1×1 transparent GIF instead of 204.', schema: { type: 'string', enum: ['gif'] } },
            ],
            responses: {
              '200': { description: 'With fmt=gif: a 1×1 transparent GIF.', content: { 'image/gif': { schema: { type: 'string', contentMediaType: 'image/gif' } } } },
              '204': { description: 'Taken (whatever the impression was judged).' },
              '400': errorResponse(400, 'The lid missing, garbled, altered or signed with another secret; a bad fmt.'),
              '404': PATH_NOT_FOUND,
              '405': WRONG_METHOD,
              '413': errorResponse(413, 'The request is over 8 KB.'),
              '503': errorResponse(503, 'The server is starting or draining.'),
            },
          },
        ]),
      ),
      // Any method (HEAD included) gets the status and no body: each is listed.
      '/health-check': Object.fromEntries(
        (['get', 'head', 'post', 'put', 'delete', 'patch', 'options'] as const).map((m) => [
          m,
          {
            operationId: m === 'get' ? 'healthCheck' : `healthCheck_${m}`,
            summary: 'Whether lookups are served (spec 4.5); any method, no body',
            description: 'Poll every 10 s to once a minute.',
            tags: ['health'],
            security: [],
            responses: { '200': { description: 'Healthy.' }, '413': errorResponse(413, 'The request is over 8 KB.'), '503': { description: 'Up, but cannot serve lookups (starting, draining, or data not loaded).' } },
          },
        ]),
      ),
    },
    components: { schemas: { ErrorBody: ERROR_BODY, ...schemas }, securitySchemes: { prebidKey: SECURITY_SCHEMES.prebidKey! } },
  };
}
