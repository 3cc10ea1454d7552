// glibc's malloc gives every thread that allocates its own arena, up to 8 per core, and each
// arena keeps what it freed. ivtd runs a dozen threads that allocate (the main thread, the
// lookup threads, V8's and libuv's pools, DuckDB's), so under a flood of new keys those
// arenas held about 50 MB more than two arenas do (measured with MALLOC_ARENA_MAX=2 set;
// docs/operations.md, "RSS under a flood").
// MALLOC_ARENA_MAX=2 in the environment does it, but only when the operator knows to set it;
// so the process sets the same limit on itself at start, through mallopt(M_ARENA_MAX), before
// the threads that would make arenas exist. glibc reads the limit when it next needs an
// arena, so arenas made before the call stay (a handful at most: see the test).
//
// The call goes through koffi (an FFI library, MIT), embedded and loaded like uWebSockets.js
// and DuckDB (src/runtime/asset-table.ts), by `ivtd serve` only. An operator's
// MALLOC_ARENA_MAX wins (glibc applied it before any of this ran); without glibc (musl) or
// without the addon the process runs as before, and the start-up log says so.
import { loadNative } from './native.ts';

/** Arenas the process allows itself (what the systemd unit set before, and what was measured). */
export const MALLOC_ARENAS = 2;
/** mallopt's parameter number for the arena limit (glibc malloc.h). */
const M_ARENA_MAX = -8;

/** The limit in force and who set it, or why there is none. */
export type ArenaLimit =
  | { by: 'ivtd'; arenas: number }
  | { by: 'environment'; arenas: string }
  | { by: null; why: string };

interface Koffi {
  load(path: string): { func(signature: string): (...args: number[]) => number };
}

/**
 * Limits glibc's malloc arenas to `arenas` unless the environment set MALLOC_ARENA_MAX.
 * Never throws: the limit in force, or why there is none.
 */
export function limitMallocArenas(env: NodeJS.ProcessEnv = process.env, arenas = MALLOC_ARENAS): ArenaLimit {
  const set = env.MALLOC_ARENA_MAX;
  if (set !== undefined && set !== '') return { by: 'environment', arenas: set.slice(0, 20) };
  if (process.platform !== 'linux') return { by: null, why: `no glibc on ${process.platform}` };
  try {
    const koffi = loadNative('koffi') as Koffi;
    const mallopt = koffi.load('libc.so.6').func('int mallopt(int, int)');
    if (mallopt(M_ARENA_MAX, arenas) !== 1) return { by: null, why: 'mallopt(M_ARENA_MAX) refused the limit' };
    return { by: 'ivtd', arenas };
  } catch (e) {
    // musl has no libc.so.6; a cache dir the addon cannot be written to; an exotic CPU.
    return { by: null, why: (e as Error).message.slice(0, 200) };
  }
}

/** What `ivtd serve` did at start (src/cli/commands.ts), for the start-up log. */
export let startupArenaLimit: ArenaLimit = { by: null, why: 'not asked (ivtd was not started by its command)' };

/** At the start of `ivtd serve`, before the threads exist. */
export function limitMallocArenasAtStart(): void {
  startupArenaLimit = limitMallocArenas();
}
