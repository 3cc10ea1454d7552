// The expected failures of provisioning operations (CLI, control socket, dashboard): a
// code the callers map to an exit status or an HTTP status, and a message for a person.

export type StoreErrorCode = 'not_found' | 'conflict' | 'invalid';
export const STORE_ERROR_CODES: readonly StoreErrorCode[] = ['not_found', 'conflict', 'invalid'];

/** An expected failure of a provisioning operation, with a message fit to show a person. */
export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}
