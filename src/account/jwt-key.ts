// The HS256 signing key of access tokens: 32 random bytes in <data-dir>/jwt.key, mode 0600,
// created on first start. Kept across restarts so issued tokens survive them; deleting the
// file invalidates every access token at the next start.
import { join } from 'node:path';
import { loadOrCreateKeyFile } from '../base/key-file.ts';

export const JWT_KEY_FILE = 'jwt.key';
export const JWT_KEY_BYTES = 32;

/** The key file is unusable; the message says what to do about it. */
export class JwtKeyError extends Error {
  override name = 'JwtKeyError';
}

export function jwtKeyPath(dataDir: string): string {
  return join(dataDir, JWT_KEY_FILE);
}

/** Reads the key, creating it first when absent; throws JwtKeyError when the file is unsafe or damaged. */
export function loadOrCreateJwtKey(dataDir: string): Uint8Array {
  return loadOrCreateKeyFile(
    jwtKeyPath(dataDir),
    { bytes: JWT_KEY_BYTES, name: 'the token signing key', onDelete: 'every issued access token stops working' },
    (m) => new JwtKeyError(m),
  );
}
