// File handling for refreshed data: atomic replacement (write a temp file in the same
// directory, fsync, rename), small JSON state files, and a lock so that `ivtd data update`
// and a serving process never refresh the same data dir at once.
import { chownSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The owner files and folders written here get (root writing into another user's data dir), or null. */
let owner: { uid: number; gid: number; root: string } | null = null;

/**
 * When this process runs as root and `dataDir` belongs to another user (the service's), what
 * is written under it from now on is given to that user, as the service would have written
 * it: a `sudo ivtd data update` must not leave root-owned folders that the service's own
 * refreshes then cannot write into.
 */
export function keepOwnerOf(dataDir: string): void {
  owner = null;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return;
  try {
    const st = statSync(dataDir);
    if (st.uid !== 0) owner = { uid: st.uid, gid: st.gid, root: resolve(dataDir) };
  } catch {
    // No data dir yet: whoever creates it owns it.
  }
}

function give(path: string): void {
  if (owner && resolve(path).startsWith(owner.root)) chownSync(path, owner.uid, owner.gid);
}

/** mkdir -p, each folder it creates given to the data dir's owner (keepOwnerOf). */
export function makeDirs(dir: string): void {
  const first = mkdirSync(dir, { recursive: true });
  if (first === undefined || owner === null) return;
  for (let d = resolve(dir); ; d = dirname(d)) {
    give(d);
    if (d === resolve(first) || d === dirname(d)) break;
  }
}

/** Replaces `path` with `data` so a reader sees the old or the new file, never half of one. */
export function writeAtomic(path: string, data: string | Uint8Array): void {
  makeDirs(dirname(path));
  const tmp = join(dirname(path), `.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  const fd = openSync(tmp, 'w', 0o644);
  try {
    give(tmp);
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.byteLength) off += writeSync(fd, buf, off, buf.byteLength - off);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Modification time of a file in ms, or 0 when it does not exist. */
export function mtimeOf(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** Parsed JSON of a state file, or `fallback` when it is missing or unreadable. */
export function readJson<T>(path: string, fallback: T): T {
  try {
    const v: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return v !== null && typeof v === 'object' ? (v as T) : fallback;
  } catch {
    return fallback;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class LockBusyError extends Error {
  constructor(readonly pid: number) {
    super(`a data refresh is already running in process ${pid}; try again when it has finished`);
    this.name = 'LockBusyError';
  }
}

/** Takes `path` as a lock file holding our pid; a lock left by a dead process is taken over. */
export function acquireLock(path: string): () => void {
  makeDirs(dirname(path));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let held = true;
      return () => {
        if (held) rmSync(path, { force: true });
        held = false;
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let pid = NaN;
      try {
        pid = Number(readFileSync(path, 'utf8').trim());
      } catch {
        /* vanished meanwhile: retry */
      }
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) throw new LockBusyError(pid);
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`cannot take the lock ${path}`);
}
