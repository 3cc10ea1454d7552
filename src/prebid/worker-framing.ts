// A lookup thread's HTTP framing: how its answers are written (reply, refuse, HEAD), the
// size limit of a request's line and headers (spec 4.4 rule 1, every route's first step),
// where an OpenRTB body ends and how its chunks are put together, and the end-of-turn batch
// the OpenRTB answers are written in. Module-level functions and state (one worker a
// thread): nothing here is allocated per request.
import type uWS from 'uWebSockets.js';
import { errorJson, STATUS_TEXT, type ErrorAnswer } from '../base/errors.ts';
import { ORTB_MAX_BODY_BYTES, tooLarge } from './ortb/body.ts';
import { draining } from './worker-state.ts';
import { record, unsent } from './worker-stats.ts';

/**
 * Bytes of an oversized OpenRTB body read and dropped before its 413 and the close: a 413
 * answered and closed while the client still sends resets the connection, and a client that
 * reads once its body is sent never sees it (a lingering close, RFC 9112 9.6).
 */
export const ORTB_DISCARD_BYTES = 4 * 1024 * 1024;

/** Spec 4.4 rule 1 / section 8: request line plus headers at most 8 KB. */
export const MAX_REQUEST_BYTES = 8192;

/** Longest an OpenRTB answer is held for the turn's other answers (ms; see hold()). */
const HOLD_MS = 1;

/** An OpenRTB answer waiting for the end of the event loop's turn (`gone`: its client left). */
export interface HeldAnswer {
  res: uWS.HttpResponse;
  status: number;
  body: string;
  gone: boolean;
}

const JSON_TYPE = 'application/json';
// The header every answer with a body sends, as bytes: the binding takes bytes as they are,
// and copies a string through UTF-8 (measuring it first) each time.
const CONTENT_TYPE_BYTES = Buffer.from('Content-Type');
const JSON_TYPE_BYTES = Buffer.from(JSON_TYPE);

const TWO_LENGTHS: ErrorAnswer = { status: 400, code: 'invalid_request', message: 'The request has more than one Content-Length header: send one.' };
const NO_LENGTH: ErrorAnswer = { status: 411, code: 'length_required', message: 'The request has no Content-Length (nor Transfer-Encoding) header, so no body: send the BidRequest as JSON with its Content-Length.' };

function codingNotImplemented(te: string): ErrorAnswer {
  return { status: 501, code: 'not_implemented', message: `Transfer-Encoding ${JSON.stringify(te.length > 60 ? te.slice(0, 60) + '…' : te)} is not supported: send the body with its Content-Length, or chunked alone (gzip goes in Content-Encoding).` };
}

/**
 * Ends a HEAD answer: the length its body would have, and no body. (This build of
 * uWebSockets.js aborts the process when endWithoutBody is given a length or a close flag:
 * "Returning from a request handler without responding"; only the bare call is safe.) To
 * close the connection, an empty end() instead (Content-Length 0, no body all the same).
 */
function endHead(res: uWS.HttpResponse, bodyBytes: number, close: boolean): void {
  if (close) res.end(undefined, true);
  else res.writeHeader('Content-Length', String(bodyBytes)).endWithoutBody();
}

/**
 * Ends an answer with its body: at once when its connection is closing anyway, else with
 * tryEnd(), which writes nothing behind a socket that has bytes waiting already, and then
 * holds the answer (holdUnsent()) instead of adding it to them: a client that pipelines and
 * never reads costs one answer and the kernel's buffers, not memory without bound, for uWS
 * closes a connection whose next request comes while an answer is held (docs/reliability.md).
 */
export function endWith(res: uWS.HttpResponse, body: string | Buffer, close: boolean): void {
  if (close || draining) res.end(body, true);
  else if ((++answersEnded & CHECK_EVERY_MASK) !== 0) res.end(body);
  else if (!res.tryEnd(body, typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength)[0]) holdUnsent(res, body);
}

// tryEnd() costs about 0.5 µs more than end() (the binding's result array, the body's UTF-8
// length): 2 % of a lookup. One answer in four takes it, the others end() as before; a
// connection that never reads is then caught within a few answers (the chance that it gets
// k more unchecked is 0.75^k), which keeps its memory bounded all the same.
const CHECK_EVERY_MASK = 3;
let answersEnded = 0;

/** An answer its socket could not take yet: written from onWritable as it drains (see `unsent`). */
function holdUnsent(res: uWS.HttpResponse, body: string | Buffer): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  unsent.held++;
  unsent.total++;
  res.onAborted(() => {
    unsent.held--;
  });
  res.onWritable((offset) => {
    const [ok, done] = res.tryEnd(bytes.subarray(offset), bytes.byteLength);
    if (done) unsent.held--;
    return ok;
  });
}

// While draining, every response closes its connection so the thread can exit once
// idle keep-alive sockets time out (terminating a thread that holds uWS sockets aborts).
// `close`: also close this connection (a body left unread).
/** Answers from within a route handler, where uWS has the socket corked already. */
export function reply(res: uWS.HttpResponse, status: number, body: string | null, close = false): void {
  if (status !== 200) res.writeStatus(STATUS_TEXT[status] ?? String(status)); // (uWS writes 200 OK by itself)
  if (body === null) res.end(undefined, draining || close);
  else endWith(res.writeHeader(CONTENT_TYPE_BYTES, JSON_TYPE_BYTES), body, close);
}

/** Answers from a callback after the handler returned (a body's data): corked here. */
export function replyLater(res: uWS.HttpResponse, status: number, body: string | null, close = false): void {
  res.cork(() => reply(res, status, body, close));
}

/**
 * Every "no" of this port: the one error body. `method` (as uWS gives it, lowercase) is
 * passed by the routes that take any method: a HEAD gets the headers without the body (RFC
 * 9110 9.3.2; uWS does not know HEAD). `allow`: a 405's methods (RFC 9110 15.5.6).
 */
export function refuse(res: uWS.HttpResponse, e: ErrorAnswer, close = false, method = '', allow = ''): void {
  const body = errorJson(e);
  res.writeStatus(STATUS_TEXT[e.status] ?? String(e.status));
  if (allow !== '') res.writeHeader('Allow', allow);
  res.writeHeader(CONTENT_TYPE_BYTES, JSON_TYPE_BYTES);
  if (method !== 'head') endWith(res, body, close);
  else endHead(res, Buffer.byteLength(body), draining || close);
}

// The header lines' bytes of the request being checked ("name: value\r\n" each), summed by
// one callback made once per thread (not a closure per request), and its Content-Length
// lines counted on the way, the first one's value kept (uWS reads the first; a second is
// refused: RFC 9112 6.3).
let headerBytes = 0;
/** How many Content-Length lines the request being handled has (read by its route after oversized()). */
export let contentLengths = 0;
/** The first Content-Length line's value of the request being handled ('' without one). */
export let contentLength = '';
function addHeader(k: string, v: string): void {
  headerBytes += k.length + v.length + 4;
  if (k === 'content-length' && contentLengths++ === 0) contentLength = v;
}

/**
 * Spec 4.4 rule 1, on every path before anything else: the request line plus headers,
 * counted as sent ("GET /path?query HTTP/1.1\r\n", each header "name: value\r\n", then
 * "\r\n"), at most MAX_REQUEST_BYTES; past it the 413 is answered (and counted) here.
 * `method`: the request's, lowercase (the GET and POST routes know it without asking uWS).
 */
export function oversized(res: uWS.HttpResponse, req: uWS.HttpRequest, query: string, t0: number, method: string): boolean {
  headerBytes = 0;
  contentLengths = 0;
  contentLength = '';
  req.forEach(addHeader);
  const size = method.length + 1 + req.getUrl().length + (query.length > 0 ? 1 + query.length : 0) + 11 + 2 + headerBytes;
  if (size <= MAX_REQUEST_BYTES) return false;
  // (`method`: a HEAD's 413 has no body; one sent anyway would be read as the next answer.)
  refuse(res, { status: 413, code: 'payload_too_large', message: `Request is ${size} bytes; the limit for request line plus headers is ${MAX_REQUEST_BYTES}.` }, false, method);
  record(413, t0);
  return true;
}

/**
 * Where an OpenRTB body ends must be certain, or its bytes would be read as the next
 * request: two Content-Lengths, or neither it nor Transfer-Encoding (then there is no body),
 * are refused, and so is a declared length past ORTB_DISCARD_BYTES; null when the body may
 * be read. (Every such refusal closes the connection.) Reads the header scan of oversized(),
 * which every route runs first.
 */
export function bodyFramingError(req: uWS.HttpRequest): ErrorAnswer | null {
  const declared = Number(contentLength || '0');
  if (contentLengths > 1) return TWO_LENGTHS;
  if (contentLengths === 0) {
    const te = req.getHeader('transfer-encoding');
    if (te === '') return NO_LENGTH;
    // uWS reads every body with a Transfer-Encoding as chunked: another coding (gzip, chunked) would be misread.
    if (te.trim().toLowerCase() !== 'chunked') return codingNotImplemented(te);
  }
  // Past the body limit but within ORTB_DISCARD_BYTES the body is read and dropped before
  // its 413 (ortbRequest); past that bound it is refused at once.
  if (declared > ORTB_DISCARD_BYTES) return tooLarge(declared);
  return null;
}

/** The request's declared Content-Length (0 without one), from the header scan of oversized(). */
export function declaredLength(): number {
  return Number(contentLength || '0');
}

// uWS reuses a chunk's memory after its onData callback: a body in several chunks is
// copied; one that comes whole (the usual case) is read in place, within the callback.
/** A copy of a body's chunk that is not its last. */
export function keepChunk(chunks: Buffer[], chunk: ArrayBuffer): void {
  chunks.push(Buffer.from(new Uint8Array(chunk)));
}

/** The whole body, `last` its last chunk (`size` bytes in all): in place when it came in one. */
export function wholeBody(chunks: Buffer[], last: ArrayBuffer, size: number): Uint8Array {
  if (chunks.length === 0) return new Uint8Array(last);
  chunks.push(Buffer.from(new Uint8Array(last)));
  return Buffer.concat(chunks, size);
}

// The OpenRTB answers found in one turn of the event loop are written together once its
// sockets have all been read (setImmediate: after the poll phase), as Redis writes its
// replies before it sleeps: on loopback each send can wake the client's thread, and sends
// spread one lookup apart find it asleep again each time; sent back to back, all but the
// first find it awake. At a low rate a turn holds one answer, written a few µs later; a
// turn holds answers for at most HOLD_MS from its first, then answers at once. Only the
// POST answers: a client must not pipeline behind a POST (RFC 9112 9.3.2), and uWS closes
// a connection whose next request comes while its answer is held; GETs, which clients may
// pipeline, are answered at once.
let heldAnswers: HeldAnswer[] = [];
let writtenAnswers: HeldAnswer[] = [];
let heldSince = 0;

/** Holds `h` to the turn's end (true), or false when this turn has held for HOLD_MS already: answer it now. */
export function hold(h: HeldAnswer, now: number): boolean {
  if (heldAnswers.length === 0) {
    setImmediate(writeHeld);
    heldSince = now;
  } else if (now - heldSince > HOLD_MS) return false;
  heldAnswers.push(h);
  return true;
}

function writeHeld(): void {
  const list = heldAnswers;
  heldAnswers = writtenAnswers;
  writtenAnswers = list;
  for (let i = 0; i < list.length; i++) {
    const h = list[i]!;
    if (!h.gone) replyLater(h.res, h.status, h.body);
  }
  list.length = 0;
}
