// Why an invalid transaction is invalid, as one value from a fixed list aligned with MRC's
// GIVT/SIVT taxonomy: the reporting dimension `category` and the grouping of the reason
// codes in the admin explain. Every reason code maps to exactly one category (a test
// checks the list is complete); a transaction's category is that of its leading reason,
// the one that contributed most, and `none` for valid transactions.

import { GIVT_WEIGHTS, HARD_WEIGHTS, HISTORY_TERMS, POLICY_REASONS, SIVT_WEIGHTS } from './score.ts';

/** The categories, in a fixed order (reporting values; the dashboard shows them in it). */
export const CATEGORIES = [
  'declared_crawler',
  'automation',
  'data_center',
  'non_routable_ip',
  'malformed_ua',
  'known_bad_device',
  'activity',
  'anonymizing_proxy',
  'device_spoofing',
  'supply_chain',
  'geo_mismatch',
  /** The customer's own deny list (src/policy). */
  'denylisted',
  'none',
] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * The category of each reason code the score and a customer's policy can give. Only
 * `allowlisted` has `none`: an allowed transaction is valid, so it never leads an invalid one.
 */
export const REASON_CATEGORY: Readonly<Record<string, Category>> = {
  allowlisted: 'none',
  denylisted: 'denylisted',
  ip_bogon: 'non_routable_ip',
  ua_malformed: 'malformed_ua',
  ifa_known_bad: 'known_bad_device',
  ifa_malformed: 'known_bad_device',
  ifa_zero: 'known_bad_device',
  device_impossible: 'device_spoofing',
  ua_inconsistent: 'device_spoofing',
  sua_mismatch: 'device_spoofing',
  ifa_type_mismatch: 'device_spoofing',
  ssai_spoof: 'device_spoofing',
  ua_declared_bot: 'declared_crawler',
  ua_headless: 'automation',
  asn_hosting: 'data_center',
  ip_tor: 'anonymizing_proxy',
  ip_proxy: 'anonymizing_proxy',
  ip_vpn: 'anonymizing_proxy',
  ip_relay: 'anonymizing_proxy',
  geo_mismatch: 'geo_mismatch',
  schain_invalid: 'supply_chain',
  schain_unverified: 'supply_chain',
  schain_incomplete: 'supply_chain',
  seller_unauthorized: 'supply_chain',
  ip_velocity: 'activity',
  ip_many_uas: 'activity',
  ip_many_uids: 'activity',
  uid_velocity: 'activity',
  uid_ip_hopping: 'activity',
  uid_many_uas: 'activity',
  ifa_velocity: 'activity',
  ifa_ip_hopping: 'activity',
  ip_bot_history: 'activity',
  uid_bot_history: 'activity',
  uid_activity_excessive: 'activity',
  ifa_activity_excessive: 'activity',
  ip_activity_excessive: 'activity',
};

/** The category of a transaction: its leading reason's, or 'none' when it is valid. */
export function categoryOf(valid: boolean, leadingReason: string): Category {
  if (valid || leadingReason === '') return 'none';
  return REASON_CATEGORY[leadingReason] ?? 'none';
}

/**
 * The MRC class of each reason code, as classifyTransaction (score.ts) counts it: the hard
 * and GIVT components are GIVT, the SIVT and history components SIVT, and the customer's
 * own allow/deny list is neither (POLICY). Shown to bidders beside each reason (OpenRTB
 * lookups, README "Lookups from an OpenRTB bid request").
 */
export type ReasonClass = 'GIVT' | 'SIVT' | 'POLICY';
export const REASON_CLASS: Readonly<Record<string, ReasonClass>> = Object.fromEntries([
  ...Object.keys(HARD_WEIGHTS).map((c) => [c, 'GIVT']),
  ...Object.keys(GIVT_WEIGHTS).map((c) => [c, 'GIVT']),
  ...Object.keys(SIVT_WEIGHTS).map((c) => [c, 'SIVT']),
  ...Object.keys(HISTORY_TERMS).map((c) => [c, 'SIVT']),
  ...POLICY_REASONS.map((c) => [c, 'POLICY']),
]);

/**
 * The OpenRTB 2.x no-bid reason (`nbr`) an invalid transaction implies, by its leading
 * reason: 3 known web spider, 5 cloud, data-center or proxy IP, 12 seller not authorised by
 * the publisher's ads.txt / app-ads.txt, 16 incomplete supply chain, 17 a supply-chain node
 * the customer's policy blocks (`sellerDenied`: the deny came from a seller entry), else 4
 * suspected non-human traffic (a customer's other deny entries included). Valid traffic has none.
 */
export const NBR_SPIDER = 3;
export const NBR_NON_HUMAN = 4;
export const NBR_CLOUD_PROXY = 5;
export const NBR_ADS_TXT_VIOLATION = 12;
export const NBR_SCHAIN_INCOMPLETE = 16;
export const NBR_SCHAIN_NODE_BLOCKED = 17;
export function noBidReason(valid: boolean, leadingReason: string, sellerDenied = false): number | null {
  if (valid) return null;
  if (leadingReason === 'seller_unauthorized') return NBR_ADS_TXT_VIOLATION;
  if (leadingReason === 'schain_incomplete') return NBR_SCHAIN_INCOMPLETE;
  if (leadingReason === 'denylisted' && sellerDenied) return NBR_SCHAIN_NODE_BLOCKED;
  const c = REASON_CATEGORY[leadingReason];
  if (c === 'declared_crawler') return NBR_SPIDER;
  if (c === 'data_center' || c === 'anonymizing_proxy') return NBR_CLOUD_PROXY;
  return NBR_NON_HUMAN;
}
