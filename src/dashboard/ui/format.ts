// Number and label formatting shared by the pages. Fixed locale so every user (and the
// browser tests) sees the same digits.
import { AD_TYPES, DEVICE_TYPES } from '../../base/enums.ts';
import { CATEGORY_LABELS, CATEGORY_NOT_RECORDED } from './labels.ts';

const INT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function formatInt(n: number): string {
  return INT.format(n);
}

/** A count with its noun: "1 entry", "2 entries", "1,000 entries". */
export function countOf(n: number, one: string, many: string): string {
  return `${INT.format(n)} ${n === 1 ? one : many}`;
}

/** Invalid share of all transactions, 0..1; 0 when there are none. */
export function ivtRate(invalid: number, total: number): number {
  return total > 0 ? invalid / total : 0;
}

/** A rate 0..1 as a percentage with one decimal, e.g. "12.5%"; "–" without transactions. */
export function formatRate(rate: number, total: number): string {
  return total > 0 ? `${(rate * 100).toFixed(1)}%` : '–';
}

/** Human meaning of an enumerated dimension value (dvt, adt, category), for tooltips. */
export function dimensionValueLabel(dimension: string, value: unknown): string | undefined {
  if (dimension === 'category') return value === '' ? CATEGORY_NOT_RECORDED : (CATEGORY_LABELS as Record<string, string>)[String(value)];
  const table: Record<number, string> | undefined =
    dimension === 'dvt' ? DEVICE_TYPES : dimension === 'adt' ? AD_TYPES : undefined;
  return table?.[Number(value)];
}

/** A key prefix shown masked: the part we know, then dots for the part that is stored only hashed. */
export function maskedKey(prefix: string): string {
  return `${prefix}${'•'.repeat(Math.max(4, 36 - prefix.length))}`;
}

/** "2024-05-01 13:45 UTC" from an ISO timestamp. */
export function formatUtc(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
