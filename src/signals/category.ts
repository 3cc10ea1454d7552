// Why an invalid transaction is invalid, as one value from a fixed list aligned with MRC's
// GIVT/SIVT taxonomy: the reporting dimension `category` and the grouping of the reason
// codes in the admin explain. Every reason code maps to exactly one category (a test
// checks the list is complete); a transaction's category is that of its leading reason,
// the one that contributed most, and `none` for valid transactions.

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
};

/** The category of a transaction: its leading reason's, or 'none' when it is valid. */
export function categoryOf(valid: boolean, leadingReason: string): Category {
  if (valid || leadingReason === '') return 'none';
  return REASON_CATEGORY[leadingReason] ?? 'none';
}
