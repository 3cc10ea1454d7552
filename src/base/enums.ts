// One source of truth for the spec's enumerations (interface-spec 2.4) and the
// reporting dimensions (4.6). Tests, docs and the dashboard import from here.

/** Device type `dvt` (OpenRTB 2.6 / AdCOM 1.0). */
export const DEVICE_TYPES = {
  1: 'Mobile / tablet',
  2: 'Personal computer',
  3: 'Connected TV',
  4: 'Phone',
  5: 'Tablet',
  6: 'Connected device',
  7: 'Set-top box',
  8: 'Digital out-of-home',
} as const;
export type DeviceType = keyof typeof DEVICE_TYPES;

/** Device types that count as CTV for the conditional-parameter rule (need app + ifa). */
export const CTV_DEVICE_TYPES: ReadonlySet<number> = new Set([3, 6, 7]);

/** Ad type `adt`. */
export const AD_TYPES = { 1: 'Banner', 2: 'Video', 3: 'Audio', 4: 'Native' } as const;
export type AdType = keyof typeof AD_TYPES;

/**
 * Rendered ad type `rat`, valid values per `adt` (2.4 table). 0 (unknown) is valid for all.
 * Rows 1-2 are read as two cells each (display+native for 1, display+audio for 2),
 * rows 3-7 as video only, row 8 as display only: the literal reading of the sheet.
 */
export const RENDERED_AD_TYPES: Readonly<Record<number, ReadonlySet<number>>> = {
  1: new Set([0, 1, 2, 8]),
  2: new Set([0, 3, 4, 5, 6, 7]),
  3: new Set([0, 2]),
  4: new Set([0, 1]),
};

/** Reporting environments. */
export const ENVIRONMENTS = ['site', 'app', 'dooh'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** `env` = `app` when an app is present, `dooh` for dvt=8, else `site` (DESIGN.md). */
export function environmentOf(app: string | undefined | null, dvt: number): Environment {
  if (app) return 'app';
  if (dvt === 8) return 'dooh';
  return 'site';
}

/**
 * Reporting dimensions, in the order of spec 4.6, then `category` (issue 11): why an
 * invalid transaction is invalid, one value of CATEGORIES (src/signals/category.ts).
 * New dimensions go last: the rollup tables gain them as their last column.
 */
export const DIMENSIONS = [
  'date', 'hour', 'pub', 'sid', 'app', 'dmn', 'node', 'adt', 'geo', 'dvt', 'os', 'browser',
  'env', 'cmp', 'adv', 'p1', 'p2', 'p3', 'p4', 'p5', 'category',
] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** Dimensions a transaction carries besides its time (date/hour come from the hour bucket). */
export const TUPLE_DIMENSIONS = DIMENSIONS.filter((d) => d !== 'date' && d !== 'hour') as Exclude<
  Dimension,
  'date' | 'hour'
>[];
export type TupleDimension = (typeof TUPLE_DIMENSIONS)[number];

/** Filters accepted by the reporting API (same names as the dimensions). */
export const FILTERS = [
  'pub', 'sid', 'app', 'dmn', 'geo', 'dvt', 'os', 'browser', 'env', 'adt', 'cmp', 'adv', 'node',
  'p1', 'p2', 'p3', 'p4', 'p5', 'category',
] as const;
export type Filter = (typeof FILTERS)[number];

/**
 * What the impression beacon found (docs/post-bid.md): `valid`; `replay` (its lid came
 * before); `mismatch` (another network and another UA family than the lookup's device);
 * `expired` (later than --imp-ttl after the lookup). All but `valid` are invalid impressions.
 */
export const IMP_STATUSES = ['valid', 'replay', 'mismatch', 'expired'] as const;
export type ImpStatus = (typeof IMP_STATUSES)[number];

export const BANDS = ['low', 'medium', 'high'] as const;
export type Band = (typeof BANDS)[number];

/** Transaction classes for reporting. */
/** `policy`: the customer's own deny list decided (outside GIVT and SIVT, counted in total only). */
export type TransactionClass = 'valid' | 'givt' | 'sivt' | 'policy';

/** Default ports (DESIGN.md contracts). */
export const DEFAULT_PORTS = { prebid: 9898, api: 9899, reporting: 9900 } as const;
