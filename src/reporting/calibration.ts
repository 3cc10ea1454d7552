// GET /v1/report/calibration?start_date&end_date: per band the lookup answered, how often
// its lookups turned out invalid, the evidence for the customer's thresholds (docs/post-bid.md).
// The truth is the customer's own feedback (POST /v1/feedback, one label per lid, the latest):
// labelled_lookups, invalid_lookups and invalid_share rest on it alone. Beacons are shown
// apart (by_beacon) and only for what they are: evidence that an impression was invalid
// (a replay, another device). A clean beacon proves nothing (a bot fires its own), so a
// beaconed lookup is never counted valid: counted with the feedback it turned the bands
// upside down (synthetic traffic: high 9.5 % invalid, low 24.2 %).
// by_beacon.labelled: lookups whose first beacon came (valid or mismatch); by_beacon.invalid:
// those a mismatch or a first replay showed invalid (counted by the threads: labelled_lookups
// of the impression rollups).
import { timestampValue } from '@duckdb/node-api';
import { BANDS, type Band } from '../base/enums.ts';
import { HttpError } from '../base/errors.ts';
import type { Store } from '../store/db.ts';
import { IMPRESSION_TABLES } from './columns.ts';
import { parseReportQuery } from './params.ts';

export const CALIBRATION_PATH = '/v1/report/calibration';

export interface CalibrationCounts {
  labelled: number;
  invalid: number;
}

export type LabelCounts = CalibrationCounts;

/**
 * Where the beacons' labels are counted: the impressions' daily rollups in DuckDB (one
 * host), or in ClickHouse (a fleet's reporting host, src/fleet/reports.ts). Per band the
 * lookup answered: labelled lookups (first beacon valid or mismatch) and invalid ones
 * (mismatch, or the first replay of a lookup first seen valid).
 */
export interface BeaconLabels {
  byBand(customerId: string, fromMs: number, toMs: number): Promise<Array<{ band: string } & LabelCounts>>;
}

/** The beacons' labels in the host's own DuckDB. */
export class DuckDbBeaconLabels implements BeaconLabels {
  constructor(private readonly store: Store) {}

  async byBand(customerId: string, fromMs: number, toMs: number): Promise<Array<{ band: string } & LabelCounts>> {
    // A connection of its own: a report never queues behind the writer's transaction.
    const conn = await this.store.connection();
    const rows = await conn.all<{ band: string; labelled: bigint | null; invalid: bigint | null }>(
      `SELECT band, sum(labelled_lookups) FILTER (WHERE imp_status IN ('valid', 'mismatch'))::BIGINT AS labelled, ` +
        `sum(labelled_lookups) FILTER (WHERE imp_status IN ('mismatch', 'replay'))::BIGINT AS invalid ` +
        `FROM ${IMPRESSION_TABLES.day} WHERE customer_id = $1 AND period_start >= $2 AND period_start < $3 GROUP BY band`,
      [customerId, timestampValue(BigInt(fromMs) * 1000n), timestampValue(BigInt(toMs) * 1000n)],
    ).finally(() => conn.close());
    return rows.map((r) => ({ band: r.band, labelled: Number(r.labelled ?? 0), invalid: Number(r.invalid ?? 0) }));
  }
}

export interface CalibrationRow {
  band: Band;
  /** Lookups the customer labelled (feedback), and the invalid ones: the truth. */
  labelled_lookups: number;
  invalid_lookups: number;
  /** invalid / labelled of the feedback, 4 decimals; null when nothing was labelled. */
  invalid_share: number | null;
  /** Lookups whose beacon came, and those it showed invalid: a floor of the invalid, no proof of the valid. */
  by_beacon: CalibrationCounts;
  by_feedback: CalibrationCounts;
}

export interface Calibration {
  meta: { start_date: string; end_date: string };
  rows: CalibrationRow[];
}

export class CalibrationReport {
  private readonly beacons: BeaconLabels;

  constructor(
    private readonly store: Store,
    private readonly opts: { retentionDays: number; now?: () => number; beacons?: BeaconLabels },
  ) {
    this.beacons = opts.beacons ?? new DuckDbBeaconLabels(store);
  }

  async run(customerId: string, params: URLSearchParams): Promise<Calibration> {
    for (const name of params.keys()) {
      if (name !== 'start_date' && name !== 'end_date') {
        throw new HttpError('unknown_parameter', `Unknown parameter "${name}". Known: start_date, end_date.`);
      }
    }
    // The same date rules and errors as /v1/report.
    const q = parseReportQuery(params, { nowMs: (this.opts.now ?? Date.now)(), retentionDays: this.opts.retentionDays });
    const from = timestampValue(BigInt(q.fromMs) * 1000n);
    const to = timestampValue(BigInt(q.toMs) * 1000n);
    const beacons = await this.beacons.byBand(customerId, q.fromMs, q.toMs);
    const conn = await this.store.connection();
    try {
      const feedback = await conn.all<{ band: string; labelled: bigint; invalid: bigint }>(
        `SELECT band, count(*)::BIGINT AS labelled, (count(*) FILTER (WHERE label = 'invalid'))::BIGINT AS invalid ` +
          `FROM feedback_labels WHERE customer_id = $1 AND lookup_at >= $2 AND lookup_at < $3 GROUP BY band`,
        [customerId, from, to],
      );
      const counts = (rows: Array<{ band: string; labelled: bigint | number | null; invalid: bigint | number | null }>, band: Band): CalibrationCounts => {
        const r = rows.find((x) => x.band === band);
        return { labelled: Number(r?.labelled ?? 0), invalid: Number(r?.invalid ?? 0) };
      };
      const rows = BANDS.map((band): CalibrationRow => {
        const b = counts(beacons, band);
        const f = counts(feedback, band);
        // Feedback alone: a beacon is never evidence that a lookup was valid.
        return {
          band,
          labelled_lookups: f.labelled,
          invalid_lookups: f.invalid,
          invalid_share: f.labelled === 0 ? null : Math.round((f.invalid / f.labelled) * 10000) / 10000,
          by_beacon: b,
          by_feedback: f,
        };
      });
      return { meta: { start_date: q.startDate, end_date: q.endDate }, rows };
    } finally {
      conn.close();
    }
  }
}
