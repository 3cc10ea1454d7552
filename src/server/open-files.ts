// Running out of file descriptors (EMFILE): said once, and again when it is over. The pre-bid
// port's uWebSockets.js accepts in C and says nothing when accept() fails: new connections wait
// in the kernel's backlog (or are refused once it is full) until sockets close, and then are
// served. The node:http ports (account API, reporting, metrics) emit an 'error' for a failed
// accept; without a listener that would end the process. So: the listeners' errors are
// logged here (a burst of them once), and the main thread counts its descriptors every few
// seconds against the process's limit, which sees the pre-bid port's EMFILE too. Main thread
// only, never a lookup thread.
import { readdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { log } from '../base/log.ts';

/** How often the descriptors are counted, and from what share of the limit that is "out of files". */
const CHECK_MS = 5000;
const NEAR = 0.95;
/** Back under this share of the limit: the episode is over (said once too). */
const CLEAR = 0.8;

/** The process's limit on open files (RLIMIT_NOFILE, soft), or null where /proc does not say. */
export function openFilesLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Descriptors open in this process now; Infinity when none is left even to count them; null where /proc does not say. */
export function openFiles(): number | null {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'EMFILE' || code === 'ENFILE' ? Infinity : null;
  }
}

/** One episode of running out at a time: logged when it starts and when it ends. */
class Episode {
  private out = false;
  private errors = 0;

  start(fields: Record<string, unknown>): void {
    if (this.out) {
      this.errors++;
      return;
    }
    this.out = true;
    this.errors = 0;
    log.error(fields, 'out of file descriptors (EMFILE): new connections wait or are refused until some close; raise LimitNOFILE (ulimit -n) or find what holds them (logged once until it is over)');
  }

  end(files: number | null, limit: number | null): void {
    if (!this.out) return;
    this.out = false;
    log.warn({ files, limit, acceptErrors: this.errors }, 'file descriptors available again: new connections are accepted');
  }

  get active(): boolean {
    return this.out;
  }
}

/**
 * Watches the descriptors; take() gives it node:http listeners, whose accept errors it then
 * handles (logged once an episode). stop() ends the watch.
 */
export function watchOpenFiles(): { take(...servers: Server[]): void; stop(): void } {
  const servers: Server[] = [];
  const limit = openFilesLimit();
  const episode = new Episode();
  const onError = (e: NodeJS.ErrnoException) => {
    if (e.code === 'EMFILE' || e.code === 'ENFILE') episode.start({ code: e.code, syscall: e.syscall, files: openFiles(), limit });
    else log.warn({ err: e.message, code: e.code }, 'a listener could not accept a connection');
  };
  const timer =
    limit === null
      ? null
      : setInterval(() => {
          const files = openFiles();
          if (files === null) return;
          if (files >= limit * NEAR) episode.start({ code: 'EMFILE', files: files === Infinity ? limit : files, limit });
          else if (episode.active && files < limit * CLEAR) episode.end(files, limit);
        }, CHECK_MS);
  timer?.unref();
  return {
    take(...more: Server[]) {
      for (const s of more) s.on('error', onError);
      servers.push(...more);
    },
    stop() {
      if (timer !== null) clearInterval(timer);
      for (const s of servers) s.off('error', onError);
    },
  };
}
