// Why an invalid transaction is invalid, as one value from a fixed list aligned with MRC's
// GIVT/SIVT taxonomy: the reporting dimension `category` and the grouping of the reason
// codes in the admin explain. Every reason code maps to exactly one category (a test
// checks the list is complete); a transaction's category is that of its leading reason,
// the one that contributed most, and `none` for valid transactions.

import { CATEGORIES, type Category } from './category-list.ts';
import { NBR_ADS_TXT_VIOLATION, NBR_CLOUD_PROXY, NBR_NON_HUMAN, NBR_SCHAIN_INCOMPLETE, NBR_SCHAIN_NODE_BLOCKED, NBR_SPIDER, REASONS, REASON_BY_CODE, type ReasonClass } from './reasons.ts';

export { NBR_ADS_TXT_VIOLATION, NBR_CLOUD_PROXY, NBR_NON_HUMAN, NBR_SCHAIN_INCOMPLETE, NBR_SCHAIN_NODE_BLOCKED, NBR_SPIDER, type ReasonClass };

export { CATEGORIES, type Category };

/**
 * The category of each reason code the score and a customer's policy can give (a view of
 * the table of reasons, reasons.ts). Only `allowlisted` has `none`: an allowed transaction
 * is valid, so it never leads an invalid one.
 */
export const REASON_CATEGORY: Readonly<Record<string, Category>> = Object.fromEntries(REASONS.map((r) => [r.code, r.category]));

/** The category of a transaction: its leading reason's, or 'none' when it is valid. */
export function categoryOf(valid: boolean, leadingReason: string): Category {
  if (valid || leadingReason === '') return 'none';
  return REASON_CATEGORY[leadingReason] ?? 'none';
}

/**
 * The MRC class of each reason code, as classifyTransaction (score.ts) counts it (a view of
 * reasons.ts): the hard and GIVT components are GIVT, the SIVT and history components SIVT,
 * and the customer's own allow/deny list is neither (POLICY). Shown to bidders beside each
 * reason (OpenRTB lookups, docs/lookup.md "Lookups from an OpenRTB bid request").
 */
export const REASON_CLASS: Readonly<Record<string, ReasonClass>> = Object.fromEntries(REASONS.map((r) => [r.code, r.class]));

/**
 * The OpenRTB 2.x no-bid reason (`nbr`) an invalid transaction implies: its leading reason's
 * (reasons.ts) — 3 known web spider for a declared crawler, an AI agent or an uptime monitor, 5 cloud,
 * data-center or proxy IP, 12 a seller the publisher's ads.txt / app-ads.txt does not
 * authorise, 16 an incomplete supply chain, else 4 suspected non-human traffic — and 17
 * when the customer's deny list blocked a supply-chain node (`sellerDenied`: the deny came
 * from a seller entry; other deny entries are 4). Valid traffic has none.
 */
export function noBidReason(valid: boolean, leadingReason: string, sellerDenied = false): number | null {
  if (valid) return null;
  if (leadingReason === 'denylisted' && sellerDenied) return NBR_SCHAIN_NODE_BLOCKED;
  return REASON_BY_CODE.get(leadingReason)?.nbr ?? NBR_NON_HUMAN;
}
