// ivtd_transactions_total{category, class}: the transactions counted for reporting (every
// lookup answered 200), by reporting category (src/signals/category.ts; `none` for a valid
// one) and class (valid, givt, sivt; policy: the customer's own deny list). Tallied on the
// main thread from the count rows as the reporting writer drains them (every flush
// interval) and from the rows a thread hands over itself, so the lookup path does no more
// work. The Grafana dashboard's "IVT rate by category" reads it (docs/monitoring.md).
import { Counter, type Registry } from 'prom-client';
import { TUPLE_DIMENSIONS } from '../base/enums.ts';
import type { CountRow } from '../counts/tuple.ts';

const CATEGORY_AT = TUPLE_DIMENSIONS.indexOf('category');

export class TransactionTally {
  private counter: Counter<'category' | 'class'> | null = null;
  /** Counts seen before the counter is registered (the writer may drain first). */
  private early = new Map<string, number>();

  /** Registers the counter (once the metrics registry exists). */
  register(registry: Registry): void {
    this.counter = new Counter({
      name: 'ivtd_transactions_total',
      help: 'Transactions counted for reporting (lookups answered 200) by reporting category (none: valid) and class (valid, givt, sivt, policy); updated as reporting drains the counts (every --flush-interval).',
      labelNames: ['category', 'class'],
      registers: [registry],
    });
    this.flush(this.early);
    this.early.clear();
  }

  add(rows: readonly CountRow[]): void {
    if (rows.length === 0) return;
    // Summed per label pair first: a flush's rows hold many tuples of few categories.
    const sums = new Map<string, number>();
    const put = (category: string, cls: string, n: number) => {
      if (n > 0) sums.set(`${category}\u0000${cls}`, (sums.get(`${category}\u0000${cls}`) ?? 0) + n);
    };
    for (const r of rows) {
      const category = r.dims[CATEGORY_AT] || 'unknown';
      put(category, 'givt', r.givt);
      put(category, 'sivt', r.sivt);
      // The rest of the total: valid, or (category denylisted) the customer's own policy.
      put(category, category === 'denylisted' ? 'policy' : 'valid', r.total - r.givt - r.sivt);
    }
    if (this.counter) this.flush(sums);
    else for (const [k, n] of sums) this.early.set(k, (this.early.get(k) ?? 0) + n);
  }

  private flush(sums: Map<string, number>): void {
    for (const [key, n] of sums) {
      const [category, cls] = key.split('\u0000') as [string, string];
      this.counter!.inc({ category, class: cls }, n);
    }
  }
}
