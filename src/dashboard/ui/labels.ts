// What the analytics page calls each reporting dimension and metric. Keyed by the one
// list in src/enums.ts, so a new dimension fails the typecheck until it is labelled here.
import type { Dimension, Filter } from '../../enums.ts';

export const DIMENSION_LABELS: Readonly<Record<Dimension, string>> = {
  date: 'Date',
  hour: 'Hour (UTC)',
  pub: 'Publisher',
  sid: 'Supplier',
  app: 'App / bundle',
  dmn: 'Domain',
  node: 'Node',
  adt: 'Ad type',
  geo: 'Country',
  dvt: 'Device type',
  os: 'OS',
  browser: 'Browser',
  env: 'Environment',
  cmp: 'Campaign',
  adv: 'Advertiser',
  p1: 'Custom 1',
  p2: 'Custom 2',
  p3: 'Custom 3',
  p4: 'Custom 4',
  p5: 'Custom 5',
};

/** Placeholder examples for the filter inputs. */
export const FILTER_HINTS: Readonly<Partial<Record<Filter, string>>> = {
  geo: 'e.g. US,GB',
  dvt: 'e.g. 2,4 (1–8)',
  adt: 'e.g. 1,2 (1–4)',
  env: 'site, app or dooh',
};

export const METRICS = [
  { key: 'total_transactions', label: 'Total' },
  { key: 'valid_transactions', label: 'Valid' },
  { key: 'invalid_transactions', label: 'Invalid' },
  { key: 'givt_transactions', label: 'GIVT' },
  { key: 'sivt_transactions', label: 'SIVT' },
] as const;
export type MetricKey = (typeof METRICS)[number]['key'];
