// Slows password guessing on POST /login. Every attempt is counted as a failure *before*
// its password is checked (a success takes it back), so a burst of concurrent attempts
// cannot slip past the allowance while the first ones are still being verified.
//
// Failures lock two kinds of key, each past its own allowance, and every failure after a
// lock doubles the next one:
//   - a username from one client address: someone elsewhere cannot lock `admin` out;
//   - a client address, whatever the usernames (password spraying from one place).
// Verifications in flight are capped per username, per address and in all, so a flood of
// logins cannot hold every libuv pool thread (which DuckDB also uses) with scrypt; past a
// cap the attempt is refused at once with a 1-second Retry-After, and not counted.
// Kept in memory: a restart forgets the counts.
import ipaddr from 'ipaddr.js';
import { ThrottleTable } from '../http/throttle.ts';
import { MINUTE_MS } from '../time.ts';

/** Failures allowed per (username, client address) before that pair is locked. */
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
/** Password checks in flight at once for one username (a person logs in once at a time). */
export const USER_IN_FLIGHT = 1;
/** Password checks in flight at once from one client address. */
export const ADDRESS_IN_FLIGHT = 2;
/**
 * Password checks in flight in all: half of libuv's pool (UV_THREADPOOL_SIZE, default 4),
 * at least one, so scrypt leaves the rest to DuckDB and the file system.
 */
export function globalInFlight(poolSize = Number(process.env.UV_THREADPOOL_SIZE) || 4): number {
  return Math.max(1, Math.floor(Math.min(poolSize, 1024) / 2));
}
/** Retry-After (seconds) when a cap on checks in flight refuses an attempt. */
export const BUSY_RETRY_SECONDS = 1;

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

  /**
   * Takes back one failure counted ahead of a check that then succeeded. Below the
   * allowance that lifts the lock it set; at or above it the lock stays (the cautious side).
   */
  refund(key: string): void {
    const e = this.live(key, this.entries.now());
    if (!e) return;
    e.failures = Math.max(0, e.failures - 1);
    if (e.failures < this.allowed) e.lockedUntil = 0;
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

/** Counts of checks in flight per key; a key leaves the map at zero (so it holds at most the global cap). */
class InFlight {
  private readonly counts = new Map<string, number>();
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  add(key: string, d: 1 | -1): void {
    const n = this.get(key) + d;
    if (n <= 0) this.counts.delete(key);
    else this.counts.set(key, n);
  }
}

/** One admitted login attempt: already counted as a failure; say how the check ended, once. */
export interface LoginAttempt {
  /** The password was right: the failure counted ahead is taken back, the pair's count cleared. */
  succeeded(): void;
  /** The password was wrong (or the check failed): the counted failure stands. */
  failed(): void;
}

export type Admission = { ok: true; attempt: LoginAttempt } | { ok: false; reason: 'locked' | 'busy'; retryAfter: number };

export interface LoginThrottleOptions {
  now?: () => number;
  /** Caps on checks in flight (defaults: USER_IN_FLIGHT, ADDRESS_IN_FLIGHT, globalInFlight()). */
  userInFlight?: number;
  addressInFlight?: number;
  globalInFlight?: number;
}

export class LoginThrottle {
  private readonly byPair: FailureThrottle;
  private readonly byAddress: FailureThrottle;
  private readonly usersInFlight = new InFlight();
  private readonly addressesInFlight = new InFlight();
  private inFlight = 0;
  private readonly caps: { user: number; address: number; global: number };

  constructor(opts: LoginThrottleOptions = {}) {
    const now = opts.now ?? Date.now;
    this.byPair = new FailureThrottle(USER_FAILURES_ALLOWED, now);
    this.byAddress = new FailureThrottle(ADDRESS_FAILURES_ALLOWED, now);
    this.caps = { user: opts.userInFlight ?? USER_IN_FLIGHT, address: opts.addressInFlight ?? ADDRESS_IN_FLIGHT, global: opts.globalInFlight ?? globalInFlight() };
  }

  /** Password checks in flight now. */
  get checking(): number {
    return this.inFlight;
  }

  /**
   * Admits a login attempt or says why not. An admitted attempt is counted as a failure
   * at once and holds a place in flight until succeeded() or failed().
   */
  begin(username: string, ip: string): Admission {
    const user = username.toLowerCase();
    const address = addressKey(ip);
    const pair = `${address} ${user}`;
    const lockedMs = Math.max(this.byPair.retryAfterMs(pair), this.byAddress.retryAfterMs(address));
    if (lockedMs > 0) return { ok: false, reason: 'locked', retryAfter: Math.ceil(lockedMs / 1000) };
    if (this.inFlight >= this.caps.global || this.usersInFlight.get(user) >= this.caps.user || this.addressesInFlight.get(address) >= this.caps.address) {
      return { ok: false, reason: 'busy', retryAfter: BUSY_RETRY_SECONDS };
    }
    this.byPair.fail(pair);
    this.byAddress.fail(address);
    this.inFlight++;
    this.usersInFlight.add(user, 1);
    this.addressesInFlight.add(address, 1);
    let done = false;
    const end = () => {
      if (done) return false;
      done = true;
      this.inFlight--;
      this.usersInFlight.add(user, -1);
      this.addressesInFlight.add(address, -1);
      return true;
    };
    return {
      ok: true,
      attempt: {
        succeeded: () => {
          if (!end()) return;
          this.byPair.clear(pair);
          this.byAddress.refund(address);
        },
        failed: () => {
          end();
        },
      },
    };
  }
}
