// What a filter's thread holds for the requests and answers under way, against its cap (the
// memory budget's `filter_held` part, src/memory/budget.ts: FILTER_HELD_MB a filter). Counted:
// the client connections' unread bytes (a request being read), each request from its last
// byte read until its answer is written out (its bytes and REQUEST_STATE_BYTES for its
// state), the request's copy sent upstream, the upstream's answer as it is read (the buffer it
// grows in), and the answer built for the client until the kernel has taken it.
//
// Past the cap: a request is answered no-bid as an upstream error (proxy.ts, counted in
// `overCap`), an upstream answer that would pass it is abandoned the same way, and the client
// connections stop reading until the held bytes fall back under RESUME_SHARE of the cap
// (what a read already returned is counted, so the bytes held may pass the cap by at most one
// read a connection).

/** What a request's own state costs beside its bytes (its objects, closures and strings in the JS heap), charged while it is under way. */
export const REQUEST_STATE_BYTES = 2048;
/** Client connections paused for room read again once the held bytes are back under this share of the cap. */
const RESUME_SHARE = 0.75;

export class HeldBytes {
  /** Bytes held now. */
  held = 0;
  /** The most held since the last takePeak. */
  private peak = 0;
  /** Waiting for the held bytes to fall under the resume mark (client connections paused for room). */
  private readonly waiting = new Set<() => void>();
  private readonly resumeAt: number;

  constructor(readonly cap: number) {
    this.resumeAt = Math.floor(cap * RESUME_SHARE);
  }

  /** At or past the cap. */
  get full(): boolean {
    return this.held >= this.cap;
  }

  /** Counts `n` bytes if they fit under the cap; false (nothing counted) when they would pass it. */
  tryTake(n: number): boolean {
    if (this.held + n > this.cap) return false;
    this.add(n);
    return true;
  }

  /** Counts `n` bytes already in memory, whether or not they fit (a read's bytes, an answer built). */
  add(n: number): void {
    this.held += n;
    if (this.held > this.peak) this.peak = this.held;
  }

  /** Bytes no longer held; wakes who waits for room once under the resume mark. */
  release(n: number): void {
    this.held -= n;
    if (this.waiting.size > 0 && this.held <= this.resumeAt) {
      const all = [...this.waiting];
      this.waiting.clear();
      for (const f of all) f();
    }
  }

  /** `f` runs once when the held bytes fall under the resume mark. */
  whenRoom(f: () => void): void {
    this.waiting.add(f);
  }

  forget(f: () => void): void {
    this.waiting.delete(f);
  }

  /** The most held since the last call (the thread's per-second report), then starts again from now. */
  takePeak(): number {
    const p = this.peak;
    this.peak = this.held;
    return p;
  }
}

/** The smallest buffer an answer's copy is given (a size class: see sizeClass). */
const MIN_CLASS = 64 << 10;

/**
 * The size of buffer an answer of `n` bytes is copied into: 64 KB, or `n` rounded up to a
 * quarter of its power of two (at most a quarter more than `n`), so freed buffers fit others.
 */
export function sizeClass(n: number): number {
  if (n <= MIN_CLASS) return MIN_CLASS;
  const step = 2 ** Math.floor(Math.log2(n)) / 4;
  return Math.ceil(n / step) * step;
}

/**
 * The buffers the upstream's answers are copied into, given back once the answer is written
 * (or dropped) and taken again by the next one: a large answer's buffer then never waits for
 * the garbage collector (a dead Buffer's memory is freed only when V8 next collects its
 * object, which can be many large answers later). Keeps at most `maxFree` bytes of free
 * buffers; what is in use is counted in HeldBytes by whoever took it.
 */
export class BufferPool {
  private readonly free = new Map<number, Buffer[]>();
  private freeBytes = 0;

  constructor(private readonly maxFree: number) {}

  /** A buffer of sizeClass(n) bytes (its contents are whatever they were). */
  take(n: number): Buffer {
    const size = sizeClass(n);
    const list = this.free.get(size);
    const b = list?.pop();
    if (b !== undefined) {
      this.freeBytes -= size;
      return b;
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /** A buffer `take` gave, no longer in use by anyone (kept while there is room, else left to the collector). */
  give(b: Buffer): void {
    if (this.freeBytes + b.byteLength > this.maxFree) return;
    let list = this.free.get(b.byteLength);
    if (list === undefined) this.free.set(b.byteLength, (list = []));
    list.push(b);
    this.freeBytes += b.byteLength;
  }
}

/**
 * An answer's copy handed from the upstream client to the client side: counted in HeldBytes
 * until `release`, then given back to its pool. Whoever takes it (`take`) releases it once the
 * kernel has its bytes; one not taken is released by the upstream client after the hand-over.
 */
export class HeldBuffer {
  taken = false;
  private released = false;
  constructor(readonly buf: Buffer, private readonly held: HeldBytes, private readonly pool: BufferPool) {}

  take(): this {
    this.taken = true;
    return this;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.held.release(this.buf.byteLength);
    this.pool.give(this.buf);
  }
}
