// The reporting query's parameters (spec 4.6), checked in two rounds so the status is
// predictable: first everything that makes the request malformed (400: unknown or
// repeated parameter, missing date, malformed date, unknown dimension), then values out
// of range (422: limit, offset, date order, retention, enumeration values).
import { AD_TYPES, BANDS, DEVICE_TYPES, DIMENSIONS, ENVIRONMENTS, FILTERS, IMP_STATUSES, type Dimension, type Filter } from '../base/enums.ts';
import { HttpError } from '../base/errors.ts';
import { CATEGORIES } from '../signals/category.ts';
import { DAY_MS } from '../base/time.ts';
import { parseWholeNumber } from '../base/whole-number.ts';
import { oldestKeptDayMs } from './retention-window.ts';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 1000;
/** Values one filter may list; more is a 422 (keeps the SQL parameter list small). */
export const MAX_FILTER_VALUES = 1000;

const BASE_PARAMETERS = ['start_date', 'end_date', 'group_by', 'limit', 'offset'] as const;

/**
 * What the impressions report (GET /v1/report/impressions) adds to the lookup dimensions,
 * each a dimension and a filter: the band the lookup answered, and what the beacon found.
 */
export const IMPRESSION_DIMENSIONS = ['band', 'imp_status'] as const;
export type ImpressionDimension = (typeof IMPRESSION_DIMENSIONS)[number];
const IMPRESSION_VALUES: Readonly<Record<ImpressionDimension, readonly string[]>> = { band: BANDS, imp_status: IMP_STATUSES };

/** Which report: the lookups' (spec 4.6) or the impressions' (its dimensions and filters besides). */
export type ReportKind = 'lookups' | 'impressions';

/** A dimension of either report. */
export type ReportDimension = Dimension | ImpressionDimension;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

export interface ReportFilter {
  dimension: Filter | ImpressionDimension;
  /** Distinct values; numbers for adt/dvt. */
  values: Array<string | number>;
}

export interface ReportQuery {
  startDate: string;
  endDate: string;
  /** Window [fromMs, toMs): start_date 00:00 UTC to the day after end_date. */
  fromMs: number;
  toMs: number;
  groupBy: ReportDimension[];
  limit: number;
  offset: number;
  filters: ReportFilter[];
}

export interface ParseContext {
  nowMs: number;
  retentionDays: number;
  /** Default 'lookups'. */
  kind?: ReportKind;
}

const bad = (code: 'missing_parameter' | 'invalid_parameter' | 'unknown_parameter' | 'unknown_dimension' | 'duplicate_parameter', msg: string) =>
  new HttpError(code, msg);
const outOfRange = (msg: string) => new HttpError('unprocessable', msg, 422);

/** Midnight UTC (ms) of a real calendar date `YYYY-MM-DD`, or null. */
export function parseDate(s: string): number | null {
  const m = DATE_RE.exec(s);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  // Date.UTC maps years 0-99 to 1900-1999; the round trip also rejects 2025-02-30.
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null;
  return ms;
}

export function formatDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function wholeNumber(name: string, raw: string | null, fallback: number): number {
  if (raw === null) return fallback;
  const n = parseWholeNumber(raw);
  if (n === undefined) throw outOfRange(`${name} must be a whole number, got "${raw}".`);
  return n;
}

function filterValues(f: Filter | ImpressionDimension, raw: string): Array<string | number> {
  const parts = raw.split(',');
  if (parts.length > MAX_FILTER_VALUES) throw outOfRange(`${f} lists more than ${MAX_FILTER_VALUES} values.`);
  const out = new Set<string | number>();
  for (const v of parts) {
    if (v === '') throw outOfRange(`${f} has an empty value; list one or more values separated by commas.`);
    if (f === 'adt' || f === 'dvt') {
      const set = f === 'adt' ? AD_TYPES : DEVICE_TYPES;
      if (!/^\d$/.test(v) || !(v in set)) throw outOfRange(`${f} value "${v}" is not one of ${Object.keys(set).join(', ')}.`);
      out.add(Number(v));
    } else if (f === 'env') {
      if (!(ENVIRONMENTS as readonly string[]).includes(v)) throw outOfRange(`env value "${v}" is not one of ${ENVIRONMENTS.join(', ')}.`);
      out.add(v);
    } else if (f === 'band' || f === 'imp_status') {
      const allowed = IMPRESSION_VALUES[f];
      if (!allowed.includes(v)) throw outOfRange(`${f} value "${v}" is not one of ${allowed.join(', ')}.`);
      out.add(v);
    } else if (f === 'category') {
      if (!(CATEGORIES as readonly string[]).includes(v)) throw outOfRange(`category value "${v}" is not one of ${CATEGORIES.join(', ')}.`);
      out.add(v);
    } else {
      // Countries are recorded upper-case (ISO 3166-1 alpha-2); accept either case.
      out.add(f === 'geo' ? v.toUpperCase() : v);
    }
  }
  return [...out];
}

/** Parses and checks a report request; throws the HttpError to answer with. */
export function parseReportQuery(params: URLSearchParams, ctx: ParseContext): ReportQuery {
  const extra: readonly ImpressionDimension[] = ctx.kind === 'impressions' ? IMPRESSION_DIMENSIONS : [];
  const filterNames: ReadonlyArray<Filter | ImpressionDimension> = [...FILTERS, ...extra];
  const dimensions: readonly ReportDimension[] = [...DIMENSIONS, ...extra];
  const known = new Set<string>([...BASE_PARAMETERS, ...filterNames]);
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!known.has(name)) {
      throw bad('unknown_parameter', `Unknown parameter "${name}". Known: ${[...BASE_PARAMETERS, ...filterNames].join(', ')}.`);
    }
    if (seen.has(name)) throw bad('duplicate_parameter', `"${name}" is given more than once; list several values separated by commas.`);
    seen.add(name);
  }

  const startDate = params.get('start_date');
  const endDate = params.get('end_date');
  if (startDate === null || startDate === '') throw bad('missing_parameter', 'start_date is required (YYYY-MM-DD).');
  if (endDate === null || endDate === '') throw bad('missing_parameter', 'end_date is required (YYYY-MM-DD).');
  const fromMs = parseDate(startDate);
  if (fromMs === null) throw bad('invalid_parameter', `start_date "${startDate}" is not a date in the form YYYY-MM-DD.`);
  const endMs = parseDate(endDate);
  if (endMs === null) throw bad('invalid_parameter', `end_date "${endDate}" is not a date in the form YYYY-MM-DD.`);

  const groupBy: ReportDimension[] = [];
  const rawGroup = params.get('group_by') ?? '';
  if (rawGroup !== '') {
    for (const d of rawGroup.split(',')) {
      if (!(dimensions as readonly string[]).includes(d)) throw bad('unknown_dimension', `Unknown dimension "${d}" in group_by. Known: ${dimensions.join(', ')}.`);
      if (groupBy.includes(d as ReportDimension)) throw bad('invalid_parameter', `group_by lists "${d}" more than once.`);
      groupBy.push(d as ReportDimension);
    }
  }

  const limit = wholeNumber('limit', params.get('limit'), DEFAULT_LIMIT);
  if (limit < 1 || limit > MAX_LIMIT) throw outOfRange(`limit must be between 1 and ${MAX_LIMIT}, got ${limit}.`);
  const offset = wholeNumber('offset', params.get('offset'), 0);
  if (offset < 0) throw outOfRange(`offset must be 0 or more, got ${offset}.`);
  if (endMs < fromMs) throw outOfRange(`end_date ${endDate} is before start_date ${startDate}.`);
  const oldest = oldestKeptDayMs(ctx.nowMs, ctx.retentionDays);
  if (fromMs < oldest) {
    throw outOfRange(`start_date ${startDate} is beyond the retention of ${ctx.retentionDays} days; the oldest day kept is ${formatDate(oldest)}.`);
  }

  const filters: ReportFilter[] = [];
  for (const f of filterNames) {
    const raw = params.get(f);
    if (raw !== null) filters.push({ dimension: f, values: filterValues(f, raw) });
  }
  return { startDate, endDate, fromMs, toMs: endMs + DAY_MS, groupBy, limit, offset, filters };
}
