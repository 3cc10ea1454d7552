// The HS256 signing key of access tokens: 32 random bytes in <data-dir>/jwt.key, mode 0600,
// created on first start. Kept across restarts so issued tokens survive them; deleting the
// file invalidates every access token at the next start.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, lstatSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

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
  const path = jwtKeyPath(dataDir);
  if (!exists(path)) create(path);
  return read(path);
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

// Written to a private temporary file and linked into place, so a crash never leaves a
// short key file behind and two starters cannot both write one.
function create(path: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, randomBytes(JWT_KEY_BYTES));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    unlinkSync(tmp);
  }
}

function read(path: string): Uint8Array {
  const st = lstatSync(path);
  if (!st.isFile()) throw new JwtKeyError(`${path} must be a regular file (not a link or a directory); remove it to generate a new key`);
  if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
    throw new JwtKeyError(`${path} has mode ${mode}; the token signing key must be readable by its owner only: chmod 600 ${path}`);
  }
  if (st.size !== JWT_KEY_BYTES) {
    throw new JwtKeyError(
      `${path} is ${st.size} bytes, expected ${JWT_KEY_BYTES}; delete it to generate a new key (every issued access token stops working)`,
    );
  }
  const key = readFileSync(path);
  if (key.length !== JWT_KEY_BYTES) throw new JwtKeyError(`${path} changed while being read; start again`);
  return new Uint8Array(key);
}
