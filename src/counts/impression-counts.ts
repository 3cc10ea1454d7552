// How a lookup thread counts an impression for the reports: like a lookup (thread-counts.ts),
// into a slot of a shared table (its own SharedCounts, within the budget's impressions
// share), keyed by (the lookup's tuple, the band it answered, the beacon's status). A thread
// does not know the lookup's dimension values, only its tuple's hash (the lid carries it),
// so it announces (tuple hash, band, status) once per new slot and the main thread finds the
// values in its tuple dictionary (impression-dictionary.ts). The hour is the lookup's.
// A customer's impression tuples per hour are bounded like its lookup tuples: past it an
// impression counts in the hour's overflow (dimensions unknown). When the table has no room
// (or the lookup's hour is no longer live: an expired beacon) the thread keeps the count in
// a small map of its own, sent with its next report. Counted, never dropped.
import { IMP_STATUSES, type ImpStatus } from '../base/enums.ts';
import { HASH, hashAdd, hashAddNumber, hashBegin, hashEnd, hashId } from '../memory/hash.ts';
import { hourStart } from '../base/time.ts';
import { FULL, NEW, REFUSED, SharedCounts, type SharedCountsMemory } from './shared-counts.ts';

/** Band positions (BANDS order: low, medium, high). */
const BAND_INDEX: Readonly<Record<string, number>> = { low: 0, medium: 1, high: 2 };
const STATUS_INDEX: Readonly<Record<ImpStatus, number>> = Object.fromEntries(IMP_STATUSES.map((s, i) => [s, i])) as Record<ImpStatus, number>;

/** An impression slot a thread added (hi, lo: its key), or counts it kept itself (`n`, `invalid`). */
export interface ImpressionTuple {
  hi: number;
  lo: number;
  customerId: string;
  /** The lookup's hour start, ms. */
  hour: number;
  /** The lookup's reporting tuple (0, 0 with `overflow`). */
  tupleHi: number;
  tupleLo: number;
  /** BANDS index. */
  band: number;
  /** IMP_STATUSES index. */
  status: number;
  /** The customer's impression tuples for the hour were used up: dimensions unknown. */
  overflow: boolean;
}

export interface ImpressionRowDelta extends ImpressionTuple {
  n: number;
  /** Of them, beacons that labelled their lookup (see count()). */
  labelled: number;
}

/** A thread's own rows at most (then they fold into the overflow key of their customer-hour). */
const LOCAL_MAX = 4096;

/** The slot key of an impression tuple into HASH. */
export function impressionKey(seed: number, customerId: string, hour: number, tupleHi: number, tupleLo: number, band: number, status: number, overflow: boolean): void {
  hashBegin(seed);
  hashAdd(customerId);
  hashAddNumber(hour);
  hashAddNumber(tupleHi);
  hashAddNumber(tupleLo);
  hashAddNumber(band * 16 + status + (overflow ? 256 : 0));
  hashEnd();
}

export class ImpressionCounts {
  readonly shared: SharedCounts;
  private readonly seed: number;
  private announced: ImpressionTuple[] = [];
  private local = new Map<number, ImpressionRowDelta>();

  constructor(memory: SharedCountsMemory) {
    this.shared = new SharedCounts(memory);
    this.seed = memory.seed;
  }

  /**
   * One impression of the lookup (customer, time `at`, tuple), band and status. `labels`
   * 1: this beacon labels its lookup for calibration (its first, or the first replay of a
   * lookup first seen valid); counted in the third counter.
   */
  count(f: { customerId: string; at: number; tupleHi: number; tupleLo: number; band: string }, status: ImpStatus, now: number, labels = 0): void {
    const hour = hourStart(f.at);
    const band = BAND_INDEX[f.band] ?? 0;
    const st = STATUS_INDEX[status];
    const invalid = status === 'valid' ? 0 : 1;
    let overflow = false;
    let tHi = f.tupleHi, tLo = f.tupleLo;
    impressionKey(this.seed, f.customerId, hour, tHi, tLo, band, st, false);
    let hi = HASH[0]!, lo = HASH[1]!;
    let r = this.shared.count(hi, lo, f.customerId, hour, now, 1, invalid, labels, false);
    if (r === REFUSED) {
      overflow = true;
      tHi = 0;
      tLo = 0;
      impressionKey(this.seed, f.customerId, hour, 0, 0, band, st, true);
      hi = HASH[0]!;
      lo = HASH[1]!;
      r = this.shared.count(hi, lo, f.customerId, hour, now, 1, invalid, labels, true);
    }
    if (r === NEW) {
      this.announced.push({ hi, lo, customerId: f.customerId, hour, tupleHi: tHi, tupleLo: tLo, band, status: st, overflow });
    } else if (r === FULL) {
      this.keep(hi, lo, f.customerId, hour, tHi, tLo, band, st, overflow, labels);
    }
  }

  private keep(hi: number, lo: number, customerId: string, hour: number, tHi: number, tLo: number, band: number, status: number, overflow: boolean, labels: number): void {
    const id = hashId(hi, lo);
    let row = this.local.get(id);
    if (row === undefined && this.local.size >= LOCAL_MAX && !overflow) {
      impressionKey(this.seed, customerId, hour, 0, 0, band, status, true);
      return this.keep(HASH[0]!, HASH[1]!, customerId, hour, 0, 0, band, status, true, labels);
    }
    if (row === undefined) {
      row = { hi, lo, customerId, hour, tupleHi: tHi, tupleLo: tLo, band, status, overflow, n: 0, labelled: 0 };
      this.local.set(id, row);
    }
    row.n++;
    row.labelled += labels;
  }

  /** What goes to the main thread with the next report. */
  take(): { announced: ImpressionTuple[]; rows: ImpressionRowDelta[] } {
    const announced = this.announced;
    this.announced = [];
    const rows = this.local.size === 0 ? [] : [...this.local.values()];
    if (rows.length > 0) this.local = new Map();
    return { announced, rows };
  }
}
