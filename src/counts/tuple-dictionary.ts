// The main thread's half of shared-counts.ts: the dimension values of every tuple a lookup
// thread added to the shared table (announced once per tuple and hour), so that the
// flush can turn slots with counts into rows. Bounded like the table: entries live for
// their hour and the next, and the table admits no more tuples than fit here.
import { hashId } from '../memory/hash.ts';
import { HOUR_MS } from '../base/time.ts';
import type { SharedCounts } from './shared-counts.ts';
import { splitDims, type CountRow } from './tuple.ts';

/** A tuple a lookup thread added: its hash, customer, hour and values (joined by joinDims). */
export interface NewTuple {
  hi: number;
  lo: number;
  customerId: string;
  hour: number;
  dims: string;
}

interface Entry {
  customerId: string;
  hour: number;
  dims: string;
}

/** Bytes an entry takes, estimated from above (map slot, object, the joined values). */
export function dictionaryEntryBytes(dimsChars: number): number {
  return 120 + 2 * dimsChars;
}
/** A typical entry (about 80 characters of values), for sizing the admission limit. */
export const TYPICAL_ENTRY_BYTES = dictionaryEntryBytes(80);

/**
 * A row drained from the shared counts. Its values stay one string (the dictionary's own)
 * until something reads `dims`: a flush writes thousands of rows, and per-value strings
 * for all of them at once would only be garbage a moment later.
 */
class DrainedRow implements CountRow {
  constructor(
    readonly id: number,
    readonly customerId: string,
    readonly hour: number,
    private readonly joined: string,
    public total: number,
    public givt: number,
    public sivt: number,
  ) {}
  /** Split on each read, kept by nobody: read it once per use. */
  get dims(): string[] {
    return splitDims(this.joined);
  }

  /** As a plain row (JSON: the fleet spool). */
  toJSON(): CountRow {
    return { id: this.id, customerId: this.customerId, hour: this.hour, dims: this.dims, total: this.total, givt: this.givt, sivt: this.sivt };
  }
}

export class TupleDictionary {
  private readonly entries = new Map<number, Entry>();
  /** One string per customer id, whichever message it came in. */
  private readonly customers = new Map<string, string>();

  get size(): number {
    return this.entries.size;
  }

  /** A known tuple's customer and values (joined by joinDims), or undefined: the impressions resolve their lookup's tuple here. */
  entry(id: number): { customerId: string; hour: number; dims: string } | undefined {
    return this.entries.get(id);
  }

  /** Records tuples announced by a lookup thread. */
  add(list: readonly NewTuple[]): void {
    for (const t of list) {
      let customerId = this.customers.get(t.customerId);
      if (customerId === undefined) {
        customerId = t.customerId;
        this.customers.set(customerId, customerId);
      }
      this.entries.set(hashId(t.hi, t.lo), { customerId, hour: t.hour, dims: t.dims });
    }
  }

  /**
   * Rows for every shared slot with counts whose tuple is known, zeroing those slots (a
   * slot announced later is drained at a later flush). Then forgets tuples of hours that
   * can no longer be counted.
   */
  drain(shared: SharedCounts, now: number): CountRow[] {
    const rows: CountRow[] = [];
    shared.drain((hi, lo, total, givt, sivt) => {
      const id = hashId(hi, lo);
      const e = this.entries.get(id);
      if (e === undefined) return false;
      rows.push(new DrainedRow(id, e.customerId, e.hour, e.dims, total, givt, sivt));
      return true;
    });
    const oldest = now - (now % HOUR_MS) - HOUR_MS;
    for (const [id, e] of this.entries) if (e.hour < oldest) this.entries.delete(id);
    if (this.entries.size === 0) this.customers.clear();
    return rows;
  }
}
