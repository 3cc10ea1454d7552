// A 422 that names the offending request field: {"error":"unprocessable","message","field"}
// (the class lives with the other errors: the HTTP layer names fields too).
import { FieldError } from '../base/errors.ts';

export { FieldError };

/** Refuses every key of `body` that is not in `known`, naming the first such key. */
export function refuseUnknownFields(body: Record<string, unknown>, known: ReadonlySet<string>): void {
  for (const k of Object.keys(body)) {
    if (known.has(k)) continue;
    const shown = k.length > 100 ? `${k.slice(0, 100)}…` : k;
    throw new FieldError(shown, `Unknown field "${shown}"; accepted fields: ${[...known].join(', ')}.`);
  }
}
