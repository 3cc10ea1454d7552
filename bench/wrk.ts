// Latency with microsecond resolution from Debian's wrk (closed loop), when installed:
// the Node paced client's timers have ~1 ms granularity, too coarse for a 1 ms p99 target.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  connections: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}

function toMs(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : n;
}

/** One wrk run over `paths` (cycled) with `connections` connections on one thread. */
export function wrk(port: number, paths: string[], connections: number, seconds: number): WrkResult {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-wrk-'));
  const script = join(dir, 'paths.lua');
  writeFileSync(
    script,
    `local paths = {${paths.map((p) => JSON.stringify(p)).join(',')}}\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend\n`,
  );
  const r = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, `http://127.0.0.1:${port}`], { encoding: 'utf8' });
  const out = r.stdout ?? '';
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, 'm').exec(out);
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  return { connections, rps, p50Ms: +pct('50').toFixed(3), p99Ms: +pct('99').toFixed(3) };
}

/** The smallest connection count whose throughput reaches `rate` (closed loop, so the load is set by concurrency). */
export function wrkAtRate(port: number, paths: string[], rate: number, seconds: number): WrkResult {
  let best = wrk(port, paths, 1, seconds);
  for (const c of [2, 3, 4, 6, 8, 12, 16]) {
    if (best.rps >= rate) break;
    best = wrk(port, paths, c, seconds);
  }
  return best;
}
