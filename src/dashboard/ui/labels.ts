// What the analytics page calls each reporting dimension and metric. Keyed by the one
// list in src/base/enums.ts, so a new dimension fails the typecheck until it is labelled here.
import type { Dimension, Filter } from '../../base/enums.ts';
import type { Category } from '../../signals/category.ts';

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
  category: 'IVT category',
};

/**
 * What each IVT category means (MRC's GIVT/SIVT taxonomy). Keyed by the one list in
 * src/signals/category.ts, so a new category fails the typecheck until it is named here.
 */
export const CATEGORY_LABELS: Readonly<Record<Category, string>> = {
  declared_crawler: 'Declared crawler or spider',
  ai_agent: 'AI agent or AI crawler',
  monitoring: 'Uptime monitor or synthetic check',
  automation: 'Automated or headless browser',
  data_center: 'Data-center traffic',
  non_routable_ip: 'Non-routable IP address',
  malformed_ua: 'Malformed user agent',
  known_bad_device: 'Known-bad or invalid device ID',
  activity: 'Irregular activity (frequency)',
  anonymizing_proxy: 'Proxy, VPN or Tor',
  device_spoofing: 'Device or user-agent spoofing',
  supply_chain: 'Supply-chain problem',
  geo_mismatch: 'Geography mismatch',
  denylisted: 'On your deny list',
  none: 'Valid: no reason',
};

/** The category of transactions counted before ivtd recorded categories. */
export const CATEGORY_NOT_RECORDED = 'Not recorded (counted before categories)';

/** Placeholder examples for the filter inputs. */
export const FILTER_HINTS: Readonly<Partial<Record<Filter, string>>> = {
  geo: 'e.g. US,GB',
  dvt: 'e.g. 2,4 (1–8)',
  adt: 'e.g. 1,2 (1–4)',
  env: 'site, app or dooh',
  category: 'e.g. data_center,declared_crawler',
};

export const METRICS = [
  { key: 'total_transactions', label: 'Total' },
  { key: 'valid_transactions', label: 'Valid' },
  { key: 'invalid_transactions', label: 'Invalid' },
  { key: 'givt_transactions', label: 'GIVT' },
  { key: 'sivt_transactions', label: 'SIVT' },
] as const;
export type MetricKey = (typeof METRICS)[number]['key'];
