// A secret kept in a file of the data dir: random bytes, mode 0600, created on first start
// and kept across restarts (the access-token signing key, the lookup-id secret). Written to
// a private temporary file and linked into place, so a crash never leaves a short key file
// behind and two starters cannot both write one.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, lstatSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';

/** What the key is, for the messages: its name and what deleting it costs. */
export interface KeyFileSpec {
  bytes: number;
  /** e.g. "the token signing key". */
  name: string;
  /** e.g. "every issued access token stops working". */
  onDelete: string;
}

/** Reads the key, creating it first when absent; throws `makeError(message)` when the file is unsafe or damaged. */
export function loadOrCreateKeyFile(path: string, spec: KeyFileSpec, makeError: (message: string) => Error): Uint8Array {
  if (!exists(path)) create(path, spec.bytes);
  return read(path, spec, makeError);
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

function create(path: string, bytes: number): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, randomBytes(bytes));
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

function read(path: string, spec: KeyFileSpec, makeError: (message: string) => Error): Uint8Array {
  const st = lstatSync(path);
  if (!st.isFile()) throw makeError(`${path} must be a regular file (not a link or a directory); remove it to generate a new key`);
  if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
    throw makeError(`${path} has mode ${mode}; ${spec.name} must be readable by its owner only: chmod 600 ${path}`);
  }
  if (st.size !== spec.bytes) {
    throw makeError(`${path} is ${st.size} bytes, expected ${spec.bytes}; delete it to generate a new key (${spec.onDelete})`);
  }
  const key = readFileSync(path);
  if (key.length !== spec.bytes) throw makeError(`${path} changed while being read; start again`);
  return new Uint8Array(key);
}

/** Replaces the key file's bytes (another host's key, for one fleet): written aside, mode 0600, renamed into place. */
export function replaceKeyFile(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.${process.pid}.new`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
