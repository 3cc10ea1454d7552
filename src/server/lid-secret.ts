// The lookup-id secret (src/prebid/lid.ts): 16 random bytes in <data-dir>/lid.key, mode
// 0600, made on first start and kept across restarts, so lids answered before a restart are
// still recognised by the beacon after it. A fleet's hosts agree on one through ClickHouse
// and each keeps it here (src/fleet/lid-secret-sync.ts).
// Main thread only; the threads get the bytes in their start message.
import { join } from 'node:path';
import { loadOrCreateKeyFile, replaceKeyFile } from '../base/key-file.ts';
import { LID_SECRET_BYTES } from '../prebid/lid.ts';

export const LID_KEY_FILE = 'lid.key';

/** The key file is unusable; the message says what to do about it. */
export class LidKeyError extends Error {
  override name = 'LidKeyError';
}

export function lidKeyPath(dataDir: string): string {
  return join(dataDir, LID_KEY_FILE);
}

/** Reads the secret, creating it first when absent; throws LidKeyError when the file is unsafe or damaged. */
export function loadOrCreateLidSecret(dataDir: string): Uint8Array {
  return loadOrCreateKeyFile(
    lidKeyPath(dataDir),
    { bytes: LID_SECRET_BYTES, name: 'the lookup-id secret', onDelete: 'impression beacons of lookups answered before are refused' },
    (m) => new LidKeyError(m),
  );
}

/** Keeps the fleet's secret as this host's own (the next start uses it even without ClickHouse). */
export function saveLidSecret(dataDir: string, secret: Uint8Array): void {
  if (secret.length !== LID_SECRET_BYTES) throw new LidKeyError(`a lookup-id secret is ${LID_SECRET_BYTES} bytes, got ${secret.length}`);
  replaceKeyFile(lidKeyPath(dataDir), secret);
}
