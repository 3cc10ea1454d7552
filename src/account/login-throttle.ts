// Slows password guessing on POST /login. Every attempt is counted as a failure *before*
// its password is checked (a success takes it back), so a burst of concurrent attempts
// cannot slip past the allowance while the first ones are still being verified.
//
// Failures lock two kinds of key, each past its own allowance, and every failure after a
// lock doubles the next one:
//   - a username from one client address: someone elsewhere cannot lock `admin` out;
//   - a client address, whatever the usernames (password spraying from one place).
// Verifications in flight are capped per username, per address and in all, so a flood of
// logins cannot hold every libuv pool thread (which DuckDB also uses) with scrypt. Past a
// cap an attempt waits its turn (enter()): a short queue per address, served round-robin
// across addresses so each gets a fair share of checks, with attempts from a clean address
// (no recent failure from it, nor for its username) served first and not held back by the
// cap per username, so a flood from elsewhere cannot keep the owner out. An attempt that finds its address's queue full, or waits too
// long, is refused with a 1-second Retry-After and counted against its address: a flooding
// address locks itself out.
// Kept in memory: a restart forgets the counts.
import ipaddr from 'ipaddr.js';
import { ThrottleTable } from '../http/throttle.ts';
import { MINUTE_MS } from '../base/time.ts';

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
/** How long an attempt may wait for its password check before it is refused as busy. */
export const QUEUE_WAIT_MS = 5_000;
/** Attempts waiting at once from one client address; more are refused as busy. */
export const ADDRESS_QUEUE = 4;
/** Attempts waiting at once in all; more are refused as busy. */
export const MAX_WAITING = 1_000;

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

  /** True when `key` has failures (or a lock) within the window. */
  hasRecent(key: string): boolean {
    const e = this.live(key, this.entries.now());
    return e !== undefined && (e.failures > 0 || e.lockedUntil > this.entries.now());
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
  /** Longest wait for a check, in ms (default QUEUE_WAIT_MS). */
  queueWaitMs?: number;
}

/** An attempt waiting for a check: already counted as a failure of its pair and address. */
interface Waiter {
  user: string;
  address: string;
  pair: string;
  /** From a clean address for a clean username: served before the round-robin. */
  clean: boolean;
  settle(a: Admission): void;
}

const BUSY: Admission = { ok: false, reason: 'busy', retryAfter: BUSY_RETRY_SECONDS };

export class LoginThrottle {
  private readonly byPair: FailureThrottle;
  private readonly byAddress: FailureThrottle;
  private readonly usersInFlight = new InFlight();
  private readonly addressesInFlight = new InFlight();
  private inFlight = 0;
  private readonly caps: { user: number; address: number; global: number };
  private readonly queueWaitMs: number;
  /**
   * Clean attempts, the newest served first: a flood's first guess from each of many fresh
   * addresses arrives in one burst, and the owner who comes after it is not kept behind it.
   */
  private readonly cleanQueue: Waiter[] = [];
  /** The other waiting attempts per address; map order is the round-robin (a served address goes last). */
  private readonly queues = new Map<string, Waiter[]>();
  private readonly waitingFrom = new InFlight();
  private waitingCount = 0;

  constructor(opts: LoginThrottleOptions = {}) {
    const now = opts.now ?? Date.now;
    this.byPair = new FailureThrottle(USER_FAILURES_ALLOWED, now);
    this.byAddress = new FailureThrottle(ADDRESS_FAILURES_ALLOWED, now);
    this.caps = { user: opts.userInFlight ?? USER_IN_FLIGHT, address: opts.addressInFlight ?? ADDRESS_IN_FLIGHT, global: opts.globalInFlight ?? globalInFlight() };
    this.queueWaitMs = opts.queueWaitMs ?? QUEUE_WAIT_MS;
  }

  /** Password checks in flight now. */
  get checking(): number {
    return this.inFlight;
  }

  /** Attempts waiting for a check now. */
  get waiting(): number {
    return this.waitingCount;
  }

  private keys(username: string, ip: string) {
    const user = username.toLowerCase();
    const address = addressKey(ip);
    return { user, address, pair: `${address} ${user}` };
  }

  private lockedSeconds(address: string, pair: string): number {
    const ms = Math.max(this.byPair.retryAfterMs(pair), this.byAddress.retryAfterMs(address));
    return ms > 0 ? Math.ceil(ms / 1000) : 0;
  }

  /**
   * Whether a check may start now. A clean attempt skips the cap per username: a flood on
   * `admin` from elsewhere must not keep its owner waiting behind it.
   */
  private fits(user: string, address: string, clean = false): boolean {
    return this.inFlight < this.caps.global && (clean || this.usersInFlight.get(user) < this.caps.user) && this.addressesInFlight.get(address) < this.caps.address;
  }

  private isClean(address: string, pair: string): boolean {
    return !this.byAddress.hasRecent(address) && !this.byPair.hasRecent(pair);
  }

  /**
   * Admits a login attempt now or says why not, never waiting. An admitted attempt is
   * counted as a failure at once and holds a place in flight until succeeded() or
   * failed(); one refused as busy counts against its address (not its username).
   */
  begin(username: string, ip: string): Admission {
    const { user, address, pair } = this.keys(username, ip);
    const locked = this.lockedSeconds(address, pair);
    if (locked > 0) return { ok: false, reason: 'locked', retryAfter: locked };
    if (!this.fits(user, address)) {
      this.byAddress.fail(address);
      return BUSY;
    }
    this.byPair.fail(pair);
    this.byAddress.fail(address);
    return { ok: true, attempt: this.start(user, address, pair) };
  }

  /**
   * Like begin(), but an attempt past a cap on checks in flight waits its turn (at most
   * queueWaitMs, and while `signal` is not aborted) instead of being refused at once.
   * Refused as busy when its address already has ADDRESS_QUEUE attempts waiting.
   */
  enter(username: string, ip: string, signal?: AbortSignal): Promise<Admission> {
    const { user, address, pair } = this.keys(username, ip);
    const locked = this.lockedSeconds(address, pair);
    if (locked > 0) return Promise.resolve({ ok: false, reason: 'locked', retryAfter: locked });
    const clean = this.isClean(address, pair);
    if (signal?.aborted) return Promise.resolve(BUSY);
    // Waiters are served whenever a place frees up, so a place free now is one no waiter can use.
    if (this.fits(user, address, clean)) {
      this.byPair.fail(pair);
      this.byAddress.fail(address);
      return Promise.resolve({ ok: true, attempt: this.start(user, address, pair) });
    }
    if (this.waitingFrom.get(address) >= ADDRESS_QUEUE || this.waitingCount >= MAX_WAITING) {
      this.byAddress.fail(address);
      return Promise.resolve(BUSY);
    }
    this.byPair.fail(pair);
    this.byAddress.fail(address);
    return new Promise<Admission>((resolve) => {
      // Gave up waiting (too long, or the client left): never checked, so the username's
      // count is taken back; the address's stays (a capped attempt counts against it).
      const giveUp = () => {
        this.dequeue(w);
        this.byPair.refund(pair);
        w.settle(BUSY);
      };
      const timer = setTimeout(giveUp, this.queueWaitMs);
      const w: Waiter = {
        user,
        address,
        pair,
        clean,
        settle: (a) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', giveUp);
          resolve(a);
        },
      };
      signal?.addEventListener('abort', giveUp, { once: true });
      if (clean) this.cleanQueue.push(w);
      else {
        const q = this.queues.get(address);
        if (q) q.push(w);
        else this.queues.set(address, [w]);
      }
      this.waitingFrom.add(address, 1);
      this.waitingCount++;
    });
  }

  private dequeue(w: Waiter): void {
    if (w.clean) {
      const i = this.cleanQueue.indexOf(w);
      if (i < 0) return;
      this.cleanQueue.splice(i, 1);
    } else {
      const q = this.queues.get(w.address);
      const i = q ? q.indexOf(w) : -1;
      if (i < 0) return;
      q!.splice(i, 1);
      // Served or gone: the address moves to the end of the round-robin (or leaves it).
      this.queues.delete(w.address);
      if (q!.length > 0) this.queues.set(w.address, q!);
    }
    this.waitingFrom.add(w.address, -1);
    this.waitingCount--;
  }

  /** The next waiter a free place can serve: clean ones first (newest first), then one address after another. */
  private next(): Waiter | undefined {
    for (let i = this.cleanQueue.length - 1; i >= 0; i--) {
      const w = this.cleanQueue[i]!;
      if (this.fits(w.user, w.address, true)) return w;
    }
    for (const q of this.queues.values()) for (const w of q) if (this.fits(w.user, w.address)) return w;
    return undefined;
  }

  /** Hands free places to waiters. */
  private serve(): void {
    while (this.waitingCount > 0 && this.inFlight < this.caps.global) {
      const w = this.next();
      if (!w) return;
      this.dequeue(w);
      w.settle({ ok: true, attempt: this.start(w.user, w.address, w.pair) });
    }
  }

  /** Takes a place in flight for an attempt already counted as a failure. */
  private start(user: string, address: string, pair: string): LoginAttempt {
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
      succeeded: () => {
        if (!end()) return;
        this.byPair.clear(pair);
        this.byAddress.refund(address);
        this.serve();
      },
      failed: () => {
        if (end()) this.serve();
      },
    };
  }
}
