// Token buckets per key (customer ID, client IP): `burst` requests at once, refilled at
// `ratePerSecond`. Idle keys age out of the bounded table, where a fresh bucket is full anyway.
import { ThrottleTable } from '../http/throttle.ts';

interface Bucket {
  tokens: number;
  atMs: number;
}

export class RateLimiter {
  private readonly buckets: ThrottleTable<Bucket>;

  constructor(
    readonly ratePerSecond: number,
    readonly burst: number,
    maxKeys = 10_000,
    now: () => number = Date.now,
  ) {
    this.buckets = new ThrottleTable(maxKeys, now);
  }

  private refill(key: string): Bucket {
    const t = this.buckets.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, atMs: t };
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.atMs) / 1000) * this.ratePerSecond);
    b.atMs = t;
    this.buckets.set(key, b);
    return b;
  }

  /** Whole seconds until one token is available; 0 when there is one now. */
  private wait(b: Bucket): number {
    return b.tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerSecond));
  }

  /** Takes one token: 0 when allowed, else the seconds to wait (for Retry-After). */
  take(key: string): number {
    const b = this.refill(key);
    const w = this.wait(b);
    if (w === 0) b.tokens -= 1;
    return w;
  }

  /** Seconds to wait before `key` may spend a token, without spending one. */
  peek(key: string): number {
    return this.wait(this.refill(key));
  }
}
