// Slows password guessing on POST /login: failures are counted per username and per
// client address; past the allowance the key is locked, and every failure after a lock
// doubles the next one. Kept in memory: a restart forgets the counts.
import ipaddr from 'ipaddr.js';
import { ThrottleTable } from '../http/throttle.ts';
import { MINUTE_MS } from '../time.ts';

/** Failures allowed per username before it is locked. */
export const USER_FAILURES_ALLOWED = 5;
/** Failures allowed per client address; higher, as one NAT can front many people. */
export const ADDRESS_FAILURES_ALLOWED = 20;
/** Counts are forgotten after this long with neither a failure nor a lock. */
export const FAILURE_WINDOW_MS = 5 * MINUTE_MS;
/** Length of the first lock; it doubles with each failure after it, up to MAX_LOCK_MS. */
export const FIRST_LOCK_MS = 30_000;
export const MAX_LOCK_MS = 15 * MINUTE_MS;
/** Keys tracked per table at most; the least recently failed are dropped first. */
export const MAX_TRACKED_KEYS = 100_000;

interface Entry {
  failures: number;
  last: number;
  lockedUntil: number;
}

/** Failure counts and locks for one kind of key. */
export class FailureThrottle {
  // Least recently failed keys are dropped first.
  private readonly entries: ThrottleTable<Entry>;

  constructor(
    private readonly allowed: number,
    now: () => number = Date.now,
  ) {
    this.entries = new ThrottleTable(MAX_TRACKED_KEYS, now);
  }

  private live(key: string, now: number): Entry | undefined {
    const e = this.entries.get(key);
    if (e && now - Math.max(e.last, e.lockedUntil) > FAILURE_WINDOW_MS) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  /** Milliseconds until `key` may try again; 0 when it may now. */
  retryAfterMs(key: string): number {
    const now = this.entries.now();
    const e = this.live(key, now);
    return e && e.lockedUntil > now ? e.lockedUntil - now : 0;
  }

  fail(key: string): void {
    const now = this.entries.now();
    const e = this.live(key, now) ?? { failures: 0, last: now, lockedUntil: 0 };
    e.failures++;
    e.last = now;
    if (e.failures >= this.allowed) {
      const lock = Math.min(MAX_LOCK_MS, FIRST_LOCK_MS * 2 ** Math.min(30, e.failures - this.allowed));
      e.lockedUntil = now + lock;
    }
    this.entries.set(key, e);
  }

  clear(key: string): void {
    this.entries.delete(key);
  }
}

/**
 * The throttling key of a client address: IPv4 as is (also when IPv4-mapped), IPv6 by its
 * /64, which is what one subscriber usually holds.
 */
export function addressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const a = ipaddr.process(ip);
  if (a.kind() === 'ipv4') return a.toString();
  const parts = (a as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16));
  return `${parts.join(':')}::/64`;
}

export class LoginThrottle {
  private readonly byUser: FailureThrottle;
  private readonly byAddress: FailureThrottle;

  constructor(now: () => number = Date.now) {
    this.byUser = new FailureThrottle(USER_FAILURES_ALLOWED, now);
    this.byAddress = new FailureThrottle(ADDRESS_FAILURES_ALLOWED, now);
  }

  /** Whole seconds to wait before this login may be tried (Retry-After); 0 when it may now. */
  retryAfter(username: string, ip: string): number {
    const ms = Math.max(this.byUser.retryAfterMs(username.toLowerCase()), this.byAddress.retryAfterMs(addressKey(ip)));
    return Math.ceil(ms / 1000);
  }

  failed(username: string, ip: string): void {
    this.byUser.fail(username.toLowerCase());
    this.byAddress.fail(addressKey(ip));
  }

  /** A correct password clears the username's count; the address keeps its own. */
  succeeded(username: string): void {
    this.byUser.clear(username.toLowerCase());
  }
}
