// Whether memory grows with requests, from many RSS samples rather than two: RSS swings by
// tens of MB with garbage collection, so comparing two single samples fails at random. Each
// sample follows a full collection (the caller's `collect`: every lookup thread and this
// one), and a least-squares line through them says how many bytes each request leaves.
// When `collect` answers the lookup threads' V8 heap after it, that is followed too: a
// steadier figure than RSS for what the lookup path's JavaScript keeps. (Not this thread's:
// the main thread's bounded buffers, reporting's pending counts, fill at a pace the host's
// load sets.)
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gcFn: (() => void) | null = null;
/** This thread's full garbage collection. */
export function gcHere(): void {
  if (gcFn === null) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
}

export class MemoryTrend {
  private readonly xs: number[] = [];
  private readonly ys: number[] = [];
  /** The lookup threads' V8 heap in use after each collection, when `collect` answers it. */
  private readonly heaps: number[] = [];
  private requests = 0;

  /** Samples RSS after `collect` every `every` requests counted while `sampling` is true. */
  constructor(
    private readonly every: number,
    private readonly collect: () => Promise<number | void>,
  ) {}

  sampling = false;

  /** Counts one request (call after each). */
  async tick(): Promise<void> {
    this.requests++;
    if (this.sampling && this.requests % this.every === 0) {
      const threads = await this.collect();
      gcHere();
      this.xs.push(this.requests);
      this.ys.push(process.memoryUsage().rss);
      if (typeof threads === 'number') this.heaps.push(threads);
    }
  }

  get samples(): number {
    return this.xs.length;
  }

  /** Bytes of RSS per request: the slope of the least-squares line through the samples. */
  bytesPerRequest(): number {
    return slope(this.xs, this.ys);
  }

  /** Bytes of the lookup threads' V8 heap per request (NaN unless `collect` answers it). */
  heapBytesPerRequest(): number {
    return this.heaps.length === this.xs.length ? slope(this.xs, this.heaps) : NaN;
  }

  /** Mean RSS (MB) of each `parts`-th of the samples, in order (for the comment). */
  means(parts: number): string {
    const out: number[] = [];
    const size = Math.ceil(this.ys.length / parts);
    for (let i = 0; i < this.ys.length; i += size) {
      const chunk = this.ys.slice(i, i + size);
      out.push(Math.round(chunk.reduce((a, b) => a + b, 0) / chunk.length / 1048576));
    }
    return out.join(' ');
  }

  /** Lowest and highest sample, MB (for the comment). */
  range(): string {
    const mb = (b: number) => Math.round(b / 1048576);
    return `${mb(Math.min(...this.ys))}..${mb(Math.max(...this.ys))} MB`;
  }
}

/** The least-squares slope of ys over xs (NaN with fewer than two points). */
function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  return sxy / sxx;
}
