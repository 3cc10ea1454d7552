// A bounded set of values seen by a lookup thread between two count messages (site
// domains, app bundle IDs, advertising-system domains), for the main thread's data
// refresher to crawl. Distinct values only, at most `max` per interval: memory stays
// bounded whatever the traffic, and the first values of an interval win.
import { ownString } from '../memory/own-string.ts';

export class SeenSample {
  private values = new Set<string>();

  constructor(private readonly max: number) {}

  /** Cost: one Set probe (two for a new value); nothing once the interval's sample is full. A value kept is copied: it may be a slice of a request's body. */
  add(value: string): void {
    if (value === '' || value.length > 253 || this.values.size >= this.max || this.values.has(value)) return;
    this.values.add(ownString(value));
  }

  /** The sample so far, emptied for the next interval. */
  drain(): string[] {
    if (this.values.size === 0) return [];
    const out = [...this.values];
    this.values = new Set();
    return out;
  }
}
