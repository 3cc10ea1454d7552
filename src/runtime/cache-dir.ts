// A private per-user folder where the single executable writes out what must exist as a
// real file (native addons for dlopen). Only a folder we own with mode 0700 is used, so
// no other user can swap a library in before we load it.
import { chmodSync, closeSync, fsyncSync, lstatSync, mkdirSync, openSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { threadId } from 'node:worker_threads';

export class CacheDirError extends Error {
  override name = 'CacheDirError';
}

function uid(): number {
  return process.getuid?.() ?? -1;
}

/** Candidate folders in order: $CACHE_DIRECTORY, $XDG_CACHE_HOME/ivtd, ~/.cache/ivtd, <tmpdir>/ivtd-<uid>. */
export function cacheDirCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  // systemd's CacheDirectory=ivtd: already ivtd's own folder. Under DynamicUser it is a
  // symlink (made by systemd) into /var/cache/private/, so the real folder is checked.
  const unitCache = env.CACHE_DIRECTORY?.split(':')[0];
  if (unitCache && isAbsolute(unitCache)) out.push(realOrSame(unitCache));
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) out.push(join(xdg, 'ivtd'));
  try {
    const home = homedir(); // from $HOME, else the passwd entry (works with an empty environment)
    if (home && isAbsolute(home)) out.push(join(home, '.cache', 'ivtd'));
  } catch {
    // no home directory for this uid
  }
  out.push(join(tmpdir(), `ivtd-${uid()}`));
  return out;
}

function realOrSame(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Why `dir` cannot be our private folder, or null when it can (creating it, tightening our own folder to 0700). */
export function claimPrivateDir(dir: string): string | null {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory()) return 'not a directory';
    if (uid() >= 0 && st.uid !== uid()) return `owned by uid ${st.uid}`;
    if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

let chosen: string | undefined;

/** The first usable candidate; throws listing why each was refused. */
export function privateCacheDir(): string {
  if (chosen !== undefined) return chosen;
  const refused: string[] = [];
  for (const dir of cacheDirCandidates()) {
    const why = claimPrivateDir(dir);
    if (why === null) {
      chosen = dir;
      return dir;
    }
    refused.push(`${dir}: ${why}`);
  }
  throw new CacheDirError(`no private cache folder usable (${refused.join('; ')})`);
}

export interface CachedFile {
  name: string;
  size: number;
  /** Called only when the file must be (re)written. */
  bytes: () => Uint8Array;
}

/**
 * Makes `<cache>/<folder>/<name>` hold each file and returns the folder. `folder` carries a
 * content hash, so a file already there with the right size is the right file; writes go
 * through a temporary name and rename, so a reader never sees a half-written file.
 */
export function materialize(folder: string, files: readonly CachedFile[], base: string = privateCacheDir()): string {
  const dir = join(base, folder);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const f of files) {
    const path = join(dir, f.name);
    if (sizeOf(path) === f.size) continue;
    const tmp = `${path}.${process.pid}-${threadId}.tmp`;
    const fd = openSync(tmp, 'w', 0o700);
    try {
      const bytes = f.bytes();
      for (let off = 0; off < bytes.byteLength; ) off += writeSync(fd, bytes, off);
      fsyncSync(fd);
    } catch (e) {
      closeSync(fd);
      unlinkSync(tmp);
      throw e;
    }
    closeSync(fd);
    renameSync(tmp, path);
  }
  return dir;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return -1;
  }
}
