// Debian's wrk as the load client (C, epoll, latencies in microseconds): a closed loop of
// `connections` keep-alive sockets, requests built by a Lua script. Used by the lookup
// and flood benchmarks when installed (`apt-get install wrk`).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  connections: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Responses with a status outside 2xx/3xx. */
  non2xx: number;
  /** Socket errors: connect, read, write, timeout. */
  errors: number;
  /** Whatever the script wrote to stdout (lines it printed from init/done). */
  scriptOutput: string[];
}

export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}

function toMs(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n;
}

/** Parses wrk's report (--latency form). */
export function parseWrk(out: string, connections: number): WrkResult {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)$`, 'm').exec(out);
    return m ? +toMs(m[1]!, m[2]!).toFixed(3) : NaN;
  };
  const max = /^\s+Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s|m)/m.exec(out);
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    connections,
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50Ms: pct('50'),
    p90Ms: pct('90'),
    p99Ms: pct('99'),
    maxMs: max ? +toMs(max[1]!, max[2]!).toFixed(3) : NaN,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    scriptOutput: out.split('\n').filter((l) => l.startsWith('@')),
  };
}

export interface WrkRun {
  port: number;
  /** Lua source: the request generator (and optionally init/done). */
  script: string;
  connections: number;
  seconds: number;
  threads?: number;
  /** Arguments after `--`, given to the script's init(args). */
  scriptArgs?: string[];
}

function wrkArgs(run: WrkRun, scriptPath: string): string[] {
  return [
    `-t${run.threads ?? 1}`, `-c${run.connections}`, `-d${run.seconds}s`, '--timeout', '10s', '--latency',
    '-s', scriptPath, `http://127.0.0.1:${run.port}`, ...(run.scriptArgs?.length ? ['--', ...run.scriptArgs] : []),
  ];
}

function withScript<T>(script: string, fn: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-wrk-'));
  const path = join(dir, 'script.lua');
  writeFileSync(path, script);
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const r = fn(path);
    if (r instanceof Promise) return r.finally(cleanup) as T;
    cleanup();
    return r;
  } catch (e) {
    cleanup();
    throw e;
  }
}

/** One wrk run, synchronous (blocks this process's event loop while it runs). */
export function wrkSync(run: WrkRun): WrkResult {
  return withScript(run.script, (path) => {
    const r = spawnSync('wrk', wrkArgs(run, path), { encoding: 'utf8', maxBuffer: 64 << 20 });
    if (r.status !== 0) throw new Error(`wrk failed (${r.status}): ${r.stderr || r.stdout}`);
    return parseWrk(r.stdout, run.connections);
  });
}

/**
 * One wrk run in the background: this process's event loop stays free (e.g. to sample
 * RSS). Aborting `signal` stops wrk early with SIGINT, after which it still prints its report.
 */
export function wrkAsync(run: WrkRun, signal?: AbortSignal): Promise<WrkResult> {
  return withScript(run.script, (path) =>
    new Promise<WrkResult>((resolve, reject) => {
      const child = spawn('wrk', wrkArgs(run, path), { stdio: ['ignore', 'pipe', 'pipe'] });
      const stop = () => child.kill('SIGINT');
      signal?.addEventListener('abort', stop, { once: true });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', reject);
      child.on('exit', (code) => {
        signal?.removeEventListener('abort', stop);
        if (code === 0 || (signal?.aborted && out.includes('Requests/sec'))) resolve(parseWrk(out, run.connections));
        else reject(new Error(`wrk failed (${code}): ${err || out}`));
      });
    }),
  );
}

/** Lua string literal (wrk's LuaJIT reads the file as bytes). */
export const luaString = (s: string) => JSON.stringify(s);

/**
 * A script cycling through fixed request paths. Each request's text is made once and kept
 * (wrk.format per request costs the client as much as a small lookup costs ivtd).
 */
export function pathsScript(paths: string[]): string {
  return `local paths = {${paths.map(luaString).join(',\n')}}\nlocal made = {}\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  local r = made[i]\n  if not r then r = wrk.format("GET", paths[i]); made[i] = r end\n  return r\nend\n`;
}

/** A script cycling through fixed POST requests with JSON bodies (the OpenRTB lookup), each made once and kept. */
export function bodiesScript(requests: ReadonlyArray<{ path: string; body: string }>): string {
  const list = requests.map((r) => `{${luaString(r.path)},${luaString(r.body)}}`).join(',\n');
  return (
    `local reqs = {${list}}\nlocal headers = {["Content-Type"] = "application/json"}\nlocal made = {}\nlocal i = 0\n` +
    `request = function()\n  i = i % #reqs + 1\n  local r = made[i]\n  if not r then r = wrk.format("POST", reqs[i][1], headers, reqs[i][2]); made[i] = r end\n  return r\nend\n`
  );
}

/**
 * Lua that paces each connection: after a response, wait `delayMs` (jittered ±10 % so
 * connections do not march in step) before the next request. wrk's timers have 1 ms
 * granularity, so the rate is approximate (≈ connections / (delay + latency)); latency is
 * still measured in µs from the write of each request.
 */
export function pacingLua(delayMs: number): string {
  return `local pace_ms = ${delayMs}\ndelay = function()\n  return math.floor(pace_ms * (0.9 + 0.2 * math.random()) + 0.5)\nend\n`;
}

/** One wrk run over `paths` (cycled) with `connections` connections on one thread (closed loop, unpaced). */
export function wrk(port: number, paths: string[], connections: number, seconds: number): WrkResult {
  return wrkSync({ port, script: pathsScript(paths), connections, seconds });
}
