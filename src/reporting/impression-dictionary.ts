// The main thread's half of impression-counts.ts: turns the impression slots the lookup
// threads count into rollup rows. A slot names its lookup's tuple by hash only; the values
// come from the lookups' tuple dictionary (tuple-dictionary.ts), looked up when the
// impression is announced (its lookup was announced before, a second or so after it was
// counted) and again at each drain until found. A tuple the dictionary does not hold (a
// lookup of the previous run of the process, of a tuple counted in a thread's own map, or
// of an hour the dictionary no longer holds) is asked for on disk (`resolver`:
// tuple-archive.ts, reporting_tuple_ids, which keeps the tuples of the hours --imp-ttl
// covers; the tuple seed comes from lid.key, so the hash is the same in every run): the
// impression waits while that lookup is under way (at most 30 s) and takes the values found.
// A tuple still unknown after that and MAX_MISSES drains (a lookup on another host of a
// fleet, a tuple the archive could not write or read, a lid naming a tuple never counted)
// is counted with every dimension `__overflow__`, and so is whatever still waits at the
// stop's last drain: the impression is counted, its lookup's dimensions are not known.
// Bounded like the lookups': entries live while their hour can be counted in the shared
// table; tuples found on disk at most `restoredMax` (from the memory plan), as long.
import { BANDS, IMP_STATUSES, TUPLE_DIMENSIONS } from '../base/enums.ts';
import { hashId } from '../memory/hash.ts';
import { HOUR_MS } from '../base/time.ts';
import type { ImpressionRowDelta, ImpressionTuple } from '../counts/impression-counts.ts';
import type { SharedCounts } from '../counts/shared-counts.ts';
import type { ArchivedTuple } from './tuple-archive.ts';
import type { TupleDictionary } from '../counts/tuple-dictionary.ts';
import { OVERFLOW, splitDims, type CountRow } from '../counts/tuple.ts';

/** Drains an impression waits for its lookup's tuple to be known before it is counted without its dimensions. */
export const MAX_MISSES = 3;
/** Rows kept from threads (their own maps) waiting for their tuple, at most. */
export const WAITING_MAX = 100_000;
/** Tuples found on disk (earlier runs) kept at most, unless the server sets restoredMax from its memory plan. */
export const RESTORED_MAX = 100_000;

/** Where tuples no one in memory knows are asked for (tuple-archive.ts): true while a lookup is under way. */
export interface TupleResolver {
  want(tupleId: number): boolean;
}

const UNKNOWN_DIMS: readonly string[] = TUPLE_DIMENSIONS.map(() => OVERFLOW);

interface Entry {
  customerId: string;
  hour: number;
  tupleId: number;
  band: number;
  status: number;
  overflow: boolean;
  /** The lookup's values once known (joined), else ''. */
  dims: string;
  misses: number;
}

/** A rollup row of the impressions (dims: the lookup's, then band, imp_status; total = impressions, givt = invalid, sivt = lookups labelled). */
function row(customerId: string, hour: number, dims: readonly string[], band: number, status: number, n: number, invalid: number, labelled: number): CountRow {
  return { customerId, hour, dims: [...dims, BANDS[band] ?? 'low', IMP_STATUSES[status] ?? 'valid'], total: n, givt: invalid, sivt: labelled };
}

export class ImpressionDictionary {
  private readonly entries = new Map<number, Entry>();
  private waiting: Array<ImpressionRowDelta & { misses: number }> = [];
  /** Rows that came while `waiting` was full: counted without their dimensions, one per (customer, hour, band, status). */
  private folded = new Map<string, ImpressionRowDelta>();
  /** Tuples of earlier runs found on disk (tuple-archive.ts), by id. */
  private readonly restored = new Map<number, ArchivedTuple>();
  /** Impressions counted without their lookup's dimensions (cumulative). */
  unresolved = 0;
  /** Impressions counted under dimensions found on disk (cumulative). */
  resolvedFromDisk = 0;
  /** Set at the start (src/server/serve.ts): the archive of earlier runs' tuples. */
  resolver: TupleResolver | null = null;
  /** Tuples found on disk kept at most (src/server/serve.ts: from the pending-counts share). */
  restoredMax = RESTORED_MAX;

  constructor(private readonly lookups: TupleDictionary) {}

  /** Tuples the archive found (main thread, after its lookup). */
  restore(found: ReadonlyMap<number, ArchivedTuple>): void {
    for (const [id, t] of found) {
      if (this.restored.size >= this.restoredMax) break;
      this.restored.set(id, t);
    }
  }

  /** Asks the resolver for a tuple: true while its answer may still come (the impression waits). */
  private waitFor(tupleId: number): boolean {
    return this.resolver !== null && this.resolver.want(tupleId);
  }

  get size(): number {
    return this.entries.size;
  }

  add(list: readonly ImpressionTuple[]): void {
    for (const t of list) {
      const tupleId = hashId(t.tupleHi, t.tupleLo);
      this.entries.set(hashId(t.hi, t.lo), {
        customerId: t.customerId, hour: t.hour, tupleId, band: t.band, status: t.status, overflow: t.overflow,
        dims: t.overflow ? '' : this.lookups.entry(tupleId)?.dims ?? '', misses: 0,
      });
    }
  }

  /** Counts a thread kept itself (its table had no room): resolved at the next drains. */
  addRows(rows: readonly ImpressionRowDelta[]): void {
    for (const r of rows) {
      if (this.waiting.length < WAITING_MAX) {
        this.waiting.push({ ...r, misses: 0 });
        continue;
      }
      this.unresolved += r.n;
      const k = `${r.customerId}\u001f${r.hour}\u001f${r.band}\u001f${r.status}`;
      const f = this.folded.get(k);
      if (f === undefined) this.folded.set(k, { ...r, overflow: true, tupleHi: 0, tupleLo: 0 });
      else {
        f.n += r.n;
        f.labelled += r.labelled;
      }
    }
  }

  /** The values of a lookup tuple, or null while unknown. */
  private valuesOf(tupleId: number, customerId: string): readonly string[] | null {
    const e = this.lookups.entry(tupleId) ?? this.restored.get(tupleId);
    return e !== undefined && e.customerId === customerId ? splitDims(e.dims) : null;
  }

  /**
   * Rows for every impression slot with counts (zeroed) and every waiting row that can go
   * now; `final` (the stop's drain) counts what still waits without its lookup's dimensions,
   * since no later drain will.
   */
  drain(shared: SharedCounts, now: number, final = false): CountRow[] {
    const rows: CountRow[] = [];
    shared.drain((hi, lo, total, givt, sivt) => {
      const e = this.entries.get(hashId(hi, lo));
      if (e === undefined) return false; // announced with the thread's next report
      let dims: readonly string[] | null = e.overflow ? UNKNOWN_DIMS : e.dims !== '' ? splitDims(e.dims) : this.valuesOf(e.tupleId, e.customerId);
      if (dims === null) {
        if (!final && (this.waitFor(e.tupleId) || ++e.misses < MAX_MISSES)) return false;
        dims = UNKNOWN_DIMS;
        this.unresolved += total;
      } else if (!e.overflow && e.dims === '') {
        e.dims = dims.join('\u001f');
      }
      rows.push(row(e.customerId, e.hour, dims, e.band, e.status, total, givt, sivt));
      return true;
    });
    const still: typeof this.waiting = [];
    for (const w of this.waiting) {
      let dims = w.overflow ? UNKNOWN_DIMS : this.valuesOf(hashId(w.tupleHi, w.tupleLo), w.customerId);
      if (dims === null) {
        if (!final && (this.waitFor(hashId(w.tupleHi, w.tupleLo)) || ++w.misses < MAX_MISSES)) {
          still.push(w);
          continue;
        }
        dims = UNKNOWN_DIMS;
        this.unresolved += w.n;
      }
      rows.push(row(w.customerId, w.hour, dims, w.band, w.status, w.n, IMP_STATUSES[w.status] === 'valid' ? 0 : w.n, w.labelled));
    }
    this.waiting = still;
    for (const f of this.folded.values()) rows.push(row(f.customerId, f.hour, UNKNOWN_DIMS, f.band, f.status, f.n, IMP_STATUSES[f.status] === 'valid' ? 0 : f.n, f.labelled));
    this.folded = new Map();
    const oldest = now - (now % HOUR_MS) - HOUR_MS;
    for (const [id, e] of this.entries) if (e.hour < oldest) this.entries.delete(id);
    for (const [id, t] of this.restored) if (t.hour < oldest) this.restored.delete(id);
    return rows;
  }
}
