// Messages between the main thread and the lookup threads.
import type { DataBundle } from '../data/bundle.ts';
import type { CountRow } from './counts.ts';
import type { KeyRecord } from './keys.ts';

export interface LookupWorkerInit {
  index: number;
  host: string;
  port: number;
  keys: KeyRecord[];
  maxTuples: number;
  /** Milliseconds between count flushes to the main thread. */
  countsIntervalMs: number;
}

/** Per-thread lookup statistics since the last report (for /metrics). */
export interface LookupStats {
  byStatus: Record<string, number>;
  byBand: Record<string, number>;
  /** Latency histogram bucket counts, bounds in LATENCY_BUCKETS_US. */
  latency: number[];
  latencySumUs: number;
  overflowed: number;
}

/** Upper bounds (µs) of the lookup latency histogram buckets; a last bucket is +Inf. */
export const LATENCY_BUCKETS_US = [10, 25, 50, 100, 250, 500, 1000, 2500, 10000];

export type ToWorker =
  | { type: 'data'; id: number; bundle: DataBundle }
  | { type: 'keys'; keys: KeyRecord[] }
  | { type: 'stop' };

export type FromWorker =
  | { type: 'listening'; index: number; port: number }
  | { type: 'listen-failed'; index: number; message: string }
  | { type: 'data-ok'; index: number; id: number }
  | { type: 'data-failed'; index: number; id: number; message: string }
  | { type: 'counts'; index: number; rows: CountRow[]; stats: LookupStats }
  | { type: 'stopped'; index: number; rows: CountRow[]; stats: LookupStats };
