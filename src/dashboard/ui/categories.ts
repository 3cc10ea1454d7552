// Invalid traffic by category, from the rows of a report grouped by `category`: what the
// analytics page's breakdown shows and what its CSV holds. Pure (no DOM).
import { CATEGORIES } from '../../signals/category.ts';
import { dimensionValueLabel } from './format.ts';
import type { MetricRow } from './series.ts';

export type CategoryShare = {
  /** The API value ('' for transactions counted before categories were recorded). */
  category: string;
  label: string;
  invalid_transactions: number;
  givt_transactions: number;
  sivt_transactions: number;
  /** This category's part of all invalid transactions, 0..1, to 4 decimals. */
  share: number;
};

/** The CSV columns of the breakdown: API field names, then the share. */
export const CATEGORY_CSV_COLUMNS = ['category', 'invalid_transactions', 'givt_transactions', 'sivt_transactions', 'share'] as const;

const ORDER: ReadonlyMap<string, number> = new Map(CATEGORIES.map((c, i) => [c, i]));

/**
 * The categories that hold invalid transactions, most first (ties in the order of
 * CATEGORIES, unrecorded last). Valid traffic (`none`) has no invalid transactions and
 * drops out.
 */
export function categoryShares(rows: ReadonlyArray<MetricRow & { category?: unknown }>): CategoryShare[] {
  let all = 0;
  for (const r of rows) all += r.invalid_transactions;
  return rows
    .filter((r) => r.invalid_transactions > 0)
    .map((r) => {
      const category = r.category === undefined || r.category === null ? '' : String(r.category);
      return {
        category,
        label: dimensionValueLabel('category', category) ?? category,
        invalid_transactions: r.invalid_transactions,
        givt_transactions: r.givt_transactions,
        sivt_transactions: r.sivt_transactions,
        share: all > 0 ? Math.round((r.invalid_transactions / all) * 10_000) / 10_000 : 0,
      };
    })
    .sort((a, b) => b.invalid_transactions - a.invalid_transactions || rank(a.category) - rank(b.category));
}

function rank(c: string): number {
  return ORDER.get(c) ?? CATEGORIES.length;
}

/** e.g. ivtd-invalid-by-category_2024-05-01_2024-05-07.csv */
export function categoryCsvFileName(start: string, end: string): string {
  return `ivtd-invalid-by-category_${start}_${end}.csv`;
}
