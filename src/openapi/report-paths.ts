// The three report operations, the same on the reporting port (HTTP Basic) and on the
// account port (the dashboard's Bearer session): parameters, row schemas and refusals,
// from the lists the reporting code itself uses (src/base/enums.ts).
import { AD_TYPES, BANDS, DEVICE_TYPES, DIMENSIONS, ENVIRONMENTS, FILTERS, IMP_STATUSES } from '../base/enums.ts';
import { CATEGORIES } from '../signals/category.ts';
import { errorResponse, jsonResponse, ref, type JsonObject } from './common.ts';

export const REPORT_PATHS = { report: '/v1/report', impressions: '/v1/report/impressions', calibration: '/v1/report/calibration' } as const;

const IMPRESSION_DIMENSIONS = ['band', 'imp_status'] as const;
const REPORT_METRICS = ['total_transactions', 'valid_transactions', 'invalid_transactions', 'sivt_transactions', 'givt_transactions', 'policy_transactions'];
const IMPRESSION_METRICS = ['impressions', 'valid_impressions', 'invalid_impressions'];

const DATE = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'A UTC day, `YYYY-MM-DD`.' };
const COUNT = { type: 'integer', minimum: 0 };

function filterValues(name: string): JsonObject {
  const desc = 'One or more comma-separated values; a row matches one of them. Several filters combine with AND.';
  if (name === 'adt') return { description: `${desc} Ad types 1–4.`, schema: { type: 'string', pattern: '^[1-4](,[1-4])*$' } };
  if (name === 'dvt') return { description: `${desc} Device types 1–8.`, schema: { type: 'string', pattern: '^[1-8](,[1-8])*$' } };
  if (name === 'env') return { description: `${desc} ${ENVIRONMENTS.join(', ')}.`, schema: { type: 'string' } };
  if (name === 'category') return { description: `${desc} Categories: ${CATEGORIES.join(', ')}, none.`, schema: { type: 'string' } };
  if (name === 'band') return { description: `${desc} The band the lookup answered: ${BANDS.join(', ')}.`, schema: { type: 'string' } };
  if (name === 'imp_status') return { description: `${desc} What the beacon found: ${IMP_STATUSES.join(', ')}.`, schema: { type: 'string' } };
  if (name === 'geo') return { description: `${desc} ISO 3166-1 alpha-2 codes, either case.`, schema: { type: 'string' } };
  return { description: `${desc} Values are matched whole, as the lookup sent them.`, schema: { type: 'string' } };
}

function query(name: string, required: boolean, description: string, schema: JsonObject): JsonObject {
  return { name, in: 'query', required, description, schema };
}

function windowParameters(): JsonObject[] {
  return [
    query('start_date', true, 'First day of the window (UTC). Not older than the retention (`--retention-days`).', DATE),
    query('end_date', true, 'Last day of the window (UTC), inclusive; not before start_date.', DATE),
  ];
}

function reportParameters(impressions: boolean): JsonObject[] {
  const dims = impressions ? [...DIMENSIONS, ...IMPRESSION_DIMENSIONS] : [...DIMENSIONS];
  const filters = impressions ? [...FILTERS, ...IMPRESSION_DIMENSIONS] : [...FILTERS];
  return [
    ...windowParameters(),
    query('group_by', false, `Comma-separated dimensions, each once: ${dims.join(', ')}. Omitted or empty: one total row.`, { type: 'string' }),
    query('limit', false, 'Rows to return.', { type: 'integer', minimum: 1, maximum: 1000, default: 20 }),
    query('offset', false, 'Index of the first row to return.', { type: 'integer', minimum: 0, default: 0 }),
    ...filters.map((f) => ({ name: f, in: 'query', required: false, ...filterValues(f) })),
  ];
}

/** The schemas of the report answers (components/schemas). */
export function reportSchemas(): Record<string, JsonObject> {
  const dimensionValue = { oneOf: [{ type: 'string' }, { type: 'integer' }] };
  const row = (metrics: string[], dims: readonly string[]): JsonObject => ({
    type: 'object',
    required: metrics,
    propertyNames: { enum: [...dims, ...metrics] },
    properties: {
      ...Object.fromEntries(dims.map((d) => [d, d === 'hour' ? { type: 'integer', minimum: 0, maximum: 23 } : d === 'date' ? DATE : d === 'adt' || d === 'dvt' ? { type: 'integer' } : dimensionValue])),
      ...Object.fromEntries(metrics.map((m) => [m, COUNT])),
    },
  });
  const adt = Object.keys(AD_TYPES).map(Number);
  const dvt = Object.keys(DEVICE_TYPES).map(Number);
  return {
    ReportMeta: {
      type: 'object',
      required: ['start_date', 'end_date', 'group_by', 'total_rows', 'returned_rows', 'offset'],
      additionalProperties: false,
      properties: {
        start_date: DATE,
        end_date: DATE,
        group_by: { type: 'array', items: { type: 'string' } },
        total_rows: COUNT,
        returned_rows: COUNT,
        offset: COUNT,
      },
    },
    ReportRow: {
      ...row(REPORT_METRICS, DIMENSIONS),
      description: `One value per group_by dimension, then the metrics. invalid = givt + sivt; valid + invalid + policy = total. adt is one of ${adt.join(', ')} and dvt of ${dvt.join(', ')} (or 0 when unknown).`,
    },
    Report: {
      type: 'object',
      required: ['meta', 'rows'],
      additionalProperties: false,
      properties: { meta: ref('ReportMeta'), rows: { type: 'array', items: ref('ReportRow') } },
    },
    ImpressionRow: row(IMPRESSION_METRICS, [...DIMENSIONS, ...IMPRESSION_DIMENSIONS]),
    ImpressionReport: {
      type: 'object',
      required: ['meta', 'rows'],
      additionalProperties: false,
      properties: { meta: ref('ReportMeta'), rows: { type: 'array', items: ref('ImpressionRow') } },
    },
    LabelCounts: { type: 'object', required: ['labelled', 'invalid'], additionalProperties: false, properties: { labelled: COUNT, invalid: COUNT } },
    Calibration: {
      type: 'object',
      required: ['meta', 'rows'],
      additionalProperties: false,
      properties: {
        meta: { type: 'object', required: ['start_date', 'end_date'], additionalProperties: false, properties: { start_date: DATE, end_date: DATE } },
        rows: {
          type: 'array',
          items: {
            type: 'object',
            required: ['band', 'labelled_lookups', 'invalid_lookups', 'invalid_share', 'by_beacon', 'by_feedback'],
            additionalProperties: false,
            properties: {
              band: { type: 'string', enum: [...BANDS] },
              labelled_lookups: COUNT,
              invalid_lookups: COUNT,
              invalid_share: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'invalid / labelled, 4 decimals; null when nothing was labelled.' },
              by_beacon: ref('LabelCounts'),
              by_feedback: ref('LabelCounts'),
            },
          },
        },
      },
    },
  };
}

/**
 * The three report path items. `auth`: the security requirement and the refusals of that
 * port's authentication (401 Basic on the reporting port, 400 invalid_session on the account port).
 */
export function reportPaths(auth: { security: JsonObject[]; refusals: Record<string, JsonObject>; tag: string; idSuffix: string }): Record<string, JsonObject> {
  const common = (): Record<string, JsonObject> => ({
    ...auth.refusals,
    '429': errorResponse(429, 'Too many requests for this customer (or failed logins from this address, or reports waiting server-wide); wait `Retry-After` seconds.', { headers: ['Retry-After'] }),
  });
  const badParams = errorResponse(400, 'A required parameter missing, a malformed date, an unknown dimension, parameter or filter, or a parameter given twice.');
  const badValues = errorResponse(422, 'Invalid values: limit or offset out of range, end_date before start_date, start_date older than the retention, a filter value out of its list or empty, or a report too large for the memory DuckDB has.');
  const op = (id: string, summary: string, description: string, parameters: JsonObject[], schema: string) => ({
    get: {
      operationId: `${id}${auth.idSuffix}`,
      summary,
      description,
      tags: [auth.tag],
      security: auth.security,
      parameters,
      responses: { '200': jsonResponse('The report.', ref(schema)), '400': badParams, ...common(), '422': badValues },
    },
  });
  return {
    [REPORT_PATHS.report]: op('report', 'Transactions aggregated by dimension', 'Lookups that answered 200, counted per UTC hour and dimension values (docs/reporting-api.md).', reportParameters(false), 'Report'),
    [REPORT_PATHS.impressions]: op('impressionsReport', 'Impressions found by the beacons', 'What the impression beacons found after the bid, by the lookup\'s dimensions, band and beacon status (docs/post-bid.md).', reportParameters(true), 'ImpressionReport'),
    [REPORT_PATHS.calibration]: op('calibrationReport', 'Share of labelled lookups found invalid, per band', 'Per band answered: lookups labelled after the fact (beacons, feedback), how many were invalid, and that share.', windowParameters(), 'Calibration'),
  };
}
