// A filter's figures since its last report (once a second, with its thread's lookup stats),
// summed on the main thread into /metrics (src/ops/metrics.ts).

/** Why a request was forwarded without a verdict (fail open): each a /metrics label. */
export const FAIL_OPEN_REASONS = ['not_ready', 'unknown_partner', 'media_type', 'unparseable', 'refused', 'internal'] as const;
export type FailOpenReason = (typeof FAIL_OPEN_REASONS)[number];

/** Upper bounds (µs) of the upstream latency histogram (request sent to its answer whole); a last bucket is +Inf. */
export const UPSTREAM_BUCKETS_US = [250, 500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000];

export interface FilterStats {
  /** The filter's name (its /metrics label). */
  name: string;
  /** Requests sent on to the upstream (its answer returned, or a no-bid when it failed). */
  forwarded: number;
  /** Bid requests answered no-bid for their verdict (block mode), never sent on. */
  blocked: number;
  /** Bid requests the verdict would have blocked, forwarded (monitor mode). */
  wouldBlock: number;
  /** Forwarded without a verdict, by FailOpenReason. */
  failOpen: Record<string, number>;
  /** Upstream unreachable, refusing, resetting or answering garbage: answered no-bid. */
  upstreamErrors: number;
  /** Upstream slower than the request's time: answered no-bid. */
  timeouts: number;
  /** Requests the filter refused itself (a body over its limit: 413). */
  refused: number;
  /** Of upstreamErrors: requests answered no-bid because holding them (or their answer) would pass the filter's held-bytes cap. */
  overCap: number;
  /** Client connections closed as they came: MAX_CLIENT_CONNECTIONS were open. */
  droppedConnections: number;
  /** Bytes of requests and answers held at the report, and the most held since the last one (held-bytes.ts). */
  heldBytes: number;
  heldPeakBytes: number;
  /** Upstream answer times: counts per UPSTREAM_BUCKETS_US bucket, and their sum. */
  upstreamLatency: number[];
  upstreamLatencySumUs: number;
}

export function emptyFilterStats(name: string): FilterStats {
  return {
    name, forwarded: 0, blocked: 0, wouldBlock: 0, failOpen: {}, upstreamErrors: 0, timeouts: 0, refused: 0, overCap: 0, droppedConnections: 0, heldBytes: 0, heldPeakBytes: 0,
    upstreamLatency: new Array<number>(UPSTREAM_BUCKETS_US.length + 1).fill(0), upstreamLatencySumUs: 0,
  };
}
