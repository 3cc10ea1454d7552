// Exactly-once delivery of one batch into one ClickHouse rollup table, without
// transactions. It rests on three facts about ClickHouse (18.16 and current):
//   1. One INSERT whose rows fit one block and one partition is written as one part,
//      committed by a rename: after any failure it is either all there or not there.
//   2. The batch's marker row travels in that same INSERT, so "is the marker there?"
//      answers "is the batch there?" (markers are unique per batch; summing never
//      merges them into other rows).
//   3. A statement sent under a query_id that is still running is refused
//      (QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING), and a finished INSERT has committed or
//      not: so once system.processes no longer lists the id, the marker check is final.
// Rule: a batch that may ever have been sent (the spool records each first attempt before
// it is made) is resolved before it is sent again: still running → wait; marker present →
// done; marker absent → send. Only a batch never attempted is sent without asking.
import type { Granularity } from '../reporting/columns.ts';
import type { ClickHouse } from './clickhouse.ts';
import { FleetError } from './clickhouse.ts';
import { LOOKUP_FLEET_ROLLUPS, MARKER_CUSTOMER, insertRows, markerPeriodSeconds, type Batch, type FleetRollups } from '../reporting/batches.ts';
import { sqlInt, sqlString } from './sql.ts';

export type DeliveryOutcome = 'sent' | 'found';

/** The query_id of a batch's INSERT into one table: the same on every attempt. */
export function deliveryQueryId(batchId: string, g: Granularity, kind: FleetRollups = LOOKUP_FLEET_ROLLUPS): string {
  return `ivtd-${batchId}-${kind.queryTag}${g}`;
}

/** True when a failure proves the request never reached ClickHouse (no connection was made). */
export function certainlyNotSent(e: unknown): boolean {
  return e instanceof FleetError && !e.uncertain && e.chCode === null;
}

export class BatchDelivery {
  /** Pairs found already in ClickHouse after an uncertain attempt (for tests and metrics). */
  found = 0;

  constructor(
    private readonly ch: ClickHouse,
    private readonly kind: FleetRollups = LOOKUP_FLEET_ROLLUPS,
  ) {}

  /** True when ClickHouse still runs the statement with this query_id. */
  private async running(queryId: string): Promise<boolean> {
    const r = await this.ch.rows<{ n: string }>(`SELECT count() AS n FROM system.processes WHERE query_id = ${sqlString(queryId)}`, 'delivery check');
    return Number(r[0]?.n ?? 0) > 0;
  }

  /** True when the batch's marker (hence the whole batch) is in the table. */
  async landed(g: Granularity, batch: Batch): Promise<boolean> {
    const r = await this.ch.rows<{ n: string }>(
      `SELECT count() AS n FROM ${this.kind.tables[g]} WHERE customer_id = ${sqlString(MARKER_CUSTOMER)} ` +
        `AND period_start = toDateTime(${sqlInt(markerPeriodSeconds(g, batch))}) AND pub = ${sqlString(batch.batchId)}`,
      'delivery check',
    );
    return Number(r[0]?.n ?? 0) > 0;
  }

  /**
   * Puts the batch into table `g` exactly once; rejects (and stays resolvable) on any
   * failure. `mayHaveBeenSent`: the batch was attempted before, so ask first.
   */
  async deliver(g: Granularity, batch: Batch, mayHaveBeenSent: boolean): Promise<DeliveryOutcome> {
    const queryId = deliveryQueryId(batch.batchId, g, this.kind);
    if (mayHaveBeenSent) {
      if (await this.running(queryId)) {
        throw new FleetError(`batch ${batch.batchId} is still being written to ${this.kind.tables[g]}; will check again`, null, true);
      }
      if (await this.landed(g, batch)) {
        this.found++;
        return 'found';
      }
    }
    await this.ch.insert(this.kind.tables[g], insertRows(g, batch, this.kind), queryId);
    return 'sent';
  }
}
