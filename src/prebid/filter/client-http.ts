// The filter's client side: a small HTTP/1.1 server over node:net (its upstream side is
// upstream-client.ts). Node's http server cost most of the filter's time per request; and
// uWebSockets.js cannot serve it: uWS v20.30 closes a connection whose next request it parses
// while an answer is still held (it never hands that request over, so answering in order
// cannot help, with or without onAborted + cork; res.pause() helps only when the next request
// comes in a later packet). Here each request, read whole (Content-Length or chunked), is
// handed over at once, pipelined ones too; answers go back in the order the requests came.
import { createServer, type Server, type Socket } from 'node:net';
import { HeldBytes, type HeldBuffer } from './held-bytes.ts';

export interface ClientRequest {
  method: string;
  /** The request target as sent (path and query). */
  url: string;
  /** Lowercase names; a repeated header's values joined with ", " (content-type: the first). */
  headers: Record<string, string>;
  /** Name, value, name, value… as received. */
  rawHeaders: string[];
  /** The peer's address (an IPv4-mapped one as Node gives it). */
  remoteAddress: string;
}

export interface ClientResponse {
  /** The client left (or the connection failed): nothing it is answered reaches it. */
  readonly destroyed: boolean;
  /**
   * The answer: sent when every earlier one on its connection has been. Only the first call
   * counts. `owner`: the counted buffer `body` is a view of (an upstream answer's copy): a large
   * body is then written from it, not copied, and the owner released once it is written.
   */
  end(status: number, reason: string, headers: string[], body?: Buffer | string, owner?: HeldBuffer | null): void;
  /** `cb` runs if the connection closes before this answer was sent. */
  onClose(cb: () => void): void;
}

export interface ClientServerOptions {
  /** Largest request body taken; a larger one is answered 413 and its connection closed. */
  maxBodyBytes: number;
  /** Largest request head (line and headers); a larger one is answered 431 and its connection closed. */
  maxHeadBytes: number;
  /** A kept-alive connection with nothing under way is closed after this long. */
  idleMs: number;
  /** A request begun must be whole within this long (a slow client's connection is closed). */
  requestMs: number;
  /** Requests under way on one connection before it is read no further (until answers go). */
  maxInFlight: number;
  /** Client connections at most (more are closed as they come, onDropped told). */
  maxConnections?: number;
  /**
   * Where the bytes held are counted (held-bytes.ts): the unread bytes of each connection,
   * each request's bytes until its answer is built, each answer's until the kernel took it.
   * At or past its cap the connections stop reading until there is room. None: not counted.
   */
  held?: HeldBytes;
  /** A connection closed as it came: maxConnections were open. */
  onDropped?(): void;
  onRequest(req: ClientRequest, body: Buffer, res: ClientResponse): void;
  /** A request refused for its body's size (its 413 already queued). */
  onTooLarge(): void;
  /** The 413's JSON body. */
  tooLargeBody: string;
}

const CRLF2 = Buffer.from('\r\n\r\n');
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+) HTTP\/1\.([01])$/;
const NO_BODY_STATUS = (s: number) => s === 204 || s === 304 || (s >= 100 && s < 200);
/** A body this large with an owner is written from the owner's buffer after the head, not copied beside it. */
const UNCOPIED_BODY_BYTES = 64 << 10;

/** A CR or LF in a header's name or value (it would split the answer). */
function hasCrOrLf(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 13 || c === 10) return true;
  }
  return false;
}

/** One answer's place in its connection's queue. */
class Slot implements ClientResponse {
  out: Buffer | null = null;
  /** A large body written after `out` from its owner's buffer (not copied into `out`), and that owner. */
  body: Buffer | null = null;
  private owner: HeldBuffer | null = null;
  closeAfter = false;
  private closeCb: (() => void) | null = null;
  /** The request's bytes counted in `held` until its answer is built. */
  reqBytes = 0;
  /** The answer's bytes counted in `held` until the kernel took them (or the connection closed). */
  private outBytes = 0;
  /** Its connection closed before it was written: an answer given now goes nowhere (and is not counted). */
  private gone = false;

  constructor(private readonly conn: Conn, readonly isHead: boolean, closeAfter: boolean, private readonly held: HeldBytes) {
    this.closeAfter = closeAfter;
  }

  /** The request is answered: its bytes go, the answer's are counted instead. */
  private holdOut(out: Buffer): void {
    this.held.release(this.reqBytes);
    this.reqBytes = 0;
    this.outBytes = out.byteLength;
    this.held.add(this.outBytes);
    this.out = out;
  }

  /** The answer's bytes are the kernel's now (the socket's write callback), or will never be sent. */
  readonly written = (): void => {
    const n = this.outBytes;
    this.outBytes = 0;
    if (n > 0) this.held.release(n);
    const owner = this.owner;
    this.owner = null;
    this.body = null;
    owner?.release();
  };

  get destroyed(): boolean {
    return this.conn.sock.destroyed;
  }

  end(status: number, reason: string, headers: string[], body: Buffer | string = '', owner: HeldBuffer | null = null): void {
    if (this.out !== null || this.gone) return;
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    let head = 'HTTP/1.1 ' + status + ' ' + reason + '\r\n';
    let hasLength = false;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i]!;
      const value = headers[i + 1]!;
      if (hasCrOrLf(name) || hasCrOrLf(value)) continue; // never split an answer
      if (name.length === 14 || name.length === 17) {
        const lower = name.toLowerCase();
        if (lower === 'content-length' || lower === 'transfer-encoding') hasLength = true;
      }
      head += name + ': ' + value + '\r\n';
    }
    if (!hasLength && !NO_BODY_STATUS(status) && !this.isHead) head += 'Content-Length: ' + b.byteLength + '\r\n';
    if (this.closeAfter) head += 'Connection: close\r\n';
    head += '\r\n';
    const withBody = b.byteLength > 0 && !this.isHead && !NO_BODY_STATUS(status);
    if (withBody && owner !== null && b.byteLength >= UNCOPIED_BODY_BYTES) {
      // A large answer: its head, then its body from the upstream's copy (counted by its owner until written).
      this.owner = owner.take();
      this.body = b;
      this.holdOut(Buffer.from(head, 'latin1'));
    } else {
      // Head and body in one buffer, one write.
      const out = Buffer.allocUnsafe(head.length + (withBody ? b.byteLength : 0));
      out.write(head, 0, 'latin1');
      if (withBody) b.copy(out, head.length);
      this.holdOut(out);
    }
    this.closeCb = null;
    this.conn.flush();
  }

  /** A prepared answer (the connection's own refusals). */
  raw(bytes: string): void {
    this.holdOut(Buffer.from(bytes, 'latin1'));
    this.conn.flush();
  }

  onClose(cb: () => void): void {
    if (this.out === null) this.closeCb = cb;
  }

  /** The connection closed before this answer was written: nothing of it is held any more. */
  closed(): void {
    this.gone = true;
    this.held.release(this.reqBytes);
    this.reqBytes = 0;
    this.written();
    const cb = this.closeCb;
    this.closeCb = null;
    cb?.();
  }
}

function refusal(status: number, reason: string, body = ''): string {
  return 'HTTP/1.1 ' + status + ' ' + reason + '\r\nContent-Type: application/json\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\nConnection: close\r\n\r\n' + body;
}

/** One client connection: its unread bytes, and its answers in request order. */
class Conn {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes of `buf` counted in `held`. */
  private reading = 0;
  private readonly queue: Slot[] = [];
  /** No more requests are read (a refusal, Connection: close, HTTP/1.0). */
  private ended = false;
  /** Not read: maxInFlight requests under way (parse stops too). */
  private paused = false;
  /** Not read: the held bytes are at the cap (held.whenRoom resumes it). */
  private roomWait = false;
  /** Not read: the client is not reading its answers (the socket's buffer is past its mark; 'drain' resumes it). */
  private drainWait = false;
  /** A 100 Continue was sent for the request being read. */
  private continued = false;
  private readonly remoteAddress: string;
  /** Armed while a request is half read. */
  private slow: ReturnType<typeof setTimeout> | undefined;
  /** Read or written since the idle sweep last looked (see sweep). */
  active = true;
  /** Idle sweeps in a row that found it silent. */
  silentSweeps = 0;
  /** Its listener let go of the port: its next answer closes it (see retire). */
  private retiring = false;

  constructor(readonly sock: Socket, private readonly o: ClientServerOptions, private readonly conns: Set<Conn>, private readonly held: HeldBytes) {
    this.remoteAddress = sock.remoteAddress ?? '';
    sock.setNoDelay(true);
    sock.on('data', (d: Buffer) => this.onData(d));
    sock.on('error', () => undefined); // 'close' follows
    sock.on('close', () => this.onClose());
  }

  /** Nothing under way and nothing read or written for `sweeps` idle sweeps: closed. */
  sweep(sweeps: number): void {
    if (this.active) {
      this.active = false;
      this.silentSweeps = 0;
    } else if (++this.silentSweeps >= sweeps && this.queue.length === 0) this.sock.destroy();
  }

  get idle(): boolean {
    return this.queue.length === 0 && this.buf.byteLength === 0;
  }

  /**
   * The server is closing: no request is read after those under way, which are answered (the
   * last with `Connection: close`), then the connection closes. With none under way, at once.
   */
  drain(): void {
    if (this.queue.length === 0) return void this.sock.destroy();
    this.ended = true;
    this.dropUnread();
    clearTimeout(this.slow);
    this.queue[this.queue.length - 1]!.closeAfter = true;
  }

  /**
   * Its listener let go of the port: the last request under way is answered with
   * `Connection: close` and the connection ends after it; one with nothing under way gets
   * the same on its next request (closed by the caller if none comes). Requests are never
   * cut off: only bytes after an answer that says close are left unread, as HTTP allows.
   */
  retire(): void {
    if (this.retiring || this.sock.destroyed) return;
    this.retiring = true;
    const last = this.queue[this.queue.length - 1];
    if (last !== undefined && last.out === null && !this.ended) {
      last.closeAfter = true;
      this.ended = true;
    }
  }

  private onData(d: Buffer): void {
    this.active = true;
    if (this.ended) return;
    this.buf = this.buf.byteLength === 0 ? d : Buffer.concat([this.buf, d]);
    this.held.add(d.byteLength);
    this.reading = this.buf.byteLength;
    this.parse();
    // At the cap: read no more (what was read is counted) until there is room.
    if (this.held.full && !this.roomWait && !this.sock.destroyed) {
      this.roomWait = true;
      this.sock.pause();
      this.held.whenRoom(this.onRoom);
    }
    // A request left half read is given requestMs from here to be whole (its bytes trickling in do not reset it).
    if (this.buf.byteLength > 0 && !this.ended && !this.paused && !this.drainWait) this.slow ??= setTimeout(() => this.sock.destroy(), this.o.requestMs);
    else if (this.slow !== undefined) {
      clearTimeout(this.slow);
      this.slow = undefined;
    }
  }

  /** Hands over every whole request in the buffer. */
  private parse(): void {
    // (A client not reading its answers: no more of its requests are taken until it does.)
    while (!this.ended && this.buf.byteLength > 0 && !this.drainWait) {
      if (this.queue.length >= this.o.maxInFlight) {
        this.paused = true;
        this.sock.pause();
        return;
      }
      if (!this.next()) return;
    }
  }

  /** One request from the buffer's start: true when one was taken (or refused), false to wait for more bytes. */
  private next(): boolean {
    const buf = this.buf;
    // Empty lines before a request line are allowed (RFC 9112 2.2).
    let start = 0;
    while (start + 1 < buf.byteLength && buf[start] === 13 && buf[start + 1] === 10) start += 2;
    const headEnd = buf.indexOf(CRLF2, start);
    if (headEnd < 0) {
      if (buf.byteLength - start > this.o.maxHeadBytes) this.refuse(431, 'Request Header Fields Too Large');
      return false;
    }
    if (headEnd - start > this.o.maxHeadBytes) return this.refuse(431, 'Request Header Fields Too Large');
    const lines = buf.toString('latin1', start, headEnd).split('\r\n');
    const m = REQUEST_LINE.exec(lines[0]!);
    if (m === null) return this.refuse(400, 'Bad Request');
    const rawHeaders: string[] = [];
    const headers: Record<string, string> = {};
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) return this.refuse(400, 'Bad Request');
      const name = line.slice(0, colon);
      if (!TOKEN.test(name)) return this.refuse(400, 'Bad Request'); // also a folded line, a space before the colon
      const value = line.slice(colon + 1).trim();
      // A bare CR or LF in a value: refused (sent on, it would split the upstream's request in two).
      if (hasCrOrLf(value)) return this.refuse(400, 'Bad Request');
      rawHeaders.push(name, value);
      const lower = name.toLowerCase();
      const had = headers[lower];
      if (had === undefined) headers[lower] = value;
      else if (lower === 'content-length') {
        if (had !== value) return this.refuse(400, 'Bad Request');
      } else if (lower !== 'content-type' && lower !== 'host') headers[lower] = had + ', ' + value;
    }
    const bodyAt = headEnd + 4;
    const te = headers['transfer-encoding'];
    const cl = headers['content-length'];
    let body: Buffer;
    let end: number;
    if (te !== undefined) {
      // Both framings: refused (a smuggling attempt, or a proxy that cannot be trusted).
      if (cl !== undefined || te.toLowerCase() !== 'chunked') return this.refuse(400, 'Bad Request');
      const c = dechunk(buf, bodyAt, this.o.maxBodyBytes);
      if (c === 'bad') return this.refuse(400, 'Bad Request');
      if (c === 'large') return this.tooLarge();
      if (c === null) return this.waitBody(headers, buf.byteLength - bodyAt);
      body = c.body;
      end = c.end;
    } else if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl)) return this.refuse(400, 'Bad Request');
      const n = Number(cl);
      if (n > this.o.maxBodyBytes) return this.tooLarge();
      if (buf.byteLength < bodyAt + n) return this.waitBody(headers, buf.byteLength - bodyAt);
      body = buf.subarray(bodyAt, bodyAt + n);
      end = bodyAt + n;
    } else {
      body = Buffer.alloc(0);
      end = bodyAt;
    }
    this.buf = end === buf.byteLength ? Buffer.alloc(0) : buf.subarray(end);
    const conn = headers.connection?.toLowerCase() ?? '';
    const close = this.retiring || (m[3] === '0' ? !/\bkeep-alive\b/.test(conn) : /\bclose\b/.test(conn));
    const method = m[1]!;
    const slot = new Slot(this, method === 'HEAD', close, this.held);
    // The request's bytes are its slot's now (counted until its answer is built).
    slot.reqBytes = this.reading - this.buf.byteLength;
    this.reading = this.buf.byteLength;
    this.queue.push(slot);
    if (close) this.ended = true;
    this.continued = false;
    // (Node never reuses a read's buffer: the body may stay a view of it.)
    this.o.onRequest({ method, url: m[2]!, headers, rawHeaders, remoteAddress: this.remoteAddress }, body, slot);
    return true;
  }

  /** The head is whole, the body not yet: a client that expects 100-continue is told to go on. */
  private waitBody(headers: Record<string, string>, got: number): false {
    if (got === 0 && this.queue.length === 0 && headers.expect?.toLowerCase() === '100-continue' && !this.continued) {
      this.continued = true;
      this.sock.write('HTTP/1.1 100 Continue\r\n\r\n');
    }
    return false;
  }

  private refuse(status: number, reason: string, body = ''): true {
    this.ended = true;
    this.dropUnread();
    const slot = new Slot(this, false, true, this.held);
    this.queue.push(slot);
    slot.raw(refusal(status, reason, body));
    return true;
  }

  private tooLarge(): true {
    this.o.onTooLarge();
    return this.refuse(413, 'Payload Too Large', this.o.tooLargeBody);
  }

  private dropUnread(): void {
    this.held.release(this.reading);
    this.reading = 0;
    this.buf = Buffer.alloc(0);
  }

  /** Writes the answers that are ready, in order. */
  flush(): void {
    if (this.sock.destroyed) return;
    this.active = true;
    // Several answers ready at once go in one write; one alone is written as it is.
    const cork = this.queue.length > 1 && this.queue[1]!.out !== null;
    if (cork) this.sock.cork();
    while (this.queue.length > 0 && this.queue[0]!.out !== null) {
      const slot = this.queue.shift()!;
      // Its bytes stay counted until the kernel has them (the callback also runs when the socket is destroyed first).
      if (slot.body === null) this.sock.write(slot.out!, slot.written);
      else {
        this.sock.write(slot.out!);
        this.sock.write(slot.body, slot.written);
      }
      if (slot.closeAfter) {
        this.sock.end();
        for (const later of this.queue.splice(0)) later.closed();
        break;
      }
    }
    if (cork && !this.sock.destroyed) this.sock.uncork();
    // A client that does not read its answers is read no further until it does.
    if (!this.drainWait && this.sock.writableNeedDrain && !this.sock.destroyed) {
      this.drainWait = true;
      this.sock.pause();
      this.sock.once('drain', this.onDrain);
    }
    if (this.paused && this.queue.length < this.o.maxInFlight) {
      this.paused = false;
      this.readOn();
      this.parse();
    }
  }

  private readonly onDrain = (): void => {
    this.drainWait = false;
    this.readOn();
    this.parse();
  };

  private readonly onRoom = (): void => {
    this.roomWait = false;
    this.readOn();
  };

  /** Reads again unless something still holds it. */
  private readOn(): void {
    if (!this.paused && !this.roomWait && !this.drainWait && !this.sock.destroyed) this.sock.resume();
  }

  private onClose(): void {
    clearTimeout(this.slow);
    this.conns.delete(this);
    this.ended = true;
    this.held.forget(this.onRoom);
    this.dropUnread();
    const left = this.queue.splice(0);
    for (const slot of left) slot.closed();
  }
}

/** A chunked body from `at`: whole with the offset past it, null (not yet), 'bad' or 'large'. */
function dechunk(buf: Buffer, at: number, max: number): { body: Buffer; end: number } | 'bad' | 'large' | null {
  const parts: Buffer[] = [];
  let size = 0;
  let pos = at;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos, 'latin1');
    if (eol < 0) return buf.byteLength - pos > 1024 ? 'bad' : null;
    const sizeText = buf.toString('latin1', pos, eol).split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) return 'bad';
    const n = parseInt(sizeText, 16);
    if (n === 0) {
      // Trailers (read past, not kept), then the empty line.
      if (buf.byteLength < eol + 4) return null;
      if (buf[eol + 2] === 13 && buf[eol + 3] === 10) return { body: Buffer.concat(parts, size), end: eol + 4 };
      const last = buf.indexOf(CRLF2, eol + 2);
      return last < 0 ? null : { body: Buffer.concat(parts, size), end: last + 4 };
    }
    size += n;
    if (size > max) return 'large';
    if (buf.byteLength < eol + 2 + n + 2) return null;
    if (buf[eol + 2 + n] !== 13 || buf[eol + 3 + n] !== 10) return 'bad';
    parts.push(buf.subarray(eol + 2, eol + 2 + n));
    pos = eol + 2 + n + 2;
  }
}

export interface ClientServer {
  readonly server: Server;
  /**
   * Stops listening; `all`: closes every connection, else each after the requests under way on
   * it are answered (those with none at once).
   */
  close(all: boolean): void;
  /**
   * Stops listening (another listener takes the port) and retires every connection: each is
   * closed after its next answer (Conn.retire); those that ask nothing within `graceMs` are
   * closed then. `onDone` once every connection is closed.
   */
  retire(graceMs: number, onDone: () => void): void;
  /** Connections open now. */
  readonly connections: number;
}

export function createClientServer(o: ClientServerOptions): ClientServer {
  const conns = new Set<Conn>();
  const held = o.held ?? new HeldBytes(Number.POSITIVE_INFINITY);
  const server = createServer({ noDelay: true }, (sock) => {
    conns.add(new Conn(sock, o, conns, held));
  });
  if (o.maxConnections !== undefined) {
    server.maxConnections = o.maxConnections;
    server.on('drop', () => o.onDropped?.());
  }
  // Idle connections are closed by one sweep a quarter of idleMs apart (after idleMs to 1.25 ×
  // idleMs of silence), not by a socket timeout each: Node refreshes a socket's timer on every
  // read and every write, which cost the filter more than the sweep does.
  const SWEEPS = 4;
  const sweeper = setInterval(() => {
    for (const c of conns) c.sweep(SWEEPS);
  }, Math.max(1, Math.floor(o.idleMs / SWEEPS)));
  sweeper.unref();
  let retired: (() => void) | null = null;
  const checkRetired = () => {
    if (retired !== null && conns.size === 0) {
      const done = retired;
      retired = null;
      clearInterval(sweeper);
      done();
    }
  };
  return {
    server,
    close(all) {
      if (all) clearInterval(sweeper);
      server.close();
      for (const c of conns) {
        if (all) c.sock.destroy();
        else c.drain();
      }
    },
    retire(graceMs, onDone) {
      server.close();
      retired = onDone;
      for (const c of conns) {
        c.retire();
        c.sock.once('close', checkRetired);
      }
      checkRetired();
      // Past the grace, a connection with nothing under way is closed; one still answering
      // closes after its answer (or, its last answer sent before it was retired, is looked at again).
      const late = () => {
        if (retired === null) return;
        for (const c of conns) if (c.idle) c.sock.destroy();
        if (conns.size > 0) setTimeout(late, Math.max(10, graceMs / 4)).unref();
      };
      setTimeout(late, graceMs).unref();
    },
    get connections() {
      return conns.size;
    },
  };
}
