// The body of an OpenRTB lookup as bytes: which media types and encodings are taken, the
// size limits, and bytes → text (bounded gunzip, strict UTF-8). Shared by the lookup
// threads and the account port's explain. All synchronous: zlib's sync inflate is CPU
// work on at most ORTB_MAX_BODY_BYTES in and ORTB_MAX_JSON_BYTES out, never I/O.
import { isUtf8 } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import type { ErrorAnswer } from '../../base/errors.ts';
import { isJsonObject, parseBoundedJson, type JsonLimits, type JsonObject } from '../../base/bounded-json.ts';
import { BID_REQUEST_SHAPE } from './map.ts';
import { parsePruned } from './pruned-json.ts';
import { compileShape, prune, type Fields } from '../../base/shape.ts';

/** Nesting, array and object bounds for a BidRequest body (Prebid `ext` trees are the deepest). */
export const ORTB_JSON_LIMITS: JsonLimits = { maxDepth: 32, maxArrayLength: 1000, maxObjectKeys: 256 };

/** What the mapping reads of a BidRequest, as the fast parse reads it. */
const BID_REQUEST = compileShape(BID_REQUEST_SHAPE);

/** Largest body accepted as sent (gzip or not); 413 past it. Bid requests are 1–10 KB. */
export const ORTB_MAX_BODY_BYTES = 64 * 1024;
/** Largest JSON text accepted once a gzip body is inflated; 413 past it (no gzip bombs). */
export const ORTB_MAX_JSON_BYTES = 64 * 1024;

export const ORTB_MEDIA_TYPE = 'application/json';

/**
 * Checks the Content-Type and Content-Encoding headers (as sent, '' when absent): null
 * with `gzip` set when the body is one this endpoint reads, else the 415 to answer.
 */
export function checkBodyHeaders(contentType: string, contentEncoding: string, out: { gzip: boolean }): ErrorAnswer | null {
  if (contentType === ORTB_MEDIA_TYPE && contentEncoding === '') {
    out.gzip = false; // (what nearly every client sends: nothing to read further)
    return null;
  }
  const semi = contentType.indexOf(';');
  const media = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (media !== ORTB_MEDIA_TYPE) {
    return unsupported(`The body must be the BidRequest as JSON with Content-Type: ${ORTB_MEDIA_TYPE}${media ? ` (got ${clip(media)})` : ''}.`);
  }
  if (semi !== -1) {
    const charset = /(?:^|;)\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType.slice(semi))?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return unsupported(`The body must be UTF-8 JSON (got charset=${clip(charset)}).`);
    }
  }
  const enc = contentEncoding.trim().toLowerCase();
  if (enc === '' || enc === 'identity') out.gzip = false;
  else if (enc === 'gzip' || enc === 'x-gzip') out.gzip = true;
  else return unsupported(`Content-Encoding ${clip(enc)} is not supported: send the body as is or with Content-Encoding: gzip.`);
  return null;
}

/** 413 for a body over ORTB_MAX_BODY_BYTES (`bytes` null while its size is not known yet). */
export function tooLarge(bytes: number | null): ErrorAnswer {
  const size = bytes === null ? 'over' : `${bytes} bytes, over`;
  return { status: 413, code: 'payload_too_large', message: `The request body is ${size} the limit of ${ORTB_MAX_BODY_BYTES} bytes. Send one BidRequest per lookup.` };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body's bytes (inflated if gzip), not empty and within ORTB_MAX_JSON_BYTES; or the error to answer. */
function bodyBytes(body: Uint8Array, gzip: boolean): Uint8Array | ErrorAnswer {
  let bytes = body;
  if (gzip) {
    try {
      bytes = gunzipSync(body, { maxOutputLength: ORTB_MAX_JSON_BYTES });
    } catch (e) {
      if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
        return { status: 413, code: 'payload_too_large', message: `The gzip body inflates to more than ${ORTB_MAX_JSON_BYTES} bytes, the limit for the JSON text.` };
      }
      return { status: 400, code: 'bad_encoding', message: 'The body is not valid gzip although Content-Encoding says gzip.' };
    }
  }
  if (bytes.byteLength === 0) return { status: 400, code: 'invalid_request', message: 'The request body is empty: send the BidRequest as JSON.' };
  if (bytes.byteLength > ORTB_MAX_JSON_BYTES) return tooLarge(bytes.byteLength);
  return bytes;
}

function unsupported(message: string): ErrorAnswer {
  return { status: 415, code: 'unsupported_media_type', message };
}

function clip(s: string): string {
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}

/** A BidRequest built whole (by JSON.parse, or a test's literal) as the mapping reads it. */
export function bidRequestOf(value: JsonObject): Fields {
  return prune(value, BID_REQUEST) as Fields;
}

/** The body (at most ORTB_MAX_BODY_BYTES, as sent) as one parsed BidRequest, read by the mapping's shape, or the error to answer. */
export function bidRequestFrom(body: Uint8Array, gzip: boolean): { ok: true; bid: Fields } | { ok: false; error: ErrorAnswer } {
  const bytes = bodyBytes(body, gzip);
  if (!(bytes instanceof Uint8Array)) return { ok: false, error: bytes };
  // The fast path builds only what the mapping reads (and checks the text is UTF-8 when it is
  // not all ASCII); whatever it leaves, the reference reads, and says what is wrong.
  const pruned = parsePruned(bytes, ORTB_JSON_LIMITS, BID_REQUEST);
  if (pruned !== null) return { ok: true, bid: pruned };
  if (!isUtf8(bytes)) return { ok: false, error: { status: 400, code: 'bad_encoding', message: 'The body is not valid UTF-8.' } };
  const parsed = parseBoundedJson(utf8.decode(bytes), ORTB_JSON_LIMITS);
  if (!parsed.ok) return { ok: false, error: { status: 400, code: 'invalid_request', message: `The body is not an acceptable BidRequest JSON: ${parsed.message}.` } };
  if (!isJsonObject(parsed.value)) return { ok: false, error: { status: 400, code: 'invalid_request', message: 'The body must be one BidRequest JSON object.' } };
  return { ok: true, bid: bidRequestOf(parsed.value) };
}
