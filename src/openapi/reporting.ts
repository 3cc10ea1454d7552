// The reporting port (default 9900): the three reports with HTTP Basic (customer ID :
// reporting key), spec 4.6 (docs/reporting-api.md).
import { ERROR_BODY, errorResponse, info, openApiPath, OPENAPI_VERSION, SECURITY_SCHEMES, type JsonObject } from './common.ts';
import { reportPaths, reportSchemas } from './report-paths.ts';

export function reportingDocument(): JsonObject {
  return {
    openapi: OPENAPI_VERSION,
    info: info(
      'ivtd reporting API',
      'The reporting port (default 9900, HTTPS with --tls-cert): transactions and impressions aggregated by dimension, the same data as the dashboard\'s analytics. ' +
        'Every error body is JSON `{"error","message"}`. Authentication and the rate limit are checked before the parameters.',
    ),
    servers: [{ url: 'http://127.0.0.1:9900', description: 'The default --reporting-port.' }],
    tags: [{ name: 'reports' }, { name: 'meta' }],
    paths: {
      ...reportPaths({
        security: [{ basic: [] }],
        refusals: {
          '401': errorResponse(401, 'Basic credentials missing, malformed or wrong.', { headers: ['WWW-Authenticate'] }),
        },
        tag: 'reports',
        idSuffix: '',
      }),
      '/openapi.json': openApiPath('reporting'),
    },
    components: { schemas: { ErrorBody: ERROR_BODY, ...reportSchemas() }, securitySchemes: { basic: SECURITY_SCHEMES.basic! } },
  };
}
