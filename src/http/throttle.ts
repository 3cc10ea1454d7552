// What the main-thread listeners' throttles share: per-key state (a customer, a username,
// a client address) in one bounded table with an injectable clock, and the 429 answer.
// Policies live with their listener: token buckets for reports (reporting/rate-limit.ts),
// lockouts for password logins (account/login-throttle.ts).
import { HttpError } from '../base/errors.ts';

/**
 * Throttle state per key. At most `maxKeys` keys are kept; the least recently updated is
 * dropped first, and a dropped key starts afresh (the lenient side, so memory stays
 * bounded under a flood of distinct keys). Reading a key does not count as an update.
 */
export class ThrottleTable<S extends object> {
  // Map order is update order: set() re-inserts, so the first key is the least recently updated.
  private readonly states = new Map<string, S>();

  constructor(
    private readonly maxKeys: number,
    /** Milliseconds clock; tests pass their own. */
    readonly now: () => number = Date.now,
  ) {}

  get(key: string): S | undefined {
    return this.states.get(key);
  }

  /** Stores (or re-stores, after changing it) the state of `key`: it becomes the most recently updated. */
  set(key: string, state: S): void {
    this.states.delete(key);
    this.states.set(key, state);
    if (this.states.size > this.maxKeys) this.states.delete(this.states.keys().next().value!);
  }

  delete(key: string): void {
    this.states.delete(key);
  }
}

/** The 429 of a throttled request: `Retry-After` in whole seconds, and the message saying so. */
export function tooManyRequests(message: string, retryAfterSeconds: number): HttpError {
  return new HttpError('rate_limited', message, 429, { 'Retry-After': String(retryAfterSeconds) });
}
