// A 422 that names the offending request field: {"error":"unprocessable","message","field"}.
import { HttpError, type ErrorBody } from '../errors.ts';

export class FieldError extends HttpError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('unprocessable', message);
  }
  override body(): ErrorBody & { field: string } {
    return { ...super.body(), field: this.field };
  }
}

/** Refuses every key of `body` that is not in `known`, naming the first such key. */
export function refuseUnknownFields(body: Record<string, unknown>, known: ReadonlySet<string>): void {
  for (const k of Object.keys(body)) {
    if (known.has(k)) continue;
    const shown = k.length > 100 ? `${k.slice(0, 100)}…` : k;
    throw new FieldError(shown, `Unknown field "${shown}"; accepted fields: ${[...known].join(', ')}.`);
  }
}
