// Keeping a request's value past the request without keeping the request.

/**
 * A string that shares no memory with `s`. V8 keeps a whole request string alive behind
 * any slice of 13+ characters; values kept past the request are copied first.
 */
export function ownString(s: string): string {
  return s.length < 13 ? s : (' ' + s).slice(1);
}
