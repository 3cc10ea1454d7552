// The filter's HTTP/1.1 client to its upstream: kept-alive connections over node:net, at most
// `maxSockets`, one request at a time on each, an answer read whole (Content-Length, chunked,
// or until the close). Node's http client measured 3 900 req/s here against a bare uWS endpoint
// where this simple form did 31 000: the filter's own hop is most of its cost.
import { connect, type Socket } from 'node:net';
import { BufferPool, HeldBuffer, HeldBytes, sizeClass } from './held-bytes.ts';

export interface UpstreamAnswer {
  status: number;
  reason: string;
  /** Name, value, name, value… as received. */
  rawHeaders: string[];
  body: Buffer;
  /** The answer had a Content-Length (not chunked, not read to the close). */
  hadLength: boolean;
  /**
   * The copy the answer was read into (its body may be a view of it), counted in the pool's held
   * bytes: whoever writes the body takes it (HeldBuffer.take) and releases it once written;
   * otherwise it is released when the answer callback returns. Null: the answer fit one read.
   */
  hold?: HeldBuffer | null;
}

export type AnswerCallback = (err: Error | null, answer: UpstreamAnswer | null) => void;

/** A request under way: abort() gives it up (its connection is closed, or it leaves the queue). */
export interface PendingRequest {
  abort(): void;
}

class UpstreamError extends Error {}

/** An answer abandoned because holding it would pass the filter's cap on held bytes (held-bytes.ts). */
export class OverCapError extends UpstreamError {}

const CRLF2 = Buffer.from('\r\n\r\n');
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/;

/**
 * Where every upstream socket of the thread reads into (Node's `onread`: no Readable stream,
 * no Buffer made per read). The callback runs synchronously and copies out what it keeps, so
 * one buffer serves every connection.
 */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** The first copy of an answer that one read did not hold whole: at least this many bytes (it doubles as it fills). */
const FIRST_COPY_BYTES = 16 * 1024;

/**
 * The length of the whole answer at the start of `buf` when its head says it (a final answer
 * with a Content-Length and not chunked), else -1: the size to copy the rest into at once.
 */
function framedLength(buf: Buffer): number {
  const end = buf.indexOf(CRLF2);
  if (end < 0) return -1;
  const head = buf.toString('latin1', 0, end);
  if (!/^HTTP\/1\.[01] [2-5]/.test(head) || /\r\ntransfer-encoding:/i.test(head)) return -1;
  const m = /\r\ncontent-length:[ \t]*(\d{1,10})[ \t]*(?:\r\n|$)/i.exec(head);
  return m === null ? -1 : end + 4 + Number(m[1]);
}

/** One connection and the answer it is reading. */
class Conn {
  readonly sock: Socket;
  /** Set while a request is on it. */
  job: Job | null = null;
  /** Answered at least one request (a failure before any byte of the next may be retried). */
  reused = false;
  /**
   * The answer's bytes so far when one read did not hold it whole (a copy: READ_BUFFER is
   * reused), in its first `len` bytes; its whole size is counted in the pool's held bytes.
   */
  private buf: Buffer | null = null;
  private len = 0;
  /** Bytes of the answer received so far (any). */
  private got = 0;
  closed = false;

  constructor(private readonly pool: UpstreamPool, host: string, port: number) {
    this.sock = connect({ host, port, noDelay: true, onread: { buffer: READ_BUFFER, callback: (n: number, b: Uint8Array) => this.onRead(n, b as Buffer) } });
    this.sock.on('error', () => undefined); // 'close' follows
    this.sock.on('close', () => this.onClose());
  }

  send(job: Job): void {
    this.job = job;
    job.conn = this;
    this.dropAnswer();
    this.got = 0;
    // The request in one buffer, one write (a head and a body corked go out by writev, which costs more).
    this.sock.write(job.bytes());
  }

  private onRead(n: number, into: Buffer): boolean {
    const job = this.job;
    if (job === null) {
      // Bytes nobody asked for: the connection cannot be trusted for the next request.
      this.sock.destroy();
      return false;
    }
    this.got += n;
    if (this.got > this.pool.maxAnswerBytes) {
      this.fail(new UpstreamError('answer too large'));
      return false;
    }
    const fresh = this.buf === null;
    let buf: Buffer;
    if (fresh) buf = into.subarray(0, n);
    else {
      if (this.len + n > this.buf!.byteLength && !this.grow(this.len + n)) return false;
      into.copy(this.buf!, this.len, 0, n);
      this.len += n;
      buf = this.buf!.subarray(0, this.len);
    }
    const a = parseAnswer(buf, job.isHead, false);
    if (a === null) {
      if (fresh) {
        // Kept: copied out of the shared read buffer, into room for the whole answer when its head says how much.
        if (!this.grow(n)) return false;
        into.copy(this.buf!, 0, 0, n);
        this.len = n;
      }
      return true;
    }
    if (a instanceof Error) {
      this.fail(a);
      return false;
    }
    // A body that is a view of the shared read buffer is copied before it leaves.
    if (fresh && a.answer.body.buffer === READ_BUFFER.buffer) a.answer.body = Buffer.from(a.answer.body);
    this.done(a.answer, a.close);
    return true;
  }

  /**
   * Room for at least `need` bytes of the answer, its size counted in the pool's held bytes:
   * the whole answer's when its head gives its length, else twice what it had (at least
   * FIRST_COPY_BYTES). False when the held bytes would pass their cap: the answer is abandoned
   * (OverCapError, its connection closed).
   */
  private grow(need: number): boolean {
    const had = this.buf === null ? 0 : this.buf.byteLength;
    const sofar = this.buf === null ? READ_BUFFER.subarray(0, need) : this.buf.subarray(0, this.len);
    const framed = this.job !== null && this.job.isHead ? -1 : framedLength(sofar);
    const limit = this.pool.maxAnswerBytes;
    const want = framed >= need && framed <= limit ? framed : Math.max(need, Math.min(limit, Math.max(FIRST_COPY_BYTES, had * 2)));
    const size = sizeClass(want);
    if (!this.pool.held.tryTake(size - had)) {
      this.fail(new OverCapError("answer over the filter's held-bytes cap"));
      return false;
    }
    const next = this.pool.buffers.take(size);
    if (this.buf !== null) {
      this.buf.copy(next, 0, 0, this.len);
      this.pool.buffers.give(this.buf);
    }
    this.buf = next;
    return true;
  }

  /** The answer's copy is dropped: its bytes are no longer held, its buffer goes back to the pool. */
  private dropAnswer(): void {
    if (this.buf !== null) {
      this.pool.held.release(this.buf.byteLength);
      this.pool.buffers.give(this.buf);
    }
    this.buf = null;
    this.len = 0;
  }

  /** Hands an answer over with the copy it was read into (`copy`, no longer this connection's: see UpstreamAnswer.hold). */
  private handOver(job: Job, answer: UpstreamAnswer, copy: Buffer | null): void {
    const hold = copy === null ? null : new HeldBuffer(copy, this.pool.held, this.pool.buffers);
    answer.hold = hold;
    job.finish(null, answer);
    if (hold !== null && !hold.taken) hold.release();
  }

  private onClose(): void {
    this.closed = true;
    const job = this.job;
    this.pool.dropped(this);
    if (job === null) return this.dropAnswer();
    this.job = null;
    // An answer read to the close ends here (its copy counted until the answer is handed over).
    if (this.got > 0 && this.buf !== null) {
      const a = parseAnswer(this.buf.subarray(0, this.len), job.isHead, true);
      if (a !== null && !(a instanceof Error)) {
        const copy = this.buf;
        this.buf = null;
        this.len = 0;
        return this.handOver(job, a.answer, copy);
      }
    }
    this.dropAnswer();
    if (this.got === 0 && this.reused && !job.retried) {
      // A kept-alive connection the upstream closed as the request went out: once more on a new one.
      job.retried = true;
      this.pool.enqueue(job);
      return;
    }
    job.finish(new UpstreamError(this.got === 0 ? 'connection closed before an answer' : 'connection closed mid-answer'), null);
  }

  private fail(e: Error): void {
    const job = this.job;
    this.job = null;
    this.dropAnswer();
    this.sock.destroy();
    job?.finish(e, null);
  }

  private done(answer: UpstreamAnswer, close: boolean): void {
    const job = this.job!;
    this.job = null;
    this.reused = true;
    // The answer's copy (its body may be a view of it) goes with the answer; the connection takes the next request.
    const copy = this.buf;
    this.buf = null;
    this.len = 0;
    if (close) this.sock.destroy();
    else this.pool.idle(this);
    this.handOver(job, answer, copy);
  }
}

class Job implements PendingRequest {
  conn: Conn | null = null;
  retried = false;
  private over = false;
  private out: Buffer | null = null;
  constructor(
    private readonly pool: UpstreamPool,
    readonly head: string,
    readonly body: Buffer,
    readonly isHead: boolean,
    private readonly cb: AnswerCallback,
  ) {}
  /** The request's bytes: the head (latin1) and the body in one buffer. */
  bytes(): Buffer {
    if (this.out !== null) return this.out;
    const out = Buffer.allocUnsafe(this.head.length + this.body.byteLength);
    out.write(this.head, 0, 'latin1');
    this.body.copy(out, this.head.length);
    return (this.out = out);
  }
  finish(err: Error | null, a: UpstreamAnswer | null): void {
    if (this.over) return;
    this.over = true;
    this.cb(err, a);
  }
  abort(): void {
    if (this.over) return;
    this.over = true;
    if (this.conn !== null && this.conn.job === this) {
      this.conn.job = null;
      this.conn.sock.destroy();
    } else this.pool.unqueue(this);
  }
}

export class UpstreamPool {
  private readonly free: Conn[] = [];
  private readonly queue: Job[] = [];
  private open = 0;
  private destroyed = false;
  /** Takes no new request (a reload named another upstream): each connection closes once its answer ends. */
  private retired = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private maxSockets: number,
    readonly maxAnswerBytes: number,
    /** Where the answers' copies are counted, against the filter's cap (none: not counted). */
    readonly held: HeldBytes = new HeldBytes(Number.POSITIVE_INFINITY),
  ) {
    // Freed answer buffers kept for reuse: a quarter of the cap at most.
    this.buffers = new BufferPool(Number.isFinite(held.cap) ? Math.floor(held.cap / 4) : 0);
  }
  /** The answers' copies, reused (held-bytes.ts). */
  readonly buffers: BufferPool;

  /**
   * No more requests (the filter sends its new ones to another pool): idle connections close
   * now, the others once their answers end (or are given up); queued requests still go.
   */
  retire(): void {
    this.retired = true;
    for (const c of this.free.splice(0)) c.sock.destroy();
  }

  /** A new bound: queued requests take the room a higher one gives; above a lower one, connections close as their answers end. */
  setMaxSockets(n: number): void {
    this.maxSockets = n;
    while (this.queue.length > 0 && this.open < this.maxSockets) {
      this.open++;
      new Conn(this, this.host, this.port).send(this.queue.shift()!);
    }
  }

  /** `head`: the request line and headers, ending with the empty line (latin1). */
  request(head: string, body: Buffer, isHead: boolean, cb: AnswerCallback): PendingRequest {
    const job = new Job(this, head, body, isHead, cb);
    this.enqueue(job);
    return job;
  }

  enqueue(job: Job): void {
    if (this.destroyed) return job.finish(new UpstreamError('closed'), null);
    const c = this.free.pop();
    if (c !== undefined) return c.send(job);
    if (this.open < this.maxSockets) {
      this.open++;
      new Conn(this, this.host, this.port).send(job);
      return;
    }
    this.queue.push(job);
  }

  unqueue(job: Job): void {
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
  }

  idle(c: Conn): void {
    // Over a bound lowered since: closed (its 'close' lets a queued request take the room, in order).
    if (this.open > this.maxSockets) return void c.sock.destroy();
    const next = this.queue.shift();
    if (next !== undefined) c.send(next);
    else if (this.retired) c.sock.destroy();
    else this.free.push(c);
  }

  dropped(c: Conn): void {
    this.open--;
    const i = this.free.indexOf(c);
    if (i >= 0) this.free.splice(i, 1);
    // A queued request takes the room (the first in the queue, when there is room for it).
    if (this.queue.length > 0 && this.open < this.maxSockets) this.enqueue(this.queue.shift()!);
  }

  destroy(): void {
    this.destroyed = true;
    for (const c of this.free.splice(0)) c.sock.destroy();
    for (const j of this.queue.splice(0)) j.finish(new UpstreamError('closed'), null);
  }
}

/**
 * The answer at the start of `buf` when it is whole (null: not yet; an Error: not HTTP).
 * `atClose`: the connection has closed (an answer without a length ends there). Interim 1xx
 * answers are skipped.
 */
export function parseAnswer(buf: Buffer, isHead: boolean, atClose: boolean): { answer: UpstreamAnswer; close: boolean } | Error | null {
  let start = 0;
  for (;;) {
    const end = buf.indexOf(CRLF2, start);
    if (end < 0) return buf.byteLength - start > 65536 ? new UpstreamError('answer head too large') : null;
    const lines = buf.toString('latin1', start, end).split('\r\n');
    const m = STATUS_LINE.exec(lines[0]!);
    if (m === null) return new UpstreamError('not an HTTP/1.1 answer');
    const status = Number(m[1]);
    const rawHeaders: string[] = [];
    let length = -1;
    let chunked = false;
    let close = false;
    for (let i = 1; i < lines.length; i++) {
      const l = lines[i]!;
      const colon = l.indexOf(':');
      if (colon <= 0) return new UpstreamError('bad header line');
      const name = l.slice(0, colon);
      const value = l.slice(colon + 1).trim();
      rawHeaders.push(name, value);
      // Only the three names that frame the answer matter here: the others are not lowercased.
      const lower = name.length === 14 || name.length === 17 || name.length === 10 ? name.toLowerCase() : '';
      if (lower === 'content-length') {
        if (!/^\d+$/.test(value) || (length >= 0 && Number(value) !== length)) return new UpstreamError('bad Content-Length');
        length = Number(value);
      } else if (lower === 'transfer-encoding') chunked = value.toLowerCase().split(',').some((v) => v.trim() === 'chunked');
      else if (lower === 'connection') close = value.toLowerCase().split(',').some((v) => v.trim() === 'close');
    }
    const bodyAt = end + 4;
    if (status >= 100 && status < 200) {
      start = bodyAt; // interim answer: the final one follows
      continue;
    }
    const answer = (body: Buffer, hadLength: boolean) => ({ answer: { status, reason: m[2] ?? '', rawHeaders, body, hadLength }, close });
    if (isHead || status === 204 || status === 304) return answer(Buffer.alloc(0), length >= 0);
    if (chunked) {
      const body = dechunk(buf, bodyAt);
      if (body === null) return atClose ? new UpstreamError('chunked answer cut short') : null;
      if (body instanceof Error) return body;
      return answer(body, false);
    }
    if (length >= 0) {
      if (buf.byteLength - bodyAt < length) return atClose ? new UpstreamError('answer cut short') : null;
      return answer(buf.subarray(bodyAt, bodyAt + length), true);
    }
    // No length: the body runs to the close.
    if (!atClose) return null;
    return { ...answer(buf.subarray(bodyAt), false), close: true };
  }
}

/** A chunked body from `at`, whole (null: not yet). */
function dechunk(buf: Buffer, at: number): Buffer | Error | null {
  const parts: Buffer[] = [];
  let pos = at;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos, 'latin1');
    if (eol < 0) return null;
    const sizeText = buf.toString('latin1', pos, eol).split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) return new UpstreamError('bad chunk size');
    const size = parseInt(sizeText, 16);
    if (size === 0) {
      // Trailers (read past, not kept), then the empty line.
      if (buf.byteLength < eol + 4) return null;
      if (buf[eol + 2] !== 13 || buf[eol + 3] !== 10) {
        if (buf.indexOf(CRLF2, eol) < 0) return null;
      }
      return Buffer.concat(parts);
    }
    if (buf.byteLength < eol + 2 + size + 2) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
}
